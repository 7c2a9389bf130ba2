package manifest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

func liveKeys(t *testing.T, m *Manifest, table uuid.UUID, r int) []string {
	t.Helper()
	ssts, err := m.SSTablesInRange(ctxT(t), table, r)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range ssts {
		out = append(out, s.Key)
		if len(s.Covers) != 0 && s.Key == "a" {
			t.Errorf("restored SSTable %s carries flush positions %v", s.Key, s.Covers)
		}
	}
	slices.Sort(out)
	return out
}

func TestSnapshotRestore(t *testing.T) {
	e := newEnv(t)
	clock := &fakeClock{now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	m, err := Open(ctxT(t), e.connect(), e.store, "c1", Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	initRanges(t, m)
	tbl := &Table{ID: uuid.New(), Name: "t", Keyspace: "ks", Columns: []Column{{ID: 1, Name: "k", Type: "int", Kind: KindPartitionKey}}, PartitionKey: []uint32{1}}
	lo0, hi0 := RangeBounds(0, testRanges)
	lo1, hi1 := RangeBounds(1, testRanges)
	commit := func(c Commit) {
		t.Helper()
		c.Table = tbl.ID
		if _, err := m.CommitSSTables(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	commit(Commit{Range: 0, Add: []SSTable{sst("a", lo0, hi0)}})
	commit(Commit{Range: 1, Add: []SSTable{sst("b", lo1, hi1)}})

	snap, err := m.TakeSnapshot(ctx, "s1", tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Ranges) != testRanges || snap.Ranges[0].Version != 1 || snap.Ranges[2].Version != 0 ||
		len(snap.Ranges[0].SSTables) != 1 || snap.Ranges[0].SSTables[0].Key != "a" || len(snap.Ranges[2].SSTables) != 0 {
		t.Fatalf("snapshot %+v", snap)
	}
	if _, err := m.TakeSnapshot(ctx, "s1", tbl); !errors.Is(err, ErrExists) {
		t.Fatalf("second snapshot s1: %v", err)
	}
	if _, err := m.TakeSnapshot(ctx, "no spaces", tbl); !errors.Is(err, ErrInvalid) {
		t.Fatalf("snapshot with a bad name: %v", err)
	}
	// The snapshot is archived with the catalog.
	if _, err := e.store.Head(ctx, fmt.Sprintf("manifest/c1_snapshots/s.s1.%s/%020d", tbl.ID, 1)); err != nil {
		t.Fatalf("archived snapshot: %v", err)
	}

	// Later: a compaction replaces a with c, a flush adds d.
	clock.Add(time.Minute)
	commit(Commit{Range: 0, Add: []SSTable{sst("c", lo0, hi0)}, Remove: []string{"a"}})
	commit(Commit{Range: 1, Add: []SSTable{sst("d", lo1, hi1)}})
	pinned, err := m.PinnedKeys(ctx)
	if err != nil || !hasExactly(pinned, "a", "b") {
		t.Fatalf("pinned %v, %v", pinned, err)
	}

	if err := m.RestoreSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if got := liveKeys(t, m, tbl.ID, 0); !slices.Equal(got, []string{"a"}) {
		t.Errorf("range 0 after restore: %v", got)
	}
	if got := liveKeys(t, m, tbl.ID, 1); !slices.Equal(got, []string{"b"}) {
		t.Errorf("range 1 after restore: %v", got)
	}
	gs, err := m.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, g := range gs {
		reasons[g.Key] = g.Reason
	}
	if want := map[string]string{"c": ReasonRestored, "d": ReasonRestored}; fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Errorf("garbage after restore %v, want %v (a back to life)", reasons, want)
	}
	_, v0, err := getVersion(ctx, m.sstables, sstablesKey(tbl.ID, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RestoreSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if _, v, _ := getVersion(ctx, m.sstables, sstablesKey(tbl.ID, 0)); v != v0 {
		t.Errorf("a second restore changed range 0: version %d, was %d", v, v0)
	}

	snaps, err := m.Snapshots(ctx)
	if err != nil || len(snaps) != 1 || snaps[0].Name != "s1" || snaps[0].Definition == nil || snaps[0].Definition.Columns[0].Name != "k" {
		t.Fatalf("snapshots %+v, %v", snaps, err)
	}
	if err := m.DropSnapshot(ctx, "s1", tbl.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.DropSnapshot(ctx, "s1", tbl.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second drop: %v", err)
	}
	if pinned, err := m.PinnedKeys(ctx); err != nil || len(pinned) != 0 {
		t.Fatalf("pinned after the drop: %v, %v", pinned, err)
	}
}

// hasExactly reports whether set holds exactly keys.
func hasExactly(set map[string]bool, keys ...string) bool {
	if len(set) != len(keys) {
		return false
	}
	for _, k := range keys {
		if !set[k] {
			return false
		}
	}
	return true
}
