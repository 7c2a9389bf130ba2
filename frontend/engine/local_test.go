package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/storage"
)

// checkRows reads partition pk whole and compares its rows with want
// (ck -> v).
func (te *testEnv) checkRows(pk string, now int64, want map[int64]string) {
	te.t.Helper()
	p, err := te.e.Read(te.ctx, Slice{Table: te.table, Key: []byte(pk), Now: now})
	if err != nil {
		te.t.Fatal(err)
	}
	cks, vs := values(te.t, p)
	if len(cks) != len(want) {
		te.t.Fatalf("partition %s: %d rows %v, want %d", pk, len(cks), cks, len(want))
	}
	for i, ck := range cks {
		if w, ok := want[ck]; !ok || w != vs[i] {
			te.t.Fatalf("partition %s row %d: %q, want %q (present %v)", pk, ck, vs[i], w, ok)
		}
		if i > 0 && cks[i-1] >= ck {
			te.t.Fatalf("partition %s: rows out of order: %v", pk, cks)
		}
	}
	if string(p.Key) != pk {
		te.t.Fatalf("partition key %q, want %q", p.Key, pk)
	}
}

func TestReadMemtableSSTablesMixed(t *testing.T) {
	te := newTestEnv(t, 1<<20)
	now := time.Now().Unix()
	want := map[string]map[int64]string{}
	for p := range 10 {
		pk := "p" + strconv.Itoa(p)
		want[pk] = map[int64]string{}
		for ck := range int64(10) {
			v := fmt.Sprintf("%s/%d/a", pk, ck)
			te.apply(insert(pk, ck, 1, v, 0, now))
			want[pk][ck] = v
		}
	}
	check := func() {
		t.Helper()
		for pk, rows := range want {
			te.checkRows(pk, now, rows)
		}
		te.checkRows("absent", now, nil)
	}
	check() // memtables only

	te.flush()
	if n := te.e.readers.Len(); n != 0 {
		t.Fatalf("%d readers before any SSTable read", n)
	}
	check() // SSTables only
	if te.e.readers.Len() == 0 {
		t.Fatal("no SSTable was read after the flush")
	}

	// Newer versions of some rows and new rows, in the memtables over
	// the SSTables.
	for p := range 10 {
		pk := "p" + strconv.Itoa(p)
		for ck := int64(5); ck < 15; ck++ {
			v := fmt.Sprintf("%s/%d/b", pk, ck)
			te.apply(insert(pk, ck, 2, v, 0, now))
			want[pk][ck] = v
		}
	}
	check()
	te.flush()
	check() // two generations of SSTables
}

