package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// TestL0Gauge checks the gauge against a table whose strategy compacts L0
// at 2 SSTables and stops flushes at 4: each range's pressure follows its
// own L0 count, with the table's options, and follows the View as SSTables
// are committed and compacted away.
func TestL0Gauge(t *testing.T) {
	srv, err := manifest.StartEmbedded(filepath.Join(t.TempDir(), "nats"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := manifest.Open(ctx, js, store, "c1", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, testRanges); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, false); err != nil {
		t.Fatal(err)
	}
	opts := manifest.DefaultTableOptions()
	opts.Compaction = map[string]string{"class": "UnifiedCompactionStrategy", "l0_compaction_threshold": "2", "l0_limit": "4"}
	tbl, err := m.CreateTable(ctx, manifest.TableSpec{
		Keyspace: "ks", Name: "t",
		Columns:      []manifest.ColumnSpec{{Name: "pk", Type: "text"}, {Name: "v", Type: "text"}},
		PartitionKey: []string{"pk"},
		Options:      &opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	view, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	g := newL0Gauge(view)
	id := storage.TableIDOf(tbl.ID)

	n := 0
	add := func(r, level int) string {
		t.Helper()
		first, _ := manifest.RangeBounds(r, testRanges)
		n++
		s := manifest.SSTable{Key: fmt.Sprintf("sst/%d", n), Size: 1, Level: level, MinToken: first, MaxToken: first}
		if _, err := m.CommitSSTables(ctx, manifest.Commit{Table: tbl.ID, Range: r, Add: []manifest.SSTable{s}}); err != nil {
			t.Fatal(err)
		}
		return s.Key
	}
	expect := func(r int, want float64) {
		t.Helper()
		waitFor(t, fmt.Sprintf("range %d at pressure %v", r, want), func() bool { return g.L0Pressure(id, r) == want })
	}
	expect(1, 0)
	var l0 []string
	for range 2 {
		l0 = append(l0, add(1, 0))
	}
	add(1, 1) // not L0
	expect(1, 0)
	l0 = append(l0, add(1, 0))
	expect(1, 0.5)
	expect(2, 0)
	l0 = append(l0, add(1, 0), add(1, 0))
	expect(1, 1.5)
	if got := g.L0Pressure(id+1, 1); got != 0 {
		t.Fatalf("unknown table at pressure %v", got)
	}
	// A compaction of L0 into L1 lifts the pressure.
	if _, err := m.CommitSSTables(ctx, manifest.Commit{Table: tbl.ID, Range: 1, Remove: l0}); err != nil {
		t.Fatal(err)
	}
	expect(1, 0)
}

// TestRunIngestPublishesUnflushed checks that an ingest node's heartbeats
// carry the oldest write timestamp its memtables hold per table, and that a
// flush clears it: compaction's purge bound.
func TestRunIngestPublishesUnflushed(t *testing.T) {
	p := startProcess(t, t.TempDir(), ingestFlags...)
	p.waitReady(t)
	defer p.stop(t)
	ctx := context.Background()
	m, id := p.s.manifest, p.s.nodeID
	if u := member(t, m, id).Unflushed; u == nil || len(u) != 0 {
		t.Fatalf("an idle node reports unflushed %v, want an empty map", u)
	}
	tt := createTable(t, m)
	schema, err := m.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	table, found := schema.Table("ks", "t")
	if !found {
		t.Fatal("no table ks.t")
	}
	for ck := int64(5); ck < 25; ck++ { // the row helper writes at 1+ck
		if err := p.s.ingest.Apply(ctx, tt.row(t, fmt.Sprintf("p%d", ck), ck, "v")); err != nil {
			t.Fatal(err)
		}
	}
	oldest := func() int64 {
		since := time.Now()
		var ts int64
		// The heartbeats after since cover every write before it.
		waitFor(t, "a heartbeat", func() bool {
			mems, err := m.Members(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var known bool
			ts, known = ingest.OldestUnflushed(mems, table.ID, since)
			return known
		})
		return ts
	}
	waitFor(t, "the heartbeat to report the oldest write", func() bool { return oldest() == 6 })
	if err := p.s.ingest.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the heartbeat to report the flush", func() bool { return oldest() == math.MaxInt64 })
}
