package model

import (
	"bytes"
	"fmt"
	"testing"
)

// iterations sizes the randomized tests: each iteration is a few
// microseconds, so even the full count stays well within the time budget.
func iterations() int {
	if testing.Short() {
		return 1000
	}
	return 4000
}

func mustMerge(t testing.TB, a, b []byte) []byte {
	t.Helper()
	out, err := Merge(nil, a, b)
	if err != nil {
		t.Fatalf("Merge(%x, %x): %v", a, b, err)
	}
	return out
}

// checkAlgebra checks that Merge is commutative, associative and idempotent
// on the encoded values a, b and c.
func checkAlgebra(t *testing.T, a, b, c []byte) {
	t.Helper()
	for _, v := range [][]byte{a, b, c} {
		if got := mustMerge(t, v, v); !bytes.Equal(got, v) {
			t.Fatalf("Merge(v, v) = %x, want v = %x", got, v)
		}
	}
	ab, ba := mustMerge(t, a, b), mustMerge(t, b, a)
	if !bytes.Equal(ab, ba) {
		t.Fatalf("not commutative:\na=%x\nb=%x\nab=%x\nba=%x", a, b, ab, ba)
	}
	left := mustMerge(t, ab, c)
	right := mustMerge(t, a, mustMerge(t, b, c))
	if !bytes.Equal(left, right) {
		t.Fatalf("not associative:\na=%x\nb=%x\nc=%x\n(ab)c=%x\na(bc)=%x", a, b, c, left, right)
	}
	if got := mustMerge(t, left, b); !bytes.Equal(got, left) {
		t.Fatalf("merging an input again changed the result:\n%x\n%x", left, got)
	}
}

func TestMergeRowsAlgebra(t *testing.T) {
	g := newGen(1)
	for range iterations() {
		a, b, c := g.row(), g.row(), g.row()
		checkAlgebra(t, AppendRow(nil, &a), AppendRow(nil, &b), AppendRow(nil, &c))
	}
}

func TestMergeHeadersAlgebra(t *testing.T) {
	g := newGen(2)
	for range iterations() {
		a, b, c := g.header(), g.header(), g.header()
		checkAlgebra(t, AppendHeader(nil, &a), AppendHeader(nil, &b), AppendHeader(nil, &c))
	}
}

// TestNormalizeAgreesWithMerge checks that encoding a row holding several
// versions of its parts gives the merge of the versions encoded apart.
func TestNormalizeAgreesWithMerge(t *testing.T) {
	g := newGen(3)
	for range iterations() {
		rows := []Row{g.row(), g.row(), g.row()}
		var all Row
		merged := AppendRow(nil, &Row{})
		for _, r := range rows {
			merged = mustMerge(t, merged, AppendRow(nil, &r))
			if compareLiveness(r.Liveness, all.Liveness) > 0 {
				all.Liveness = r.Liveness
			}
			all.Deletion = maxDeletion(all.Deletion, r.Deletion)
			all.ColumnDeletions = append(all.ColumnDeletions, r.ColumnDeletions...)
			all.Cells = append(all.Cells, r.Cells...)
		}
		if got := AppendRow(nil, &all); !bytes.Equal(got, merged) {
			t.Fatalf("AppendRow of the union = %x, merge = %x", got, merged)
		}
	}
	for range iterations() {
		hs := []Header{g.header(), g.header(), g.header()}
		var all Header
		merged := AppendHeader(nil, &Header{})
		for _, h := range hs {
			merged = mustMerge(t, merged, AppendHeader(nil, &h))
			all.Deletion = maxDeletion(all.Deletion, h.Deletion)
			all.Static.Deletion = maxDeletion(all.Static.Deletion, h.Static.Deletion)
			all.Static.ColumnDeletions = append(all.Static.ColumnDeletions, h.Static.ColumnDeletions...)
			all.Static.Cells = append(all.Static.Cells, h.Static.Cells...)
			all.RangeTombstones = append(all.RangeTombstones, h.RangeTombstones...)
		}
		if got := AppendHeader(nil, &all); !bytes.Equal(got, merged) {
			t.Fatalf("AppendHeader of the union = %x, merge = %x", got, merged)
		}
	}
}