func TestSlicesReverseLimit(t *testing.T) {
	te := newTestEnv(t, 1<<20)
	now := time.Now().Unix()
	for ck := range int64(20) {
		te.apply(insert("p", ck, 1, strconv.FormatInt(ck, 10), 0, now))
	}
	te.flush()
	// Odd rows again, newer, in the memtable.
	for ck := int64(1); ck < 20; ck += 2 {
		te.apply(insert("p", ck, 2, strconv.FormatInt(ck, 10), 0, now))
	}
	for _, tc := range []struct {
		start, end []byte
		reverse    bool
		limit      int
		want       []int64
	}{
		{nil, nil, false, 3, []int64{0, 1, 2}},
		{nil, nil, true, 3, []int64{19, 18, 17}},
		{bound("p", 5, keys.Before), bound("p", 8, keys.After), false, 0, []int64{5, 6, 7, 8}},
		{bound("p", 5, keys.After), bound("p", 8, keys.Before), false, 0, []int64{6, 7}},
		{bound("p", 5, keys.Before), bound("p", 8, keys.After), true, 0, []int64{8, 7, 6, 5}},
		{bound("p", 5, keys.Before), bound("p", 8, keys.After), true, 2, []int64{8, 7}},
		{bound("p", 15, keys.Before), nil, false, 0, []int64{15, 16, 17, 18, 19}},
		{nil, bound("p", 2, keys.Before), true, 0, []int64{1, 0}},
		{bound("p", 8, keys.Before), bound("p", 5, keys.After), false, 0, nil},
		// Bounds that are stored keys, which CQL's bounds never are: Start
		// is inclusive and End exclusive in either direction.
		{rowKey("p", 5), rowKey("p", 8), false, 0, []int64{5, 6, 7}},
		{rowKey("p", 5), rowKey("p", 8), true, 0, []int64{7, 6, 5}},
		{rowKey("p", 5), nil, true, 0, []int64{19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5}},
		{nil, rowKey("p", 2), true, 0, []int64{1, 0}},
		{rowKey("p", 5), rowKey("p", 6), true, 0, []int64{5}},
	} {
		p, err := te.e.Read(te.ctx, Slice{Table: te.table, Key: []byte("p"), Start: tc.start, End: tc.end, Reverse: tc.reverse, Limit: tc.limit, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := values(t, p)
		if !slices.Equal(got, tc.want) {
			t.Errorf("slice %x..%x reverse=%v limit=%d: %v, want %v", tc.start, tc.end, tc.reverse, tc.limit, got, tc.want)
		}
	}
}

func TestReadRejectsBadQueries(t *testing.T) {
	te := newTestEnv(t, 1<<20)
	for _, s := range []Slice{
		{Table: te.table},
		{Table: te.table, Key: []byte("p"), Start: bound("q", 1, keys.Before)},
		{Table: te.table, Key: []byte("p"), End: headerKey("p")},
		{Table: te.table, Key: []byte("p"), End: prefixOf("p")},
		{Table: te.table, Key: []byte("p"), Limit: -1},
	} {
		if _, err := te.e.Read(te.ctx, s); !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("Read(%+v) = %v, want ErrInvalidQuery", s, err)
		}
	}
	for _, s := range []Scan{
		{Table: te.table, First: 2, Last: 1},
		{Table: te.table, First: 0, Last: 10, After: []byte{1, 2}},
		{Table: te.table, First: math.MinInt64, Last: math.MaxInt64, After: prefixOf("p")},
		{Table: te.table, First: math.MinInt64, Last: math.MaxInt64, Limit: -1},
	} {
		if _, err := te.e.Scan(te.ctx, s); !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("Scan(%+v) = %v, want ErrInvalidQuery", s, err)
		}
	}
}

