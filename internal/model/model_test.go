package model

import (
	"cmp"
	"testing"
)

func TestReconcile(t *testing.T) {
	regular := func(ts int64, v string) Cell { return Cell{Timestamp: ts, Value: []byte(v)} }
	expiring := func(ts int64, ttl int32, exp int64, v string) Cell {
		return Cell{Timestamp: ts, TTL: ttl, LocalDeletionTime: exp, Value: []byte(v)}
	}
	tombstone := func(ts, ldt int64) Cell { return Cell{Timestamp: ts, LocalDeletionTime: ldt, Tombstone: true} }

	for _, tc := range []struct {
		name          string
		winner, loser Cell
	}{
		{"newer regular beats older tombstone", regular(2, "a"), tombstone(1, 100)},
		{"newer tombstone beats older regular", tombstone(2, 1), regular(1, "zz")},
		{"newer expiring beats older regular", expiring(2, 10, 5, "a"), regular(1, "z")},
		{"tombstone beats regular on a tie", tombstone(5, 1), regular(5, "zzz")},
		{"tombstone beats expiring on a tie", tombstone(5, 1), expiring(5, 10, 1000, "z")},
		{"expiring beats regular on a tie (CASSANDRA-14592)", expiring(5, 10, 1, ""), regular(5, "zzz")},
		{"later expiry wins between expiring", expiring(5, 10, 20, "a"), expiring(5, 10, 19, "z")},
		{"later deletion time wins between tombstones", tombstone(5, 20), tombstone(5, 19)},
		{"greater value wins between regular", regular(5, "b"), regular(5, "a")},
		{"longer value wins on a common prefix", regular(5, "ab"), regular(5, "a")},
		{"values compare unsigned", regular(5, "\xff"), regular(5, "\x7f")},
		{"greater value wins between equal expiring", expiring(5, 10, 20, "b"), expiring(5, 10, 20, "a")},
		{"greater ttl breaks the last tie", expiring(5, 11, 20, "a"), expiring(5, 10, 20, "a")},
		{"tombstone value is ignored", tombstone(5, 20), Cell{Timestamp: 5, LocalDeletionTime: 19, Tombstone: true, Value: []byte("zz")}},
		{"negative timestamps order", regular(-1, "a"), regular(-2, "z")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Reconcile(&tc.winner, &tc.loser); got != &tc.winner {
				t.Errorf("Reconcile(winner, loser) picked %+v", *got)
			}
			if got := Reconcile(&tc.loser, &tc.winner); got != &tc.winner {
				t.Errorf("Reconcile(loser, winner) picked %+v", *got)
			}
		})
	}
}

func TestDeletionOrder(t *testing.T) {
	ds := []Deletion{
		Live,
		{MarkedForDeleteAt: -5, LocalDeletionTime: 0},
		{MarkedForDeleteAt: 0, LocalDeletionTime: 7},
		{MarkedForDeleteAt: 1, LocalDeletionTime: 3},
		{MarkedForDeleteAt: 1, LocalDeletionTime: 4},
		{MarkedForDeleteAt: 2, LocalDeletionTime: 1},
	}
	for i := range ds {
		for j := range ds {
			if got, want := ds[i].Supersedes(ds[j]), i > j; got != want {
				t.Errorf("%+v.Supersedes(%+v) = %v, want %v", ds[i], ds[j], got, want)
			}
		}
	}
	d := Deletion{MarkedForDeleteAt: 10, LocalDeletionTime: 1}
	for ts, want := range map[int64]bool{9: true, 10: true, 11: false} {
		if got := d.Deletes(ts); got != want {
			t.Errorf("Deletes(%d) = %v, want %v", ts, got, want)
		}
	}
	if Live.Deletes(-1 << 63) {
		t.Error("Live deletes")
	}
}

func TestLivenessOrder(t *testing.T) {
	ls := []Liveness{
		{},
		{Present: true, Timestamp: 1, TTL: 5, Expires: 100},
		{Present: true, Timestamp: 2},
		{Present: true, Timestamp: 2, TTL: 5, Expires: 10},
		{Present: true, Timestamp: 2, TTL: 4, Expires: 11},
		{Present: true, Timestamp: 2, TTL: 5, Expires: 11},
	}
	for i := range ls {
		for j := range ls {
			if got := compareLiveness(ls[i], ls[j]); got != cmp.Compare(i, j) {
				t.Errorf("compareLiveness(%+v, %+v) = %d", ls[i], ls[j], got)
			}
		}
	}
	// Fields that do not count are ignored.
	if compareLiveness(Liveness{Timestamp: 5}, Liveness{}) != 0 {
		t.Error("absent liveness compares by timestamp")
	}
	if compareLiveness(Liveness{Present: true, Timestamp: 5, Expires: 9}, Liveness{Present: true, Timestamp: 5}) != 0 {
		t.Error("non-expiring liveness compares by expiry")
	}
}

func TestCellIsLive(t *testing.T) {
	for _, tc := range []struct {
		c    Cell
		now  int64
		want bool
	}{
		{Cell{Value: []byte("v")}, 1 << 40, true},
		{Cell{Tombstone: true, LocalDeletionTime: 100}, 50, false},
		{Cell{TTL: 10, LocalDeletionTime: 100}, 99, true},
		{Cell{TTL: 10, LocalDeletionTime: 100}, 100, false},
	} {
		if got := tc.c.IsLive(tc.now); got != tc.want {
			t.Errorf("%+v.IsLive(%d) = %v", tc.c, tc.now, got)
		}
	}
}
