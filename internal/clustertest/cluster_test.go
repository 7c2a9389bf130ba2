// Package clustertest runs a Sediment cluster of real processes: nats-server,
// MinIO and two ingest nodes of the built binary, with two frontends
// (engine.Remote) in the test process, and checks that no acknowledged write
// is lost through a kill -9 of a node, a restart of NATS, a stalled bucket
// and a bucket killed and restarted.
package clustertest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/cqltype"
	"github.com/sedimentdb/sediment/engine"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/keys"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/model"
	"github.com/sedimentdb/sediment/objectstore"
	"github.com/sedimentdb/sediment/rpc"
	"github.com/sedimentdb/sediment/token"
)

const (
	cluster = "ct"
	// ranges is the number of token ranges; the test gives the even ones
	// to node a and the odd ones to node b.
	ranges = 4
	// valueSize pads values so that memtables fill after a few hundred
	// writes per shard.
	valueSize = 256
	// memtableSize is the nodes' -ingest.memtable-size.
	memtableSize = 64 << 10
)

// ledger records every write the test sent: attempted holds what any write
// may have left, acked what must be there.
type ledger struct {
	mu               sync.Mutex
	attempted, acked map[string]string
}

// frontend is an engine.Remote with its own NATS connection, manifest and
// View, as a frontend process would have.
type frontend struct {
	m *manifest.Manifest
	v *manifest.View
	e *engine.Remote
}

