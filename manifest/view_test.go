package manifest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestViewFollowsChanges(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	if err := m.CreateKeyspace(ctx, "before", simple, true); err != nil {
		t.Fatal(err)
	}
	v, err := e.open("c1").Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.Keyspace("before") == nil {
		t.Fatal("view misses what existed before it started")
	}
	rev0 := v.SSTablesRevision()
	if err := m.CreateKeyspace(ctx, "ks", simple, true); err != nil {
		t.Fatal(err)
	}
	tbl, err := m.CreateTable(ctx, usersSpec("ks", "users"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Assign(ctx, 1, "n1"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl.ID, Range: 1, Add: []SSTable{sst("a", 1, 2)}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Heartbeat(ctx, Member{ID: "n1", Addr: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AcquireLease(ctx, "planner", "n1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := m.DropKeyspace(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	want, _ := m.Schema(ctx)
	err = v.WaitFor(ctx, func(v *View) bool {
		o, ok := v.Ownership(1)
		_, leased := v.Lease("planner")
		return v.SchemaVersion() == want.Version && v.Table("ks", "users") != nil && len(v.SSTables(tbl.ID)) == 1 &&
			ok && o.Owner == "n1" && v.RangeCount() == 2 && len(v.Members()) == 1 && leased
	})
	if err != nil {
		t.Fatalf("view did not catch up: %v", err)
	}
	if v.Keyspace("before") != nil {
		t.Fatal("dropped keyspace still in the view")
	}
	if got := v.Schema(); got.Version != want.Version || len(got.Keyspaces) != 1 {
		t.Fatalf("view schema %+v", got)
	}
	// The sstables revision moved with the commit, and a View loading the
	// bucket afresh reaches the same revision.
	rev1 := v.SSTablesRevision()
	if rev1 <= rev0 {
		t.Fatalf("sstables revision %d after a commit, %d before", rev1, rev0)
	}
	v2, err := e.open("c1").Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	if got := v2.SSTablesRevision(); got != rev1 {
		t.Fatalf("fresh view at sstables revision %d, the following one at %d", got, rev1)
	}
}

func TestViewSurvivesNATSOutage(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	if err := m.CreateKeyspace(ctx, "ks", simple, true); err != nil {
		t.Fatal(err)
	}
	tbl, err := m.CreateTable(ctx, usersSpec("ks", "users"))
	if err != nil {
		t.Fatal(err)
	}
	initRanges(t, m)
	v, err := e.open("c1").Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()

	closedWhileDown, err := e.open("c1").Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	port := e.srv.Port()
	e.stop()
	closed := make(chan struct{})
	go func() { closedWhileDown.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		t.Fatal("Close hangs while NATS is down")
	}
	// The view answers from memory while NATS is gone.
	if v.Table("ks", "users") == nil || v.Table("ks", "users").ID != tbl.ID {
		t.Fatal("view lost its state when NATS went away")
	}
	e.start(port)
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl.ID, Range: testRange, Add: []SSTable{sst("after", 1, 2)}}); err != nil {
		t.Fatal(err)
	}
	if err := m.AlterTable(ctx, "ks", "users", func(t *Table) error { return t.AddColumn("late", "int", false) }); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 25*time.Second)
	defer cancel()
	err = v.WaitFor(wctx, func(v *View) bool {
		t := v.Table("ks", "users")
		_, ok := t.Column("late")
		return ok && len(v.SSTables(tbl.ID)) == 1
	})
	if err != nil {
		t.Fatalf("view did not catch up after NATS came back: %v", err)
	}
}

func TestViewUnknownTable(t *testing.T) {
	e := newEnv(t)
	v, err := e.open("c1").Watch(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
	if v.SSTables(uuid.New()) != nil || v.Table("x", "y") != nil || v.RangeCount() != 0 {
		t.Fatal("empty view answers with data")
	}
	if _, ok := v.Ownership(0); ok {
		t.Fatal("empty view has an owner")
	}
}