func TestDeletionsAndTTL(t *testing.T) {
	te := newTestEnv(t, 1<<20)
	now := time.Now().Unix()
	for ck := range int64(10) {
		te.apply(insert("a", ck, 10, "a", 0, now))
		te.apply(insert("b", ck, 10, "b", 0, now))
	}
	te.apply(insert("a", 100, 10, "short", 5, now))
	te.apply(setStatic("a", 10, "static"))
	te.flush()

	// Deletions in the memtable over data in SSTables.
	te.apply(deleteRow("a", 1, 11, now))
	te.apply(deleteRange("a", 4, 6, 11, now))
	te.apply(deletePartition("b", 11, now))
	te.apply(insert("b", 3, 12, "again", 0, now)) // newer than the deletion
	te.apply(deleteRow("a", 8, 9, now))           // older than the row: no effect

	wantA := map[int64]string{0: "a", 2: "a", 3: "a", 7: "a", 8: "a", 9: "a", 100: "short"}
	te.checkRows("a", now, wantA)
	te.checkRows("b", now, map[int64]string{3: "again"})

	p, err := te.e.Read(te.ctx, Slice{Table: te.table, Key: []byte("a"), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !p.StaticLive || len(p.Header.Static.Cells) != 1 || string(p.Header.Static.Cells[0].Value) != "static" {
		t.Fatalf("static row %+v live=%v", p.Header.Static, p.StaticLive)
	}

	// Five seconds later the TTL row has expired.
	delete(wantA, 100)
	te.checkRows("a", now+5, wantA)

	// The same after a flush, where deletions and data share SSTables.
	te.flush()
	te.checkRows("a", now+5, wantA)
	te.checkRows("b", now, map[int64]string{3: "again"})

	// A partition deletion hides the static row too.
	te.apply(deletePartition("a", 20, now))
	p, err = te.e.Read(te.ctx, Slice{Table: te.table, Key: []byte("a"), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if p.StaticLive || len(p.Rows) != 0 {
		t.Fatalf("deleted partition read %d rows, static live %v", len(p.Rows), p.StaticLive)
	}
}

func TestApplyIf(t *testing.T) {
	te := newTestEnv(t, 1<<20)
	now := time.Now().Unix()
	notExists := func(p *Partition) (bool, error) { return len(p.Rows) == 0, nil }
	m := &Mutation{Table: te.table, Entries: []Entry{insert("p", 1, 1, "first", 0, now)}}
	if ok, err := te.e.ApplyIf(te.ctx, m, now, notExists); err != nil || !ok {
		t.Fatalf("first conditional insert: %v %v", ok, err)
	}
	te.flush()
	m = &Mutation{Table: te.table, Entries: []Entry{insert("p", 1, 2, "second", 0, now)}}
	if ok, err := te.e.ApplyIf(te.ctx, m, now, notExists); err != nil || ok {
		t.Fatalf("second conditional insert applied: %v %v", ok, err)
	}
	te.checkRows("p", now, map[int64]string{1: "first"})
	errCond := errors.New("test: condition failed")
	_, err := te.e.ApplyIf(te.ctx, m, now, func(*Partition) (bool, error) { return false, errCond })
	if !errors.Is(err, errCond) {
		t.Fatalf("condition error %v, want %v", err, errCond)
	}
}

// scanAll pages through [first, last] with the given page size, flushing
// after the first page, and returns partition -> cks in the order read.
func (te *testEnv) scanAll(first, last int64, limit int, now int64, flushAfterFirst bool) (order []string, rows map[string][]int64) {
	te.t.Helper()
	rows = map[string][]int64{}
	var after []byte
	for pages := 0; ; pages++ {
		page, err := te.e.Scan(te.ctx, Scan{Table: te.table, First: first, Last: last, After: after, Limit: limit, Now: now})
		if err != nil {
			te.t.Fatal(err)
		}
		n := 0
		for i := range page.Partitions {
			p := &page.Partitions[i]
			if p.Token < first || p.Token > last {
				te.t.Fatalf("partition %q with token %d outside [%d, %d]", p.Key, p.Token, first, last)
			}
			pk := string(p.Key)
			if _, seen := rows[pk]; !seen {
				order = append(order, pk)
			} else if order[len(order)-1] != pk {
				te.t.Fatalf("partition %q read again after another", pk)
			}
			cks, _ := values(te.t, p)
			rows[pk] = append(rows[pk], cks...)
			n += max(len(cks), 1)
		}
		if limit > 0 && n > limit {
			te.t.Fatalf("page of %d rows, limit %d", n, limit)
		}
		if page.Next == nil {
			return order, rows
		}
		if pages > 10000 {
			te.t.Fatal("scan does not end")
		}
		after = page.Next
		if pages == 0 && flushAfterFirst {
			te.flush()
		}
	}
}

func TestScanPaging(t *testing.T) {
	te := newTestEnv(t, 1<<20)
	now := time.Now().Unix()
	want := map[string][]int64{}
	write := func(from, to int) {
		for p := from; p < to; p++ {
			pk := "p" + strconv.Itoa(p)
			for ck := range int64(p % 5) {
				te.apply(insert(pk, ck, 1, "v", 0, now))
				want[pk] = append(want[pk], ck)
			}
			if p%5 == 0 { // a partition with only a static row
				te.apply(setStatic(pk, 1, "s"))
				want[pk] = nil
			}
		}
	}
	write(0, 30)
	te.flush()
	write(30, 60)
	// A deleted partition, and a partition whose rows are all deleted
	// but whose static row lives: the first is not returned.
	te.apply(deletePartition("p1", 2, now))
	delete(want, "p1")
	te.apply(deleteRange("p7", 0, 10, 2, now))
	te.apply(setStatic("p7", 2, "s"))
	want["p7"] = nil

	var wantOrder []string
	for pk := range want {
		wantOrder = append(wantOrder, pk)
	}
	slices.SortFunc(wantOrder, func(a, b string) int { return bytes.Compare(prefixOf(a), prefixOf(b)) })

	for _, limit := range []int{0, 1, 3, 7, 1000} {
		order, rows := te.scanAll(math.MinInt64, math.MaxInt64, limit, now, limit == 3)
		if !slices.Equal(order, wantOrder) {
			t.Fatalf("limit %d: partitions %v, want %v", limit, order, wantOrder)
		}
		for pk, cks := range want {
			if !slices.Equal(rows[pk], cks) {
				t.Fatalf("limit %d: partition %s rows %v, want %v", limit, pk, rows[pk], cks)
			}
		}
	}

	// A sub-range: only the partitions whose tokens lie in it.
	first, last := int64(-1<<62), int64(1<<61)
	order, _ := te.scanAll(first, last, 4, now, false)
	var wantSub []string
	for _, pk := range wantOrder {
		if tok := tokenOf(pk); tok >= first && tok <= last {
			wantSub = append(wantSub, pk)
		}
	}
	if !slices.Equal(order, wantSub) {
		t.Fatalf("sub-range: partitions %v, want %v", order, wantSub)
	}
}

func tokenOf(pk string) int64 {
	tok, _ := keys.Token(prefixOf(pk))
	return tok
}

func TestPointReadGETs(t *testing.T) {
	te := newTestEnv(t, 1<<20)
	now := time.Now().Unix()
	for p := range 200 {
		pk := "p" + strconv.Itoa(p)
		for ck := range int64(3) {
			te.apply(insert(pk, ck, 1, fmt.Sprintf("%0100d", p), 0, now))
		}
	}
	te.flush()
	// Reading a partition of every range opens every reader.
	for p := range 200 {
		if _, err := te.e.Read(te.ctx, Slice{Table: te.table, Key: []byte("p" + strconv.Itoa(p)), Now: now}); err != nil {
			t.Fatal(err)
		}
	}
	opened := te.e.readers.Len()
	var total int64
	for p := 1; p < 200; p += 7 {
		pk := "p" + strconv.Itoa(p)
		v := fmt.Sprintf("%0100d", p)
		before := te.store.gets.Load()
		te.checkRows(pk, now, map[int64]string{0: v, 1: v, 2: v})
		gets := te.store.gets.Load() - before
		total += gets
		if gets > 1 {
			t.Fatalf("point read of %s made %d GETs, want at most 1", pk, gets)
		}
	}
	if total == 0 {
		t.Fatal("point reads made no GET: were the SSTables read at all?")
	}
	if opened == 0 || te.e.readers.Len() != opened {
		t.Fatalf("%d readers kept, then %d", opened, te.e.readers.Len())
	}
}

func TestApplyBatch(t *testing.T) {
	te := newTestEnv(t, 1<<20)
	now := time.Now().Unix()
	var ms []*Mutation
	for p := range 8 {
		pk := "b" + strconv.Itoa(p)
		ms = append(ms, &Mutation{Table: te.table, Entries: []Entry{insert(pk, 1, 1, pk, 0, now), insert(pk, 2, 1, pk, 0, now)}})
	}
	if err := te.e.Apply(te.ctx, ms...); err != nil {
		t.Fatal(err)
	}
	for p := range 8 {
		pk := "b" + strconv.Itoa(p)
		te.checkRows(pk, now, map[int64]string{1: pk, 2: pk})
	}
	// An invalid mutation fails alone; the others are applied.
	bad := &Mutation{Table: te.table, Entries: []Entry{{Key: []byte("short"), Value: []byte{1}}}}
	good := &Mutation{Table: te.table, Entries: []Entry{insert("b0", 3, 1, "b0", 0, now)}}
	if err := te.e.Apply(te.ctx, bad, good); !errors.Is(err, storage.ErrInvalidMutation) {
		t.Fatalf("Apply with an invalid mutation: %v", err)
	}
	te.checkRows("b0", now, map[int64]string{1: "b0", 2: "b0", 3: "b0"})
	if err := te.e.Apply(te.ctx, nil); !errors.Is(err, storage.ErrInvalidMutation) {
		t.Fatalf("Apply(nil): %v", err)
	}
}