// TestMergeMatchesOracle checks the meaning of merges, not just their
// algebra: the live view of merged values equals one computed directly from
// the definitions over all the versions written.
func TestMergeMatchesOracle(t *testing.T) {
	g := newGen(4)
	probes := [][]byte{nil, []byte("a"), []byte("aa"), []byte("ab"), []byte("b"), []byte("bz"), []byte("c"), []byte("d"), []byte("zz")}
	// Each iteration checks every probe, so fewer iterations suffice.
	for range iterations() / 4 {
		rows := []Row{g.row(), g.row(), g.row()}
		headers := []Header{g.header(), g.header()}
		var rv, hv []byte
		for i := range rows {
			if i == 0 {
				rv = AppendRow(nil, &rows[i])
			} else {
				rv = mustMerge(t, rv, AppendRow(nil, &rows[i]))
			}
		}
		for i := range headers {
			if i == 0 {
				hv = AppendHeader(nil, &headers[i])
			} else {
				hv = mustMerge(t, hv, AppendHeader(nil, &headers[i]))
			}
		}
		now := g.localTime()
		var h Header
		var r Row
		for _, c := range probes {
			if err := DecodeHeader(hv, &h); err != nil {
				t.Fatal(err)
			}
			if err := DecodeRow(rv, &r); err != nil {
				t.Fatal(err)
			}
			live := h.Resolve(c, &r, now)
			want := oracleView(headers, rows, c, now)
			if got := fmt.Sprint(r.Liveness, r.Cells); got != fmt.Sprint(want.Liveness, want.Cells) || live != (want.Liveness.Present || len(want.Cells) > 0) {
				t.Fatalf("clustering %q at %d:\ngot  %v %s\nwant %v %v\nheaders %+v\nrows %+v", c, now, live, got, want.Liveness, want.Cells, headers, rows)
			}
			if !r.Deletion.IsLive() || len(r.ColumnDeletions) > 0 {
				t.Fatalf("live view keeps deletions: %+v", r)
			}
		}
		// Static rows: only the partition deletion covers them.
		live := h.ResolveStatic(now)
		var statics []Row
		var noRT []Header
		for _, hh := range headers {
			statics = append(statics, hh.Static)
			noRT = append(noRT, Header{Deletion: hh.Deletion})
		}
		want := oracleView(noRT, statics, nil, now)
		if got := fmt.Sprint(h.Static.Liveness, h.Static.Cells); got != fmt.Sprint(want.Liveness, want.Cells) || live != (len(want.Cells) > 0 || want.Liveness.Present) {
			t.Fatalf("static at %d: got %v %s, want %v %v", now, live, got, want.Liveness, want.Cells)
		}
	}
}

// oracleView computes the live view of the row at clustering c from every
// version written, straight from the rules: the winning version of each
// part, hidden by any deletion covering it, then the clock.
func oracleView(headers []Header, rows []Row, c []byte, now int64) Row {
	var outer, rowDel Deletion
	for _, h := range headers {
		outer = maxDeletion(outer, h.Deletion)
		for _, t := range h.RangeTombstones {
			if (len(t.End) == 0 || bytes.Compare(t.Start, t.End) < 0) && t.Contains(c) {
				outer = maxDeletion(outer, t.Deletion)
			}
		}
	}
	var live Liveness
	colDel := map[uint32]Deletion{}
	best := map[string]Cell{}
	var keys []Cell
	for _, r := range rows {
		rowDel = maxDeletion(rowDel, r.Deletion)
		if compareLiveness(r.Liveness, live) > 0 {
			live = r.Liveness
		}
		for _, cd := range r.ColumnDeletions {
			colDel[cd.Column] = maxDeletion(colDel[cd.Column], cd.Deletion)
		}
		for _, cell := range r.Cells {
			k := fmt.Sprintf("%d/%x", cell.Column, cell.Path)
			if old, ok := best[k]; !ok {
				best[k] = cell
				keys = append(keys, cell)
			} else {
				best[k] = *Reconcile(&old, &cell)
			}
		}
	}
	active := maxDeletion(outer, rowDel)
	var view Row
	if live.IsLive(now) && !active.Deletes(live.Timestamp) {
		view.Liveness = live
	}
	for _, k := range keys {
		cell := best[fmt.Sprintf("%d/%x", k.Column, k.Path)]
		if active.Deletes(cell.Timestamp) || colDel[cell.Column].Deletes(cell.Timestamp) || !cell.IsLive(now) {
			continue
		}
		view.Cells = append(view.Cells, cell)
	}
	view.Normalize() // sorts; nothing left to shadow
	normalizeFields(&view)
	return view
}

// normalizeFields clears the fields the encoding ignores, so views compare
// with fmt.
func normalizeFields(r *Row) {
	if r.Liveness.TTL <= 0 {
		r.Liveness.TTL, r.Liveness.Expires = 0, 0
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.TTL <= 0 {
			c.TTL, c.LocalDeletionTime = 0, 0
		}
		if len(c.Path) == 0 {
			c.Path = nil
		}
		if len(c.Value) == 0 {
			c.Value = nil
		}
	}
}

