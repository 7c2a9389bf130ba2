package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/compactor/gc"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// readAll returns the partitions of a whole-ring scan of table, with each
// row's value, as pk -> ck -> v.
func readAll(t testing.TB, ctx context.Context, e Engine, table uuid.UUID, now int64) map[string]map[int64]string {
	t.Helper()
	out := map[string]map[int64]string{}
	s := Scan{Table: table, First: math.MinInt64, Last: math.MaxInt64, Limit: 100, Now: now}
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("scan does not end")
		}
		p, err := e.Scan(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range p.Partitions {
			cks, vs := values(t, &Partition{Rows: part.Rows})
			rows := out[string(part.Key)]
			if rows == nil {
				rows = map[int64]string{}
				out[string(part.Key)] = rows
			}
			for i, ck := range cks {
				rows[ck] = vs[i]
			}
		}
		if p.Next == nil {
			return out
		}
		s.After = p.Next
	}
}

// checkAll compares a whole-ring scan and a Read of every partition of
// want, and of each of absent, with want.
func checkAll(t testing.TB, ctx context.Context, e Engine, table uuid.UUID, now int64, want map[string]map[int64]string, absent ...string) {
	t.Helper()
	got := readAll(t, ctx, e, table, now)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scan:\n got %v\nwant %v", got, want)
	}
	for _, pk := range slices.Concat(slices.Collect(mapKeys(want)), absent) {
		p, err := e.Read(ctx, Slice{Table: table, Key: []byte(pk), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		cks, vs := values(t, p)
		if len(cks) != len(want[pk]) {
			t.Fatalf("read %s: rows %v, want %v", pk, cks, want[pk])
		}
		for i, ck := range cks {
			if want[pk][ck] != vs[i] {
				t.Fatalf("read %s row %d: %q, want %q", pk, ck, vs[i], want[pk][ck])
			}
		}
	}
}

func mapKeys(m map[string]map[int64]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// fillTable writes partitions p0..p5 with rows 0..3 at ts 1, flushes them,
// then writes rows 4..7 at ts 2 that stay in the memtables, and returns the
// keys of the SSTables the flush committed.
func fillTable(t testing.TB, ctx context.Context, e Engine, view *manifest.View, table uuid.UUID, flush func(), now int64) []string {
	t.Helper()
	write := func(from, to, ts int64) {
		for p := range 6 {
			pk := fmt.Sprintf("p%d", p)
			for ck := from; ck < to; ck++ {
				m := &Mutation{Table: table, Entries: []Entry{insert(pk, ck, ts, "old", 0, now)}}
				if err := e.Apply(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	write(0, 4, 1)
	flush()
	write(4, 8, 2)
	var keys []string
	for _, s := range view.SSTables(table) {
		keys = append(keys, s.Key)
	}
	if len(keys) == 0 {
		t.Fatal("the flush committed no SSTable")
	}
	if got := readAll(t, ctx, e, table, now); len(got) != 6 || len(got["p0"]) != 8 {
		t.Fatalf("before truncate: %v", got)
	}
	return keys
}

// garbageKeys returns the object keys on the garbage list of table.
func garbageKeys(t testing.TB, ctx context.Context, m *manifest.Manifest, table uuid.UUID) []string {
	t.Helper()
	gs, err := m.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range gs {
		if g.Table == table {
			out = append(out, g.Key)
		}
	}
	slices.Sort(out)
	return out
}

func TestTruncateLocal(t *testing.T) {
	te := newTestEnv(t, 1<<20)
	now := time.Now().Unix()
	flushed := fillTable(t, te.ctx, te.e, te.view, te.table, te.flush, now)

	if err := te.e.Truncate(te.ctx, te.table); err != nil {
		t.Fatal(err)
	}
	// Gone from the memtables and the SSTables, at once.
	checkAll(t, te.ctx, te.e, te.table, now, map[string]map[int64]string{}, "p0", "p5")
	if live := te.view.SSTables(te.table); len(live) != 0 {
		t.Fatalf("view lists %d sstables after truncate", len(live))
	}
	slices.Sort(flushed)
	if got := garbageKeys(t, te.ctx, te.m, te.table); !slices.Equal(got, flushed) {
		t.Fatalf("garbage %v, want the flushed sstables %v", got, flushed)
	}
	// Their objects stay until collected.
	for _, k := range flushed {
		if _, err := te.store.Head(te.ctx, k); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}

	// Writes after truncate are kept, in memtables and once flushed.
	te.apply(insert("p0", 100, 3, "new", 0, now))
	want := map[string]map[int64]string{"p0": {100: "new"}}
	checkAll(t, te.ctx, te.e, te.table, now, want, "p1")
	te.flush()
	checkAll(t, te.ctx, te.e, te.table, now, want, "p1")

	// A retry is safe; it truncates what came since.
	if err := te.e.Truncate(te.ctx, te.table); err != nil {
		t.Fatal(err)
	}
	checkAll(t, te.ctx, te.e, te.table, now, map[string]map[int64]string{}, "p0")
	if err := te.e.Truncate(te.ctx, te.table); err != nil {
		t.Fatal(err)
	}
	if err := te.e.Truncate(te.ctx, uuid.Nil); !errors.Is(err, ErrInvalidQuery) {
		t.Fatalf("truncate of the nil table: %v", err)
	}
}

// TestTruncateSurvivesRestart truncates, then restarts the ingest nodes
// cleanly and by a crash, under Local and under Remote: replay honours the
// truncation, and the writes made after it stay.
func TestTruncateSurvivesRestart(t *testing.T) {
	for _, remote := range []bool{false, true} {
		t.Run(fmt.Sprintf("remote=%v", remote), func(t *testing.T) {
			e := newRestartEnv(t, remote)
			now := time.Now().Unix()
			flushed := fillTable(t, e.ctx, e.engine(), e.view, e.table, e.flush, now)
			if err := e.engine().Truncate(e.ctx, e.table); err != nil {
				t.Fatal(err)
			}
			slices.Sort(flushed)
			if got := garbageKeys(t, e.ctx, e.m, e.table); !slices.Equal(got, flushed) {
				t.Fatalf("garbage %v, want %v", got, flushed)
			}
			want := map[string]map[int64]string{}
			for _, pk := range []string{"p1", "p4"} {
				if err := e.engine().Apply(e.ctx, &Mutation{Table: e.table, Entries: []Entry{insert(pk, 50, 3, "new", 0, now)}}); err != nil {
					t.Fatal(err)
				}
				want[pk] = map[int64]string{50: "new"}
			}
			checkAll(t, e.ctx, e.engine(), e.table, now, want, "p0")
			for _, n := range e.nodes {
				e.restart(n, false)
			}
			checkAll(t, e.ctx, e.engine(), e.table, now, want, "p0")
			for _, n := range e.nodes {
				e.crash(n)
			}
			checkAll(t, e.ctx, e.engine(), e.table, now, want, "p0")
			for _, n := range e.nodes {
				e.restart(n, true)
			}
			checkAll(t, e.ctx, e.engine(), e.table, now, want, "p0")
		})
	}
}

// TestRemoteTruncateNeedsEveryNode: a Truncate that cannot reach a node
// fails, drops no SSTable, and succeeds once retried with the node back.
func TestRemoteTruncateNeedsEveryNode(t *testing.T) {
	e := newRestartEnv(t, true)
	now := time.Now().Unix()
	flushed := fillTable(t, e.ctx, e.engine(), e.view, e.table, e.flush, now)
	down := e.nodes[1]
	e.stop(down)
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	if err := e.engine().Truncate(ctx, e.table); err == nil {
		t.Fatal("truncate succeeded with a node down")
	}
	if live := e.view.SSTables(e.table); len(live) != len(flushed) {
		t.Fatalf("a failed truncate dropped sstables: %d live of %d", len(live), len(flushed))
	}
	e.start(down)
	if err := e.engine().Truncate(e.ctx, e.table); err != nil {
		t.Fatal(err)
	}
	checkAll(t, e.ctx, e.engine(), e.table, now, map[string]map[int64]string{}, "p0", "p1", "p2")
}

// TestDropSequence runs DROP TABLE and DROP KEYSPACE as the CQL layer
// does: the schema drop, then Truncate of each table; then the collector
// deletes the objects once their grace period is over.
func TestDropSequence(t *testing.T) {
	for _, drop := range []string{"table", "keyspace"} {
		t.Run(drop, func(t *testing.T) { testDropSequence(t, drop) })
	}
}

func testDropSequence(t *testing.T, drop string) {
	te := newTestEnv(t, 1<<20)
	now := time.Now().Unix()
	flushed := fillTable(t, te.ctx, te.e, te.view, te.table, te.flush, now)

	s, err := te.m.Schema(te.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var tables []uuid.UUID
	for _, tbl := range s.Keyspaces["ks"].Tables {
		tables = append(tables, tbl.ID)
	}
	if drop == "table" {
		err = te.m.DropTable(te.ctx, "ks", "t")
	} else {
		err = te.m.DropKeyspace(te.ctx, "ks")
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range tables {
		if err := te.e.Truncate(te.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if s, err = te.m.Schema(te.ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Table("ks", "t"); ok {
		t.Fatal("the dropped table is still in the schema")
	}
	checkAll(t, te.ctx, te.e, te.table, now, map[string]map[int64]string{}, "p0", "p3")
	slices.Sort(flushed)
	if got := garbageKeys(t, te.ctx, te.m, te.table); !slices.Equal(got, flushed) {
		t.Fatalf("garbage %v, want %v", got, flushed)
	}

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := gc.Config{GracePeriod: time.Hour, Interval: time.Second}
	early, err := gc.New(te.m, te.store, cfg, gc.Options{Holder: "early", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := early.Collect(te.ctx); err != nil || st.Deleted != 0 || st.Waiting != len(flushed) {
		t.Fatalf("collection within the grace period: %+v, %v", st, err)
	}
	if err := te.m.ReleaseLease(te.ctx, gc.LeaseName, "early"); err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	late, err := gc.New(te.m, te.store, cfg, gc.Options{Holder: "late", Now: later, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := late.Collect(te.ctx); err != nil || st.Deleted != len(flushed) {
		t.Fatalf("collection after the grace period: %+v, %v", st, err)
	}
	for _, k := range flushed {
		if _, err := te.store.Head(te.ctx, k); !objectstore.IsNotFound(err) {
			t.Fatalf("%s after collection: %v", k, err)
		}
	}
	if got := garbageKeys(t, te.ctx, te.m, te.table); len(got) != 0 {
		t.Fatalf("garbage left after collection: %v", got)
	}
	// Reads after the collection open no deleted object.
	checkAll(t, te.ctx, te.e, te.table, now, map[string]map[int64]string{}, "p0")
}
