package model

import (
	"bytes"
	"fmt"
	"testing"
)

// history accumulates writes to one row and its partition's header, merged
// as storage merges them.
type history struct {
	t      *testing.T
	header []byte
	row    []byte
}

func newHistory(t *testing.T) *history {
	return &history{t: t, header: AppendHeader(nil, &Header{}), row: AppendRow(nil, &Row{})}
}

func (h *history) writeRow(r Row) *history {
	h.row = mustMerge(h.t, h.row, AppendRow(nil, &r))
	return h
}

func (h *history) writeHeader(hd Header) *history {
	h.header = mustMerge(h.t, h.header, AppendHeader(nil, &hd))
	return h
}

// view resolves the row at clustering c and now and prints it as
// "live|dead col=value...".
func (h *history) view(c string, now int64) string {
	var hd Header
	var r Row
	if err := DecodeHeader(h.header, &hd); err != nil {
		h.t.Fatal(err)
	}
	if err := DecodeRow(h.row, &r); err != nil {
		h.t.Fatal(err)
	}
	live := hd.Resolve([]byte(c), &r, now)
	return describe(live, &r)
}

func describe(live bool, r *Row) string {
	var b bytes.Buffer
	if live {
		b.WriteString("live")
	} else {
		b.WriteString("dead")
	}
	for _, c := range r.Cells {
		fmt.Fprintf(&b, " %d", c.Column)
		if len(c.Path) > 0 {
			fmt.Fprintf(&b, "[%s]", c.Path)
		}
		fmt.Fprintf(&b, "=%s", c.Value)
	}
	return b.String()
}

func del(ts int64) Deletion { return Deletion{MarkedForDeleteAt: ts, LocalDeletionTime: l0} }

func set(col uint32, ts int64, v string) Cell {
	return Cell{Column: col, Timestamp: ts, Value: []byte(v)}
}

