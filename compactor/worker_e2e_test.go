package compactor

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

// TestEndToEnd writes through an ingest node, flushes several times to
// pile SSTables up in L0, then plans, queues, runs and commits their
// compaction: the flushes leave the live set for the garbage list, and
// reads through engine.Local see the same rows before and after.
func TestEndToEnd(t *testing.T) {
	const ranges, flushes = 2, 5
	ctx := context.Background()
	env := newNodeEnv(t, ranges, nil)
	js, store, m, view, node, e, tbl := env.js, env.store, env.m, env.view, env.node, env.e, env.table

	const colV = 3
	ts := int64(1)
	for f := range flushes {
		var entries []engine.Entry
		for p := range 20 {
			pk := fmt.Sprintf("p%02d", p)
			for ck := range 5 {
				if (p+ck+f)%7 == 0 && f > 0 {
					// Delete a row written by an earlier flush.
					r := model.Row{Deletion: model.Deletion{MarkedForDeleteAt: ts, LocalDeletionTime: time.Now().Unix()}}
					entries = append(entries, engine.Entry{Key: e2eRowKey(t, pk, int64(ck)), Value: model.AppendRow(nil, &r)})
				} else {
					r := model.Row{
						Liveness: model.Liveness{Present: true, Timestamp: ts},
						Cells:    []model.Cell{{Column: colV, Timestamp: ts, Value: fmt.Appendf(nil, "v%d-%d-%d", p, ck, f)}},
					}
					entries = append(entries, engine.Entry{Key: e2eRowKey(t, pk, int64(ck)), Value: model.AppendRow(nil, &r)})
				}
				ts++
			}
		}
		if err := e.Apply(ctx, &engine.Mutation{Table: tbl, Entries: entries}); err != nil {
			t.Fatal(err)
		}
		flushNode(t, node, tbl)
	}
	scan := func() []engine.Partition {
		t.Helper()
		page, err := e.Scan(ctx, engine.Scan{Table: tbl, First: math.MinInt64, Last: math.MaxInt64, Now: time.Now().Unix()})
		if err != nil {
			t.Fatal(err)
		}
		return page.Partitions
	}
	before := scan()
	if len(before) != 20 {
		t.Fatalf("%d partitions before compaction", len(before))
	}
	var inputs []manifest.SSTable
	for r := range ranges {
		in := view.SSTablesInRange(tbl, r)
		if len(in) != flushes {
			t.Fatalf("range %d: %d sstables after %d flushes", r, len(in), flushes)
		}
		inputs = append(inputs, in...)
	}

	q, err := OpenQueue(ctx, js, "c1", QueueOptions{AckWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	planner, err := NewPlanner(view, PlannerConfig{Interval: time.Second, JobTimeout: time.Minute},
		PlannerOptions{Holder: "c-1", Submit: q.Submit, Running: q.Running})
	if err != nil {
		t.Fatal(err)
	}
	n, err := planner.Tick(ctx)
	if err != nil || n != ranges {
		t.Fatalf("planned %d jobs, %v; want one per range", n, err)
	}
	if n, err := planner.Tick(ctx); err != nil || n != 0 {
		t.Fatalf("second pass planned %d jobs, %v", n, err)
	}
	w, err := NewWorker(q, m, WorkerOptions{Store: store, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for range ranges {
		if ok, err := w.RunOne(ctx, time.Second); !ok || err != nil {
			t.Fatalf("RunOne: %v, %v", ok, err)
		}
	}
	if s, err := q.Stats(ctx); err != nil || s.Jobs != 0 {
		t.Fatalf("queue after the jobs: %+v, %v", s, err)
	}
	gs, err := m.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	garbage := map[string]string{}
	for _, g := range gs {
		garbage[g.Key] = g.Reason
	}
	for _, in := range inputs {
		if garbage[in.Key] != manifest.ReasonRemoved {
			t.Fatalf("input %s: garbage reason %q", in.Key, garbage[in.Key])
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for r := range ranges {
		for {
			live := view.SSTablesInRange(tbl, r)
			if len(live) == 1 && live[0].Level == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("range %d: the view shows %+v", r, live)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if after := scan(); !reflect.DeepEqual(after, before) {
		t.Fatalf("reads changed by the compaction:\nbefore %+v\nafter  %+v", before, after)
	}
	// The flushes' positions are still covered: the node's commitlog
	// replay would not start over.
	ssts, err := m.SSTables(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	covers := 0
	for _, s := range ssts {
		covers += len(s.Covers)
	}
	wantCovers := 0
	for _, in := range inputs {
		wantCovers += len(in.Covers)
	}
	if covers != wantCovers {
		t.Fatalf("%d flush positions after the compaction, %d before", covers, wantCovers)
	}
}

func e2eRowKey(t *testing.T, pk string, ck int64) []byte {
	t.Helper()
	return rowKey(keys.AppendPartitionPrefix(nil, token.Murmur3([]byte(pk)), []byte(pk)), ck)
}

// flushNode flushes every shard's memtables and waits until none holds
// table's entries.
func flushNode(t *testing.T, node *ingest.Node, table uuid.UUID) {
	t.Helper()
	// Truncating a table that holds nothing starts a new memtable and
	// queues the others for flush.
	const other storage.TableID = 0xfffffff0
	for i := range node.Shards() {
		if err := node.Shard(i).Truncate(context.Background(), other); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		it := node.NewIter(storage.TableIDOf(table), nil, nil)
		empty := !it.First()
		err := it.Error()
		it.Close()
		if err != nil {
			t.Fatal(err)
		}
		if empty {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("memtables not flushed after 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// nodeEnv is what the compaction tests run against: an embedded NATS with
// a manifest of ranges ranges and the table ks.t (pk text, ck bigint, v
// text), its View, a file bucket, one ingest node whose flushes go through
// the View, and engine.Local over it.
type nodeEnv struct {
	js    jetstream.JetStream
	store objectstore.Store
	m     *manifest.Manifest
	view  *manifest.View
	node  *ingest.Node
	e     *engine.Local
	table uuid.UUID
}

// newNodeEnv starts a nodeEnv; opts are the table's options (nil: the
// defaults).
func newNodeEnv(t *testing.T, ranges int, opts *manifest.TableOptions) *nodeEnv {
	t.Helper()
	ctx := context.Background()
	js, _ := manifesttest.JetStream(t)
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Open(ctx, js, store, "c1", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, ranges); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, true); err != nil {
		t.Fatal(err)
	}
	tbl, err := m.CreateTable(ctx, manifest.TableSpec{
		Keyspace: "ks", Name: "t",
		Columns:      []manifest.ColumnSpec{{Name: "pk", Type: "text"}, {Name: "ck", Type: "bigint"}, {Name: "v", Type: "text"}},
		PartitionKey: []string{"pk"},
		Clustering:   []manifest.ClusteringSpec{{Name: "ck"}},
		Options:      opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	view, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(view.Close)
	mc := ingest.NewManifestCommitter(m, store, "n1")
	if err := mc.ClaimAll(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := ingest.DefaultConfig()
	cfg.Shards = 1
	cfg.MemtableSize = 1 << 20
	cfg.MemoryLimit = 4 << 20
	cfg.FlushAge = time.Hour
	cfg.WriteTimeout = 10 * time.Second
	cfg.Commitlog.Dir = "commitlog"
	node, err := ingest.OpenNode(ctx, cfg, ingest.NodeDeps{
		FS: vfs.NewMem(), Store: store,
		Committer:  ingest.NewViewCommitter(mc, view),
		Reader:     ingest.NewViewReader(view, tablestore.NewReaderCache(store, nil, 0)),
		Registerer: prometheus.NewRegistry(),
		ChunkSize:  16 << 10,
		Ranges:     ranges,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	e, err := engine.NewLocal(engine.LocalConfig{Node: node, View: view, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return &nodeEnv{js: js, store: store, m: m, view: view, node: node, e: e, table: tbl.ID}
}
