// Package clustertest runs a Sediment cluster of real processes: nats-server,
// MinIO, two ingest nodes and two frontends of the built binary, and talks
// to it only as a client would, through CQL with the gocql driver: it
// creates the schema and writes through frontend A and reads through
// frontend B. It checks that no acknowledged write is lost through a kill
// -9 of an ingest node, a restart of NATS, a stalled bucket and a bucket
// killed and restarted.
//
// The test process keeps one manifest handle of its own, as an operator's
// tool would: to split the token ranges between the ingest nodes before
// they start, and to watch the catalog (members, ownership, SSTables).
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
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
// may have left, acked what must be there, both by "pk/ck".
type ledger struct {
	mu               sync.Mutex
	attempted, acked map[string]string
}

// observer is the test's own manifest handle and View.
type observer struct {
	m *manifest.Manifest
	v *manifest.View
}

func newObserver(t *testing.T, n natsEndpoint, ms *testserver.MinIOServer) *observer {
	t.Helper()
	return newObserverReplicas(t, n, ms, 1)
}

// newObserverReplicas is newObserver for a cluster whose catalog has
// replicas replicas (-manifest.replicas), which it creates with them.
func newObserverReplicas(t *testing.T, n natsEndpoint, ms *testserver.MinIOServer, replicas int) *observer {
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
	m, err := manifest.Open(ctx, js, store, cluster, manifest.Options{Replicas: replicas})
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return &observer{m: m, v: v}
}