// TestMergeRangeTombstonesOracle checks merged range tombstones point by
// point against the maximum over the originals.
func TestMergeRangeTombstonesOracle(t *testing.T) {
	g := newGen(5)
	probes := [][]byte{nil, []byte("\x00"), []byte("a"), []byte("a\x00"), []byte("ab"), []byte("ab\x00"),
		[]byte("b"), []byte("b\x00"), []byte("ba"), []byte("c"), []byte("c\x00"), []byte("d"), []byte("d\x00"), []byte("zz")}
	for range iterations() {
		var raw []RangeTombstone
		floor := Live
		if g.r.IntN(3) == 0 {
			floor = g.deletion()
		}
		n := g.r.IntN(7)
		for range n {
			h := g.header()
			raw = append(raw, h.RangeTombstones...)
		}
		norm := normalizeRangeTombstones(append([]RangeTombstone(nil), raw...), floor)
		h := Header{Deletion: floor, RangeTombstones: norm}
		if msg := checkHeader(&h); msg != "" {
			t.Fatalf("normalized %+v to %+v: %s", raw, norm, msg)
		}
		for _, p := range probes {
			want := floor
			for _, rt := range raw {
				if (len(rt.End) == 0 || bytes.Compare(rt.Start, rt.End) < 0) && rt.Contains(p) {
					want = maxDeletion(want, rt.Deletion)
				}
			}
			if got := h.DeletionAt(p); got != want {
				t.Fatalf("at %q: got %+v, want %+v\nraw %+v\nnorm %+v", p, got, want, raw, norm)
			}
		}
	}
}

func TestMergeErrors(t *testing.T) {
	row := AppendRow(nil, &Row{Cells: []Cell{{Column: 1, Timestamp: 1, Value: []byte("v")}}})
	header := AppendHeader(nil, &Header{Deletion: Deletion{MarkedForDeleteAt: 1, LocalDeletionTime: 1}})
	for _, tc := range []struct {
		name string
		a, b []byte
	}{
		{"row and header", row, header},
		{"header and row", header, row},
		{"empty", nil, row},
		{"bad tag", row, []byte{0x99}},
		{"future version", []byte{0x22, 0}, row},
		{"truncated row", row, row[:len(row)-1]},
		{"truncated header", header[:len(header)-1], header},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Merge([]byte("dst"), tc.a, tc.b)
			if err == nil {
				t.Fatalf("Merge succeeded: %x", out)
			}
			if string(out) != "dst" {
				t.Errorf("Merge changed dst on error: %q", out)
			}
		})
	}
}

func TestMergeAppends(t *testing.T) {
	a := AppendRow(nil, &Row{Cells: []Cell{{Column: 1, Timestamp: 1, Value: []byte("a")}}})
	b := AppendRow(nil, &Row{Cells: []Cell{{Column: 2, Timestamp: 1, Value: []byte("b")}}})
	out, err := Merge([]byte("prefix"), a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := AppendRow([]byte("prefix"), &Row{Cells: []Cell{
		{Column: 1, Timestamp: 1, Value: []byte("a")},
		{Column: 2, Timestamp: 1, Value: []byte("b")},
	}})
	if !bytes.Equal(out, want) {
		t.Fatalf("got %x, want %x", out, want)
	}
}

// TestMergeLargeValues merges values beyond what the scratch pool keeps,
// then small ones, through the same pool.
func TestMergeLargeValues(t *testing.T) {
	var big, other Row
	var hb Header
	for i := range 3 * maxPooledItems {
		big.Cells = append(big.Cells, set(uint32(i), 2, "v"))
		other.Cells = append(other.Cells, set(uint32(i), 1, "old"))
		hb.RangeTombstones = append(hb.RangeTombstones, RangeTombstone{
			Start: []byte(fmt.Sprintf("%08d", 2*i)), End: []byte(fmt.Sprintf("%08d", 2*i+1)), Deletion: del(int64(i)),
		})
	}
	for range 3 {
		got := mustMerge(t, AppendRow(nil, &big), AppendRow(nil, &other))
		if want := AppendRow(nil, &big); !bytes.Equal(got, want) {
			t.Fatal("large merge lost the newer cells")
		}
		h := AppendHeader(nil, &hb)
		if got := mustMerge(t, h, h); !bytes.Equal(got, h) {
			t.Fatal("large header merge changed it")
		}
		small := AppendRow(nil, &Row{Cells: []Cell{set(1, 1, "x")}})
		if got := mustMerge(t, small, small); !bytes.Equal(got, small) {
			t.Fatal("small merge after a large one")
		}
	}
}
