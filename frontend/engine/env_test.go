package engine

import (
	"context"
	"encoding/binary"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/cqltype"
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

const (
	testRanges = 4
	colV       = 3 // the column ID of v
	colS       = 4 // the column ID of the static column s
)

// countingStore counts the reads of objects.
type countingStore struct {
	objectstore.Store
	gets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, key)
}

func (s *countingStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	s.gets.Add(1)
	return s.Store.GetRange(ctx, key, off, length)
}

// testEnv is an embedded NATS server with a manifest and its view, a file
// bucket, an ingest node flushing through the manifest, and a Local engine.
type testEnv struct {
	t     testing.TB
	ctx   context.Context
	m     *manifest.Manifest
	view  *manifest.View
	store *countingStore
	node  *ingest.Node
	e     *Local
	table uuid.UUID
}

func newTestEnv(t testing.TB, memtableSize int64) *testEnv {
	t.Helper()
	return newEnvWith(t, envOptions{memtableSize: memtableSize})
}

type envOptions struct {
	memtableSize int64
	// lag > 0 makes flushes reach the view lag after the node thinks them
	// committed (laggingCommitter).
	lag time.Duration
	// tier is the engine's block cache.
	tier cache.Tier
	// store holds the manifest's archives and the SSTables; nil is a file
	// bucket in a temporary directory.
	store objectstore.Store
}

// laggingCommitter acknowledges a flush at once and records it in the
// manifest lag later, as a View behind the manifest would show it.
type laggingCommitter struct {
	*ingest.ManifestCommitter
	lag time.Duration
	wg  sync.WaitGroup
}

func (c *laggingCommitter) Commit(ctx context.Context, f ingest.Flush) error {
	c.wg.Go(func() {
		time.Sleep(c.lag)
		c.ManifestCommitter.Commit(context.Background(), f)
	})
	return nil
}