// awaitCatalog waits until every bucket of the catalog answers again, as
// an operator waits for NATS to recover before replacing a node: a process
// opens them all as it starts, and after a NATS server restarts JetStream
// needs a while to elect their leaders.
func awaitCatalog(t *testing.T, n natsEndpoint, ms *testserver.MinIOServer, replicas int) {
	t.Helper()
	js, err := jetstream.New(n.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := objectstore.DefaultConfig()
	cfg.Backend, cfg.Endpoint, cfg.Bucket = "minio", ms.Endpoint, ms.Bucket
	cfg.AccessKeyID, cfg.SecretAccessKey, cfg.Insecure = ms.AccessKey, ms.SecretKey, true
	store, err := objectstore.New(context.Background(), cfg, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, last = manifest.Open(ctx, js, store, cluster, manifest.Options{Replicas: replicas})
		cancel()
		if last == nil {
			return
		}
	}
	t.Fatalf("the catalog does not answer a minute after NATS came back: %v", last)
}

// createSchema creates ks.t, the table the ledger writes, through s.
func createSchema(t *testing.T, s *gocql.Session) {
	t.Helper()
	for _, stmt := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (pk text, ck bigint, v text, PRIMARY KEY (pk, ck))",
	} {
		if err := s.Query(stmt).Exec(); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// session connects gocql to frontend f only: the frontends list each other
// in system.peers, and the driver would otherwise spread the queries over
// both. The driver retries nothing, so that the ledger sees every error.
func session(t *testing.T, f *node, keyspace string) *gocql.Session {
	t.Helper()
	host, p, _ := net.SplitHostPort(f.cqlAddr)
	port, _ := strconv.Atoi(p)
	c := gocql.NewCluster(host)
	c.Port = port
	c.Keyspace = keyspace
	c.Consistency = gocql.One
	c.Timeout = 20 * time.Second
	c.ConnectTimeout = 10 * time.Second
	c.NumConns = 2
	c.RetryPolicy = nil
	c.HostFilter = gocql.HostFilterFunc(func(h *gocql.HostInfo) bool { return h.Port() == port })
	s, err := c.CreateSession()
	if err != nil {
		t.Fatalf("connecting gocql to %s: %v", f.id, err)
	}
	t.Cleanup(s.Close)
	return s
}

// code returns the CQL error code of err, or -1 if the server sent none.
func code(err error) int {
	var re gocql.RequestError
	if errors.As(err, &re) {
		return re.Code()
	}
	return -1
}

// overloaded reports whether err is how a frontend reports that the owner
// refused a write for want of memtable memory (storage.ErrOverloaded): as
// Overloaded, or as a WriteTimeout if the write's own deadline came first.
func overloaded(err error) bool {
	c := code(err)
	return c == gocql.ErrCodeOverloaded || c == gocql.ErrCodeWriteTimeout
}

// connLost reports whether err is how a frontend reports today that its
// connection to the owner broke with the write in flight (rpc.ErrConnLost, a
// storage.ErrTimeout): a Server_error with the RPC client's message. The
// write may or may not have been applied. (Cassandra would call it a
// WriteTimeout, which retriableWrite accepts as well.)
func connLost(err error) bool {
	var re gocql.RequestError
	return errors.As(err, &re) && re.Code() == gocql.ErrCodeServer && strings.HasPrefix(re.Message(), "rpc: connection lost")
}

// retriableWrite reports whether err is a failure after which the same
// write may succeed: an overload, an owner that cannot be reached, or a
// connection to it lost: the forms storage.Retriable's errors take in CQL.
func retriableWrite(err error) bool {
	return overloaded(err) || code(err) == gocql.ErrCodeUnavailable || connLost(err)
}

// retriableRead is retriableWrite for reads.
func retriableRead(err error) bool {
	c := code(err)
	return c == gocql.ErrCodeOverloaded || c == gocql.ErrCodeReadTimeout || c == gocql.ErrCodeUnavailable
}

const insert = "INSERT INTO t (pk, ck, v) VALUES (?, ?, ?) USING TIMESTAMP ?"

// row i is (p<i%97>, i) with a value of its own, so that what a read
// returns names the write that left it.
func row(i int) (pk string, key, v string) {
	pk = fmt.Sprintf("p%d", i%97)
	v = fmt.Sprintf("v%d-", i)
	v += strings.Repeat("x", valueSize-len(v))
	return pk, fmt.Sprintf("%s/%d", pk, i), v
}

// write sends write i through s and records the outcome. It runs on many
// goroutines, so it returns errors rather than failing the test.
func (l *ledger) write(s *gocql.Session, i int) error {
	pk, k, v := row(i)
	l.mu.Lock()
	l.attempted[k] = v
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.Query(insert, pk, int64(i), v, int64(1+i)).WithContext(ctx).Exec()
	if err == nil {
		l.mu.Lock()
		l.acked[k] = v
		l.mu.Unlock()
	}
	return err
}

// mustWriteAll writes i for i in [from, to) on workers goroutines, retrying
// each write until it is acknowledged, for at most 30s: the bounded wait
// within which the cluster must take writes again.
func (l *ledger) mustWriteAll(t *testing.T, s *gocql.Session, from, to, workers int) {
	t.Helper()
	l.mustWriteAllIf(t, s, from, to, workers, retriableWrite)
}

// mustWriteAllIf is mustWriteAll, retrying the errors retriable accepts.
func (l *ledger) mustWriteAllIf(t *testing.T, s *gocql.Session, from, to, workers int, retriable func(error) bool) {
	t.Helper()
	next := make(chan int)
	var mu sync.Mutex
	var failed []error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				deadline := time.Now().Add(30 * time.Second)
				for {
					err := l.write(s, i)
					if err == nil {
						break
					}
					if !retriable(err) || time.Now().After(deadline) {
						mu.Lock()
						failed = append(failed, fmt.Errorf("write %d: %w", i, err))
						mu.Unlock()
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d writes not acknowledged within 30s or failed for good, e.g. %v", len(failed), failed[0])
	}
}

// concurrently runs write i for i in [from, to) on workers goroutines and
// returns the errors by i; a worker stops after its first error for which
// stop is true.
func (l *ledger) concurrently(s *gocql.Session, from, to, workers int, stop func(error) bool) map[int]error {
	next := make(chan int)
	var mu sync.Mutex
	errs := map[int]error{}
	var wg sync.WaitGroup
	quit := make(chan struct{})
	var once sync.Once
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := l.write(s, i); err != nil {
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

// scanAll reads every row of the table through s, retrying the whole scan
// on retriable errors for at most 30s.
func scanAll(t *testing.T, s *gocql.Session) map[string]string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := scanOnce(s)
		if err == nil {
			return got
		}
		if !retriableRead(err) || time.Now().After(deadline) {
			t.Fatalf("scan: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scanOnce reads the whole table in pages of 500 rows.
func scanOnce(s *gocql.Session) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[string]string{}
	iter := s.Query("SELECT pk, ck, v FROM t").WithContext(ctx).PageSize(500).Iter()
	var (
		pk, v string
		ck    int64
	)
	for iter.Scan(&pk, &ck, &v) {
		out[fmt.Sprintf("%s/%d", pk, ck)] = v
	}
	if err := iter.Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// check reads everything through s: every acknowledged write is there with
// its value, and nothing is there that no write sent. One read decides: a
// frontend whose View trails the node's waits for it (rpc.Page.Mark), so a
// write the read misses is lost.
func (l *ledger) check(t *testing.T, what string, s *gocql.Session) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	got := scanAll(t, s)
	for k, g := range got {
		if v, ok := l.attempted[k]; !ok || g != v {
			t.Fatalf("%s: read %s = %q, which no write sent", what, k, g)
		}
	}
	var missing []string
	for k := range l.acked {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
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
	obs := newObserver(t, ns, ms)
	if err := obs.m.InitRanges(ctx, ranges); err != nil {
		t.Fatal(err)
	}
	nodes := []*node{newNode(t, bin, "node-a", ns, ms, cluster), newNode(t, bin, "node-b", ns, ms, cluster)}
	for r := range ranges {
		if _, err := obs.m.Assign(ctx, r, nodes[r%2].id); err != nil {
			t.Fatal(err)
		}
	}
	fa, fb := newFrontend(t, bin, "frontend-a", ns, ms, cluster), newFrontend(t, bin, "frontend-b", ns, ms, cluster)
	for _, nd := range append(nodes, fa, fb) {
		nd.start(t)
	}

	// The schema, created through A; B serves it once its View has it.
	admin := session(t, fa, "")
	createSchema(t, admin)
	a, b := session(t, fa, "ks"), session(t, fb, "ks")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := b.Query("SELECT pk FROM t LIMIT 1").Exec()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("frontend B does not serve table ks.t 10s after A created it: %v", err)
		}
	}
	// Each session reaches its own frontend only.
	for _, c := range []struct {
		s *gocql.Session
		f *node
	}{{a, fa}, {b, fb}} {
		iter := c.s.Query("SELECT pk FROM t LIMIT 1").Iter()
		h := iter.Host()
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		if got := net.JoinHostPort(h.ConnectAddress().String(), strconv.Itoa(h.Port())); got != c.f.cqlAddr {
			t.Fatalf("the session of %s queried %s", c.f.id, got)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := obs.v.WaitFor(wctx, func(v *manifest.View) bool {
		ids := map[string]bool{}
		for _, m := range v.Members() {
			ids[m.ID] = true
		}
		if !ids["node-a"] || !ids["node-b"] || !ids["frontend-a-cql"] || !ids["frontend-b-cql"] {
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
		t.Fatalf("the manifest does not show both nodes, both frontends and the split ranges: %v", err)
	}
	tb := obs.v.Table("ks", "t")
	if tb == nil {
		t.Fatal("the manifest has no table ks.t")
	}
	l := &ledger{attempted: map[string]string{}, acked: map[string]string{}}

	// 1. Concurrent writes through A, all read through B.
	if errs := l.concurrently(a, 0, 400, 8, nil); len(errs) != 0 {
		t.Fatalf("%d writes failed on a healthy cluster, e.g. %v", len(errs), errs)
	}
	l.check(t, "healthy", b)

	// 2. kill -9 node b during writes, then restart it on the same data
	// directory and addresses.
	done := make(chan map[int]error)
	go func() { done <- l.concurrently(a, 400, 1400, 8, nil) }()
	for deadline := time.Now().Add(30 * time.Second); l.ackedCount() < 500; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes acknowledged after 30s", l.ackedCount())
		}
	}
	nodes[1].kill()
	time.Sleep(200 * time.Millisecond)
	nodes[1].start(t)
	for i, err := range <-done {
		if !retriableWrite(err) {
			t.Fatalf("write %d during the kill: %v, not retriable", i, err)
		}
	}
	l.mustWriteAll(t, a, 1400, 1500, 8)
	l.check(t, "after kill -9", b)

	// 3. Restart NATS. NATS is not on the write path, so writes go on
	// while it is down; once it is back, the nodes commit flushes again,
	// the frontends heartbeat again (/ready), and B's reads, which wait
	// for B's View to reach what the nodes committed, see everything.
	ns.Stop()
	flushed := len(obs.v.SSTables(tb.ID))
	l.mustWriteAll(t, a, 1500, 1600, 8)
	ns.Restart(t)
	l.mustWriteAll(t, a, 1600, 1700, 8)
	wctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	err = obs.v.WaitFor(wctx, func(v *manifest.View) bool { return len(v.SSTables(tb.ID)) > flushed })
	cancel()
	if err != nil {
		t.Fatalf("no flush committed after the NATS restart: %v", err)
	}
	for _, f := range []*node{fa, fb} {
		for deadline := time.Now().Add(30 * time.Second); !f.ready(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s not ready 30s after the NATS restart\n%s", f.id, f.out)
			}
		}
	}
	l.check(t, "after NATS restart", b)

	// 4. Stall the bucket during writes: writes are acknowledged until the
	// memtables fill, then fail as overloaded, and never hang.
	before := l.ackedCount()
	ms.Pause(t)
	errs := l.concurrently(a, 1700, 100_000, 8, overloaded)
	ackedPaused := l.ackedCount() - before
	ms.Resume(t)
	if len(errs) == 0 {
		t.Fatal("no write failed with the bucket stalled")
	}
	for i, err := range errs {
		if !overloaded(err) {
			t.Fatalf("write %d with the bucket stalled: %v, want Overloaded or WriteTimeout", i, err)
		}
	}
	if ackedPaused == 0 {
		t.Fatal("no write was acknowledged with the bucket stalled: the memtables had room")
	}
	t.Logf("bucket stalled: %d writes acknowledged, then %d overloaded", ackedPaused, len(errs))
	l.mustWriteAll(t, a, 100_000, 100_200, 8)
	l.check(t, "after the bucket came back", b)

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
	errs = l.concurrently(a, 200_000, 300_000, 8, overloaded)
	ackedDown := l.ackedCount() - before
	if len(errs) == 0 {
		t.Fatal("no write failed with the bucket down")
	}
	for i, err := range errs {
		if !overloaded(err) {
			t.Fatalf("write %d with the bucket down: %v, want Overloaded or WriteTimeout", i, err)
		}
	}
	if ackedDown == 0 {
		t.Fatal("no write was acknowledged with the bucket down: the memtables had room")
	}
	flushes := make([]float64, len(nodes))
	for i, nd := range nodes {
		// A flush fails once its upload has run out of retries, which can
		// be after the writes were refused: wait for it, bounded.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if f, _ := nd.metric(t, "sediment_ingest_flush_failures_total"); f != failed[i] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s counts no failed flush 30s into the bucket being down", nd.id)
			}
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
	l.mustWriteAll(t, a, 300_000, 300_200, 8)
	l.check(t, "after the bucket was restarted", b)

	// A clean stop flushes every memtable; after the restart nothing is
	// replayed, so every row is read from the SSTables in the bucket.
	for _, nd := range nodes {
		nd.stop(t)
	}
	stopped := len(obs.v.SSTables(tb.ID))
	for _, nd := range nodes {
		nd.start(t)
	}
	if stopped == 0 {
		t.Fatal("no SSTable committed after the clean stops")
	}
	l.check(t, "after a flush and restart", b)
}
