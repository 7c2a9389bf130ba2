package gc

import (
	"testing"
	"time"

	"github.com/sedimentdb/sediment/manifest"
)

// TestSnapshotPinsGarbage: garbage a snapshot names outlives its grace
// period, in the garbage pass and in the orphan sweep, until the snapshot
// is dropped.
func TestSnapshotPinsGarbage(t *testing.T) {
	e := newEnv(t)
	e.commit("snap/0", 0)
	tbl := &manifest.Table{ID: e.table, Name: "t", Keyspace: "ks"}
	if _, err := e.m.TakeSnapshot(e.ctx, "before", tbl); err != nil {
		t.Fatal(err)
	}
	e.commit("other/1", 1) // after the snapshot: not pinned
	if _, err := e.m.DropSSTables(e.ctx, e.table); err != nil {
		t.Fatal(err)
	}
	c := e.collector("n1", nil)
	e.clock.Add(2 * time.Hour)
	st, err := c.Collect(e.ctx)
	if err != nil || st.Deleted != 1 || st.Pinned != 1 || st.Waiting != 0 {
		t.Fatalf("pass past grace with a snapshot: %+v, %v", st, err)
	}
	if !e.exists("snap/0") || e.exists("other/1") {
		t.Fatal("the pinned object is gone, or the unpinned one stayed")
	}
	if got := value(t, c.pinned); got != 1 {
		t.Fatalf("pinned gauge %v", got)
	}
	refs, err := c.references(e.ctx)
	if err != nil || !refs["snap/0"] {
		t.Fatalf("orphan sweep references %v (%v): the pinned object would be swept once unlisted", refs, err)
	}

	if err := e.m.DropSnapshot(e.ctx, "before", e.table); err != nil {
		t.Fatal(err)
	}
	st, err = c.Collect(e.ctx)
	if err != nil || st.Deleted != 1 || st.Pinned != 0 {
		t.Fatalf("pass after the snapshot's drop: %+v, %v", st, err)
	}
	if e.exists("snap/0") {
		t.Fatal("snap/0 survived its snapshot's drop")
	}
}