// openCatalog opens the manifest of cluster c1 on js with testRanges ranges
// and the table ks.t (pk text, ck bigint, v text, s text static), and watches
// it.
func openCatalog(t testing.TB, ctx context.Context, js jetstream.JetStream, store objectstore.Store) (*manifest.Manifest, uuid.UUID, *manifest.View) {
	t.Helper()
	m, err := manifest.Open(ctx, js, store, "c1", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, testRanges); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, true); err != nil {
		t.Fatal(err)
	}
	tbl, err := m.CreateTable(ctx, manifest.TableSpec{
		Keyspace: "ks", Name: "t",
		Columns: []manifest.ColumnSpec{
			{Name: "pk", Type: "text"}, {Name: "ck", Type: "bigint"},
			{Name: "v", Type: "text"}, {Name: "s", Type: "text", Static: true},
		},
		PartitionKey: []string{"pk"},
		Clustering:   []manifest.ClusteringSpec{{Name: "ck"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	view, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(view.Close)
	return m, tbl.ID, view
}

func newEnvWith(t testing.TB, o envOptions) *testEnv {
	t.Helper()
	ctx := context.Background()
	js, _ := manifesttest.JetStream(t)
	bucket := o.store
	if bucket == nil {
		var err error
		if bucket, err = objectstore.NewFile(vfs.Default, t.TempDir(), nil); err != nil {
			t.Fatal(err)
		}
	}
	store := &countingStore{Store: bucket}
	m, tbl, view := openCatalog(t, ctx, js, store)
	mc := ingest.NewManifestCommitter(m, store, "n1")
	if err := mc.ClaimAll(ctx); err != nil {
		t.Fatal(err)
	}
	var committer ingest.FlushCommitter = mc
	if o.lag > 0 {
		lc := &laggingCommitter{ManifestCommitter: mc, lag: o.lag}
		t.Cleanup(lc.wg.Wait) // after the node is closed
		committer = lc
	}
	cfg := ingest.DefaultConfig()
	cfg.Shards = 2
	cfg.MemtableSize = o.memtableSize
	cfg.MemoryLimit = 4 * o.memtableSize
	cfg.FlushAge = time.Hour
	cfg.WriteTimeout = 10 * time.Second
	cfg.FlushMinBackoff = 5 * time.Millisecond
	cfg.FlushMaxBackoff = 50 * time.Millisecond
	cfg.Commitlog.Dir = "commitlog"
	cfg.Commitlog.SegmentSize = 256 << 10
	node, err := ingest.OpenNode(ctx, cfg, ingest.NodeDeps{
		FS:         vfs.NewMem(),
		Store:      store,
		Committer:  ingest.NewViewCommitter(committer, view),
		Reader:     ingest.NewViewReader(view, tablestore.NewReaderCache(store, nil, 0)),
		Registerer: prometheus.NewRegistry(),
		ChunkSize:  16 << 10,
		Ranges:     testRanges,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	e, err := NewLocal(LocalConfig{Node: node, View: view, Store: store, Tier: o.tier})
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{t: t, ctx: ctx, m: m, view: view, store: store, node: node, e: e, table: tbl}
}

// flush flushes every shard's memtables and waits until none holds the
// table's entries: reads then come from SSTables only.
func (te *testEnv) flush() {
	te.t.Helper()
	// Truncating a table that holds nothing starts a new memtable and
	// queues the others for flush.
	const other storage.TableID = 0xfffffff0
	for i := range te.node.Shards() {
		if err := te.node.Shard(i).Truncate(te.ctx, other); err != nil {
			te.t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		it := te.node.NewIter(storage.TableIDOf(te.table), nil, nil)
		empty := !it.First()
		err := it.Error()
		it.Close()
		if err != nil {
			te.t.Fatal(err)
		}
		if empty {
			return
		}
		if time.Now().After(deadline) {
			te.t.Fatal("memtables not flushed after 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (te *testEnv) apply(entries ...Entry) {
	te.t.Helper()
	if err := te.e.Apply(te.ctx, &Mutation{Table: te.table, Entries: entries}); err != nil {
		te.t.Fatal(err)
	}
}

var ckTypes = []*cqltype.Type{cqltype.BigintType}

func prefixOf(pk string) []byte {
	return keys.AppendPartitionPrefix(nil, token.Murmur3([]byte(pk)), []byte(pk))
}

func ckBytes(ck int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(ck)) }

func rowKey(pk string, ck int64) []byte {
	k, err := keys.RowKey(nil, token.Murmur3([]byte(pk)), []byte(pk), [][]byte{ckBytes(ck)}, ckTypes, []bool{false})
	if err != nil {
		panic(err)
	}
	return k
}

func headerKey(pk string) []byte { return keys.HeaderKey(nil, token.Murmur3([]byte(pk)), []byte(pk)) }

// bound is the key of an inclusive start (Before) or end (After) at ck.
func bound(pk string, ck int64, kind keys.BoundKind) []byte {
	b, err := keys.AppendBound(nil, prefixOf(pk), [][]byte{ckBytes(ck)}, ckTypes, []bool{false}, kind)
	if err != nil {
		panic(err)
	}
	return b
}

// insert is an INSERT of v at ts, expiring after ttl seconds from now if
// ttl > 0.
func insert(pk string, ck, ts int64, v string, ttl int32, now int64) Entry {
	r := model.Row{
		Liveness: model.Liveness{Present: true, Timestamp: ts},
		Cells:    []model.Cell{{Column: colV, Timestamp: ts, Value: []byte(v)}},
	}
	if ttl > 0 {
		r.Liveness.TTL, r.Liveness.Expires = ttl, now+int64(ttl)
		r.Cells[0].TTL, r.Cells[0].LocalDeletionTime = ttl, now+int64(ttl)
	}
	return Entry{Key: rowKey(pk, ck), Value: model.AppendRow(nil, &r)}
}

func deleteRow(pk string, ck, ts, now int64) Entry {
	r := model.Row{Deletion: model.Deletion{MarkedForDeleteAt: ts, LocalDeletionTime: now}}
	return Entry{Key: rowKey(pk, ck), Value: model.AppendRow(nil, &r)}
}

// deleteRange deletes the rows with from <= ck <= to.
func deleteRange(pk string, from, to, ts, now int64) Entry {
	start, err := ClusteringOf(bound(pk, from, keys.Before))
	if err != nil {
		panic(err)
	}
	end, err := ClusteringOf(bound(pk, to, keys.After))
	if err != nil {
		panic(err)
	}
	h := model.Header{RangeTombstones: []model.RangeTombstone{{
		Start: start, End: end, Deletion: model.Deletion{MarkedForDeleteAt: ts, LocalDeletionTime: now},
	}}}
	return Entry{Key: headerKey(pk), Value: model.AppendHeader(nil, &h)}
}

func deletePartition(pk string, ts, now int64) Entry {
	h := model.Header{Deletion: model.Deletion{MarkedForDeleteAt: ts, LocalDeletionTime: now}}
	return Entry{Key: headerKey(pk), Value: model.AppendHeader(nil, &h)}
}

func setStatic(pk string, ts int64, v string) Entry {
	h := model.Header{Static: model.Row{Cells: []model.Cell{{Column: colS, Timestamp: ts, Value: []byte(v)}}}}
	return Entry{Key: headerKey(pk), Value: model.AppendHeader(nil, &h)}
}

// values returns the ck and v of each row of p.
func values(t testing.TB, p *Partition) (cks []int64, vs []string) {
	t.Helper()
	for _, r := range p.Rows {
		c, err := keys.DecodeClustering(r.Key, ckTypes, []bool{false})
		if err != nil {
			t.Fatal(err)
		}
		cks = append(cks, int64(binary.BigEndian.Uint64(c[0])))
		v := ""
		for _, cell := range r.Row.Cells {
			if cell.Column == colV {
				v = string(cell.Value)
			}
		}
		vs = append(vs, v)
	}
	return cks, vs
}