func TestResolveScenarios(t *testing.T) {
	now := int64(l0 + 10)
	insert := func(ts int64, cells ...Cell) Row {
		return Row{Liveness: Liveness{Present: true, Timestamp: ts}, Cells: cells}
	}
	update := func(cells ...Cell) Row { return Row{Cells: cells} }
	deleteCol := func(col uint32, ts int64) Row {
		return Row{Cells: []Cell{{Column: col, Timestamp: ts, LocalDeletionTime: l0, Tombstone: true}}}
	}

	for _, tc := range []struct {
		name string
		h    *history
		c    string
		want string
	}{
		{"insert with null columns exists",
			newHistory(t).writeRow(insert(t0)), "k", "live"},
		{"update of every column to null removes the row",
			newHistory(t).writeRow(update(set(1, t0, "a"))).writeRow(deleteCol(1, t0+1)), "k", "dead"},
		{"insert then column delete keeps the row",
			newHistory(t).writeRow(insert(t0, set(1, t0, "a"))).writeRow(deleteCol(1, t0+1)), "k", "live"},
		{"newest write wins",
			newHistory(t).writeRow(update(set(1, t0+1, "new"))).writeRow(update(set(1, t0, "old"))), "k", "live 1=new"},
		{"a tombstone wins a timestamp tie",
			newHistory(t).writeRow(update(set(1, t0, "a"))).writeRow(deleteCol(1, t0)), "k", "dead"},
		{"row deletion shadows older and equal writes",
			newHistory(t).writeRow(insert(t0, set(1, t0, "a"), set(2, t0+2, "b"))).writeRow(Row{Deletion: del(t0 + 1)}), "k", "live 2=b"},
		{"partition deletion shadows the row",
			newHistory(t).writeRow(insert(t0, set(1, t0, "a"))).writeHeader(Header{Deletion: del(t0)}), "k", "dead"},
		{"a newer write survives the partition deletion",
			newHistory(t).writeRow(insert(t0+5, set(1, t0+5, "a"))).writeHeader(Header{Deletion: del(t0)}), "k", "live 1=a"},
		{"range tombstone covers its start",
			newHistory(t).writeRow(insert(t0, set(1, t0, "a"))).writeHeader(Header{RangeTombstones: []RangeTombstone{{Start: []byte("k"), End: []byte("m"), Deletion: del(t0)}}}), "k", "dead"},
		{"range tombstone excludes its end",
			newHistory(t).writeRow(insert(t0, set(1, t0, "a"))).writeHeader(Header{RangeTombstones: []RangeTombstone{{Start: []byte("a"), End: []byte("k"), Deletion: del(t0)}}}), "k", "live 1=a"},
		{"unbounded range tombstone",
			newHistory(t).writeRow(insert(t0, set(1, t0, "a"))).writeHeader(Header{RangeTombstones: []RangeTombstone{{Start: []byte("j"), Deletion: del(t0)}}}), "zzz", "dead"},
		{"ttl cell before expiry",
			newHistory(t).writeRow(update(Cell{Column: 1, Timestamp: t0, TTL: 10, LocalDeletionTime: now + 1, Value: []byte("a")})), "k", "live 1=a"},
		{"ttl cell after expiry",
			newHistory(t).writeRow(update(Cell{Column: 1, Timestamp: t0, TTL: 10, LocalDeletionTime: now, Value: []byte("a")})), "k", "dead"},
		{"expired liveness without cells",
			newHistory(t).writeRow(Row{Liveness: Liveness{Present: true, Timestamp: t0, TTL: 5, Expires: now}}), "k", "dead"},
		{"expiring liveness keeps the row while live",
			newHistory(t).writeRow(Row{Liveness: Liveness{Present: true, Timestamp: t0, TTL: 5, Expires: now + 1}}), "k", "live"},
		{"collection overwrite drops older elements",
			newHistory(t).
				writeRow(update(Cell{Column: 3, Path: []byte("a"), Timestamp: t0, Value: []byte("1")}, Cell{Column: 3, Path: []byte("b"), Timestamp: t0, Value: []byte("2")})).
				writeRow(Row{ColumnDeletions: []ColumnDeletion{{Column: 3, Deletion: del(t0 + 1)}}, Cells: []Cell{{Column: 3, Path: []byte("c"), Timestamp: t0 + 2, Value: []byte("3")}}}),
			"k", "live 3[c]=3"},
		{"collection element delete",
			newHistory(t).
				writeRow(update(Cell{Column: 3, Path: []byte("a"), Timestamp: t0, Value: []byte("1")}, Cell{Column: 3, Path: []byte("b"), Timestamp: t0, Value: []byte("2")})).
				writeRow(update(Cell{Column: 3, Path: []byte("a"), Timestamp: t0 + 1, LocalDeletionTime: l0, Tombstone: true})),
			"k", "live 3[b]=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.view(tc.c, now); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResolveNilHeader(t *testing.T) {
	r := Row{Cells: []Cell{set(1, 1, "a")}}
	var h *Header
	if !h.Resolve([]byte("c"), &r, 0) || len(r.Cells) != 1 {
		t.Fatalf("nil header deleted %+v", r)
	}
}

func TestResolveStatic(t *testing.T) {
	h := Header{
		Deletion: del(t0),
		Static:   Row{Cells: []Cell{set(1, t0+1, "s"), set(2, t0+1, "")}},
		RangeTombstones: []RangeTombstone{
			{Start: nil, Deletion: del(t0 + 5)}, // range tombstones never cover the static row
		},
	}
	h.Normalize()
	if !h.ResolveStatic(l0) || len(h.Static.Cells) != 2 {
		t.Fatalf("static row: %+v", h.Static)
	}
	h = Header{Deletion: del(t0 + 1), Static: Row{Cells: []Cell{set(1, t0+1, "s")}}}
	if h.ResolveStatic(l0) {
		t.Fatalf("partition deletion did not shadow the static row: %+v", h.Static)
	}
}

func TestDeletionAt(t *testing.T) {
	h := Header{
		Deletion: del(5),
		RangeTombstones: []RangeTombstone{
			{Start: []byte("b"), End: []byte("d"), Deletion: del(7)},
			{Start: []byte("d"), End: []byte("f"), Deletion: del(9)},
			{Start: []byte("m"), Deletion: del(3)},
			{Start: []byte("x"), Deletion: del(8)},
		},
	}
	h.Normalize()
	for c, want := range map[string]int64{"": 5, "a": 5, "b": 7, "c": 7, "d": 9, "e\xff": 9, "f": 5, "m": 5, "w": 5, "x": 8, "zzzz": 8} {
		if got := h.DeletionAt([]byte(c)); got != del(want) {
			t.Errorf("DeletionAt(%q) = %+v, want timestamp %d", c, got, want)
		}
	}
}

func TestShadow(t *testing.T) {
	r := Row{
		Liveness:        Liveness{Present: true, Timestamp: 5},
		Deletion:        Deletion{MarkedForDeleteAt: 4, LocalDeletionTime: 100},
		ColumnDeletions: []ColumnDeletion{{Column: 2, Deletion: del(6)}, {Column: 3, Deletion: del(9)}},
		Cells:           []Cell{set(1, 6, "a"), set(2, 7, "b"), set(3, 10, "c"), set(4, 11, "d")},
	}
	if r.Shadow(del(6)) {
		t.Fatal("Shadow emptied a row with newer data")
	}
	if got := fmt.Sprintf("%+v", r); got != fmt.Sprintf("%+v", Row{
		ColumnDeletions: []ColumnDeletion{{Column: 3, Deletion: del(9)}},
		Cells:           []Cell{set(2, 7, "b"), set(3, 10, "c"), set(4, 11, "d")},
	}) {
		t.Fatalf("shadowed row: %s", got)
	}
	if !r.Shadow(del(20)) {
		t.Fatalf("Shadow by a newer deletion left %+v", r)
	}
}

// TestShadowKeepsReads checks the compaction claim of Shadow: removing what
// a header shadows from a row changes no read, even after the row merges
// with versions from tables the compaction did not see.
func TestShadowKeepsReads(t *testing.T) {
	g := newGen(21)
	c := []byte("b")
	for range iterations() {
		hd, r, later := g.header(), g.row(), g.row()
		hd.Normalize()
		enc := AppendRow(nil, &r)
		var shadowed Row
		if err := DecodeRow(enc, &shadowed); err != nil {
			t.Fatal(err)
		}
		shadowed.Shadow(hd.DeletionAt(c))
		if msg := checkRow(&shadowed, Live); msg != "" {
			t.Fatalf("Shadow broke normal form: %s", msg)
		}
		now := g.localTime()
		views := make([]string, 2)
		for i, v := range [][]byte{enc, AppendRow(nil, &shadowed)} {
			var out Row
			if err := DecodeRow(mustMerge(t, v, AppendRow(nil, &later)), &out); err != nil {
				t.Fatal(err)
			}
			views[i] = describe(hd.Resolve(c, &out, now), &out)
		}
		if views[0] != views[1] {
			t.Fatalf("shadowing changed the read: %q vs %q", views[0], views[1])
		}
	}
}
