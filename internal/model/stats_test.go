package model

import (
	"errors"
	"math"
	"testing"
)

func TestValueStats(t *testing.T) {
	row := AppendRow(nil, &Row{
		Liveness: Liveness{Present: true, Timestamp: 10, TTL: 5, Expires: 105},
		Deletion: Deletion{MarkedForDeleteAt: 3, LocalDeletionTime: 90},
		ColumnDeletions: []ColumnDeletion{
			{Column: 4, Deletion: Deletion{MarkedForDeleteAt: 8, LocalDeletionTime: 95}},
		},
		Cells: []Cell{
			{Column: 1, Timestamp: 12, TTL: 5, LocalDeletionTime: 110, Value: []byte("a")},
			{Column: 2, Timestamp: 20, LocalDeletionTime: 99, Tombstone: true},
		},
	})
	got, err := ValueStats(row)
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{
		Values:       1,
		MinTimestamp: 3, MaxTimestamp: 20,
		MinLocalDeletionTime: 90, MaxLocalDeletionTime: 110,
		Rows: 1, Cells: 2, Tombstones: 3, Expiring: 2,
	}
	if got != want {
		t.Fatalf("row stats\n got %+v\nwant %+v", got, want)
	}

	// A regular cell never expires.
	got, err = ValueStats(AppendRow(nil, &Row{Cells: []Cell{{Column: 1, Timestamp: 7}}}))
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxLocalDeletionTime != math.MaxInt64 || got.MinLocalDeletionTime != math.MaxInt64 || got.MinTimestamp != 7 {
		t.Fatalf("regular cell stats: %+v", got)
	}

	header := AppendHeader(nil, &Header{
		Deletion: Deletion{MarkedForDeleteAt: 5, LocalDeletionTime: 50},
		Static:   Row{Cells: []Cell{{Column: 1, Timestamp: 6, Value: []byte("s")}}},
		RangeTombstones: []RangeTombstone{
			{Start: []byte("a"), End: []byte("b"), Deletion: Deletion{MarkedForDeleteAt: 9, LocalDeletionTime: 40}},
		},
	})
	got, err = ValueStats(header)
	if err != nil {
		t.Fatal(err)
	}
	want = Stats{
		Values:       1,
		MinTimestamp: 5, MaxTimestamp: 9,
		MinLocalDeletionTime: 40, MaxLocalDeletionTime: math.MaxInt64,
		Rows: 1, Cells: 1, Tombstones: 2,
	}
	if got != want {
		t.Fatalf("header stats\n got %+v\nwant %+v", got, want)
	}

	got, err = ValueStats(AppendHeader(nil, &Header{}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stats{Values: 1, MinTimestamp: math.MaxInt64, MaxTimestamp: math.MinInt64,
		MinLocalDeletionTime: math.MaxInt64, MaxLocalDeletionTime: math.MinInt64}); got != want {
		t.Fatalf("empty header stats: %+v", got)
	}

	if _, err := ValueStats([]byte{tagRow, 0xff}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt value: %v", err)
	}
}

func TestStatsAdd(t *testing.T) {
	var s Stats
	s.Add(Stats{})
	if s != (Stats{}) {
		t.Fatalf("adding nothing: %+v", s)
	}
	a := Stats{Values: 1, MinTimestamp: 5, MaxTimestamp: 9, MinLocalDeletionTime: 100, MaxLocalDeletionTime: 200, Rows: 1, Cells: 3, Tombstones: 1, Expiring: 1}
	b := Stats{Values: 2, MinTimestamp: 2, MaxTimestamp: 7, MinLocalDeletionTime: math.MaxInt64, MaxLocalDeletionTime: math.MinInt64, Cells: 1, Tombstones: 2}
	s.Add(a)
	if s != a {
		t.Fatalf("first Add: %+v", s)
	}
	s.Add(b)
	want := Stats{Values: 3, MinTimestamp: 2, MaxTimestamp: 9, MinLocalDeletionTime: 100, MaxLocalDeletionTime: 200, Rows: 1, Cells: 4, Tombstones: 3, Expiring: 1}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}
}

// TestStatsOfMerge checks that the stats of a merge stay within the
// aggregate of its inputs: merging only drops data.
func TestStatsOfMerge(t *testing.T) {
	g := newGen(30)
	for range iterations() {
		a, b := g.row(), g.row()
		ea, eb := AppendRow(nil, &a), AppendRow(nil, &b)
		sa, err := ValueStats(ea)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := ValueStats(eb)
		if err != nil {
			t.Fatal(err)
		}
		sm, err := ValueStats(mustMerge(t, ea, eb))
		if err != nil {
			t.Fatal(err)
		}
		agg := sa
		agg.Add(sb)
		if sm.Cells > agg.Cells || sm.Tombstones > agg.Tombstones ||
			sm.Cells > 0 && (sm.MinTimestamp < agg.MinTimestamp || sm.MaxTimestamp > agg.MaxTimestamp) {
			t.Fatalf("merge stats %+v exceed inputs %+v", sm, agg)
		}
	}
}