func newFrontend(t *testing.T, n *testserver.NATSServer, ms *testserver.MinIOServer) *frontend {
	t.Helper()
	ctx := context.Background()
	js, err := jetstream.New(n.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := objectstore.DefaultConfig()
	cfg.Backend, cfg.Endpoint, cfg.Bucket = "minio", ms.Endpoint, ms.Bucket
	cfg.AccessKeyID, cfg.SecretAccessKey, cfg.Insecure = ms.AccessKey, ms.SecretKey, true
	store, err := objectstore.New(ctx, cfg, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Open(ctx, js, store, cluster, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	e, err := engine.NewRemote(engine.RemoteConfig{View: v, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return &frontend{m: m, v: v, e: e}
}

// table is (pk text, ck bigint, v text).
type table struct {
	id  uuid.UUID
	col uint32
}

func createTable(t *testing.T, m *manifest.Manifest) table {
	t.Helper()
	ctx := context.Background()
	if err := m.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := m.CreateTable(ctx, manifest.TableSpec{
		Keyspace: "ks", Name: "t",
		Columns:      []manifest.ColumnSpec{{Name: "pk", Type: "text"}, {Name: "ck", Type: "bigint"}, {Name: "v", Type: "text"}},
		PartitionKey: []string{"pk"},
		Clustering:   []manifest.ClusteringSpec{{Name: "ck"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := tbl.Column("v")
	if !ok {
		t.Fatal("no column v")
	}
	return table{id: tbl.ID, col: v.ID}
}

// mutation i sets v of row (p<i%97>, i): every write has its own key and
// value, so what a read returns names the write that left it.
func (tb table) mutation(i int) (*engine.Mutation, string, string, error) {
	pk := fmt.Sprintf("p%d", i%97)
	c := binary.BigEndian.AppendUint64(nil, uint64(i))
	key, err := keys.RowKey(nil, token.Murmur3([]byte(pk)), []byte(pk), [][]byte{c}, []*cqltype.Type{cqltype.BigintType}, []bool{false})
	if err != nil {
		return nil, "", "", err
	}
	v := fmt.Sprintf("v%d-", i)
	v += strings.Repeat("x", valueSize-len(v))
	value := model.AppendRow(nil, &model.Row{Cells: []model.Cell{{Column: tb.col, Timestamp: int64(1 + i), Value: []byte(v)}}})
	return &engine.Mutation{Table: tb.id, Entries: []ingest.Entry{{Key: key, Value: value}}}, string(key), v, nil
}

// write sends write i through e and records the outcome. It runs on many
// goroutines, so it returns errors rather than failing the test.
func (l *ledger) write(e engine.Engine, tb table, i int) error {
	m, k, v, err := tb.mutation(i)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.attempted[k] = v
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err = e.Apply(ctx, m); err == nil {
		l.mu.Lock()
		l.acked[k] = v
		l.mu.Unlock()
	}
	return err
}

// mustWrite retries write i until it is acknowledged, for at most 30s: the
// bounded wait within which the cluster must take writes again.
func (l *ledger) mustWrite(t *testing.T, e engine.Engine, tb table, i int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := l.write(e, tb, i)
		if err == nil {
			return
		}
		if !rpc.Retriable(err) && !errors.Is(err, ingest.ErrOverloaded) {
			t.Fatalf("write %d: %v, not retriable", i, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("write %d still failing after 30s: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// concurrently runs write i for i in [from, to) on workers goroutines and
// returns the errors by i; a worker stops after its first error for which
// stop is true.
func (l *ledger) concurrently(e engine.Engine, tb table, from, to, workers int, stop func(error) bool) map[int]error {
	next := make(chan int)
	var mu sync.Mutex
	errs := map[int]error{}
	var wg sync.WaitGroup
	quit := make(chan struct{})
	var once sync.Once
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := l.write(e, tb, i); err != nil {
					mu.Lock()
					errs[i] = err
					mu.Unlock()
					if stop != nil && stop(err) {
						once.Do(func() { close(quit) })
						return
					}
				}
			}
		})
	}
feed:
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case <-quit:
			break feed
		}
	}
	close(next)
	wg.Wait()
	return errs
}

func (l *ledger) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// scanAll reads every row of the table through e, retrying the whole scan
// on retriable errors for at most 30s.
func scanAll(t *testing.T, e engine.Engine, tb table) map[string]string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := scanOnce(e, tb)
		if err == nil {
			return got
		}
		if !rpc.Retriable(err) || time.Now().After(deadline) {
			t.Fatalf("scan: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func scanOnce(e engine.Engine, tb table) (map[string]string, error) {
	out := map[string]string{}
	var after []byte
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		page, err := e.Scan(ctx, engine.Scan{Table: tb.id, First: -1 << 63, Last: 1<<63 - 1, After: after, Limit: 500, Now: 1})
		cancel()
		if err != nil {
			return nil, err
		}
		for _, p := range page.Partitions {
			for _, r := range p.Rows {
				for _, c := range r.Row.Cells {
					if c.Column == tb.col {
						out[string(r.Key)] = string(c.Value)
					}
				}
			}
		}
		if after = page.Next; after == nil {
			return out, nil
		}
	}
}

// check reads everything through e: every acknowledged write is there with
// its value, and nothing is there that no write sent. One read decides: a
// frontend whose View trails the node's waits for it (rpc.Page.Mark), so a
// write the read misses is lost.
func (l *ledger) check(t *testing.T, what string, e engine.Engine, tb table) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	got := scanAll(t, e, tb)
	for k, g := range got {
		if v, ok := l.attempted[k]; !ok || g != v {
			t.Fatalf("%s: read %q, which no write sent", what, g)
		}
	}
	var missing []string
	for k, v := range l.acked {
		if _, ok := got[k]; !ok {
			missing = append(missing, v[:strings.IndexByte(v, '-')])
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s: %d acknowledged writes lost (e.g. %v); %d rows read, %d acknowledged", what, len(missing), missing[:min(5, len(missing))], len(got), len(l.acked))
	}
	t.Logf("%s: %d rows read, %d writes acknowledged, %d sent", what, len(got), len(l.acked), len(l.attempted))
}

func TestCluster(t *testing.T) {
	bin := buildSediment(t)
	ns := testserver.NATS(t)
	ms := testserver.MinIO(t)
	ctx := context.Background()

	// Two nodes split the ranges: a starting node claims every free range
	// and every range it owns already, so the test fixes the node IDs and
	// gives each node half of the ranges before either starts.
	a := newFrontend(t, ns, ms)
	if err := a.m.InitRanges(ctx, ranges); err != nil {
		t.Fatal(err)
	}
	nodes := []*node{newNode(t, bin, "node-a", ns, ms, cluster), newNode(t, bin, "node-b", ns, ms, cluster)}
	for r := range ranges {
		if _, err := a.m.Assign(ctx, r, nodes[r%2].id); err != nil {
			t.Fatal(err)
		}
	}
	tb := createTable(t, a.m)
	for _, nd := range nodes {
		nd.start(t)
	}
	b := newFrontend(t, ns, ms)
	for _, f := range []*frontend{a, b} {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := f.v.WaitFor(wctx, func(v *manifest.View) bool {
			if v.Table("ks", "t") == nil || len(v.Members()) != 2 {
				return false
			}
			for r := range ranges {
				if o, ok := v.Ownership(r); !ok || o.Owner != nodes[r%2].id {
					return false
				}
			}
			return true
		})
		cancel()
		if err != nil {
			t.Fatalf("the frontend's View does not show the table, both members and the split ranges: %v", err)
		}
	}
	l := &ledger{attempted: map[string]string{}, acked: map[string]string{}}

	// 1. Concurrent writes through A, all read through B.
	if errs := l.concurrently(a.e, tb, 0, 400, 8, nil); len(errs) != 0 {
		t.Fatalf("%d writes failed on a healthy cluster, e.g. %v", len(errs), errs)
	}
	l.check(t, "healthy", b.e, tb)

	// 2. kill -9 node b during writes, then restart it on the same data
	// directory and addresses.
	done := make(chan map[int]error)
	go func() { done <- l.concurrently(a.e, tb, 400, 1400, 8, nil) }()
	for deadline := time.Now().Add(30 * time.Second); l.ackedCount() < 500; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes acknowledged after 30s", l.ackedCount())
		}
	}
	nodes[1].kill()
	time.Sleep(200 * time.Millisecond)
	nodes[1].start(t)
	for i, err := range <-done {
		if !rpc.Retriable(err) {
			t.Fatalf("write %d during the kill: %v, not retriable", i, err)
		}
	}
	for i := 1400; i < 1500; i++ {
		l.mustWrite(t, a.e, tb, i)
	}
	l.check(t, "after kill -9", b.e, tb)

	// 3. Restart NATS. NATS is not on the write path, so writes go on
	// while it is down; once it is back, the nodes commit flushes again
	// and the frontends' Views see them.
	ns.Stop()
	flushed := len(b.v.SSTables(tb.id))
	for i := 1500; i < 1600; i++ {
		l.mustWrite(t, a.e, tb, i)
	}
	ns.Restart(t)
	for i := 1600; i < 1700; i++ {
		l.mustWrite(t, a.e, tb, i)
	}
	for _, f := range []*frontend{a, b} {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := f.v.WaitFor(wctx, func(v *manifest.View) bool { return len(v.SSTables(tb.id)) > flushed })
		cancel()
		if err != nil {
			t.Fatalf("no flush committed after the NATS restart reached a frontend: %v", err)
		}
	}
	l.check(t, "after NATS restart", b.e, tb)

	// 4. Stall the bucket during writes: writes are acknowledged until the
	// memtables fill, then fail as overloaded, and never hang.
	before := l.ackedCount()
	ms.Pause(t)
	overloaded := func(err error) bool { return errors.Is(err, ingest.ErrOverloaded) }
	errs := l.concurrently(a.e, tb, 1700, 100_000, 8, overloaded)
	ackedPaused := l.ackedCount() - before
	ms.Resume(t)
	if len(errs) == 0 {
		t.Fatal("no write failed with the bucket stalled")
	}
	for i, err := range errs {
		if !overloaded(err) || !rpc.Retriable(err) {
			t.Fatalf("write %d with the bucket stalled: %v, want a retriable ingest.ErrOverloaded", i, err)
		}
	}
	if ackedPaused == 0 {
		t.Fatal("no write was acknowledged with the bucket stalled: the memtables had room")
	}
	t.Logf("bucket stalled: %d writes acknowledged, then %d overloaded", ackedPaused, len(errs))
	for i := 100_000; i < 100_200; i++ {
		l.mustWrite(t, a.e, tb, i)
	}
	l.check(t, "after the bucket came back", b.e, tb)

	// 5. Kill the bucket outright during writes: writes are acknowledged
	// until the memtables fill, then fail as overloaded, and flushes fail.
	// Restarted on the same port and data, with no write to prod them,
	// the nodes flush their backlog by themselves.
	before = l.ackedCount()
	failed := make([]float64, len(nodes))
	for i, nd := range nodes {
		failed[i], _ = nd.metric(t, "sediment_ingest_flush_failures_total")
	}
	ms.Kill()
	errs = l.concurrently(a.e, tb, 200_000, 300_000, 8, overloaded)
	ackedDown := l.ackedCount() - before
	if len(errs) == 0 {
		t.Fatal("no write failed with the bucket down")
	}
	for i, err := range errs {
		if !overloaded(err) || !rpc.Retriable(err) {
			t.Fatalf("write %d with the bucket down: %v, want a retriable ingest.ErrOverloaded", i, err)
		}
	}
	if ackedDown == 0 {
		t.Fatal("no write was acknowledged with the bucket down: the memtables had room")
	}
	flushes := make([]float64, len(nodes))
	for i, nd := range nodes {
		if f, _ := nd.metric(t, "sediment_ingest_flush_failures_total"); f == failed[i] {
			t.Fatalf("node %s counts no failed flush with the bucket down", nd.id)
		}
		flushes[i], _ = nd.metric(t, "sediment_ingest_flushes_total")
	}
	t.Logf("bucket down: %d writes acknowledged, then %d overloaded", ackedDown, len(errs))
	ms.Restart(t)
	for i, nd := range nodes {
		deadline := time.Now().Add(60 * time.Second)
		for {
			done, _ := nd.metric(t, "sediment_ingest_flushes_total")
			// Only an active memtable may be left: no flush is pending.
			_, mem := nd.metric(t, "sediment_ingest_memtable_bytes")
			if done > flushes[i] && mem <= memtableSize {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s: %v flushes since the bucket came back, %v bytes in its largest shard's memtables, after 60s", nd.id, done-flushes[i], mem)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i := 300_000; i < 300_200; i++ {
		l.mustWrite(t, a.e, tb, i)
	}
	l.check(t, "after the bucket was restarted", b.e, tb)

	// A clean stop flushes every memtable; after the restart nothing is
	// replayed, so every row is read from the SSTables in the bucket.
	for _, nd := range nodes {
		nd.stop(t)
	}
	stopped := len(b.v.SSTables(tb.id))
	for _, nd := range nodes {
		nd.start(t)
	}
	if stopped == 0 {
		t.Fatal("no SSTable committed after the clean stops")
	}
	l.check(t, "after a flush and restart", b.e, tb)
}
