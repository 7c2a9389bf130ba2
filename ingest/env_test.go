package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/streamlog"
	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
	"github.com/sedimentdb/sediment/objectstore/faultstore"
)

// testConfig is small enough that a few hundred rows flush.
func testConfig() Config {
	c := DefaultConfig()
	c.Shards = 1
	c.MemtableSize = 64 << 10
	c.MemoryLimit = 256 << 10
	c.FlushAge = time.Hour
	c.WriteTimeout = 5 * time.Second
	c.FlushMinBackoff = 5 * time.Millisecond
	c.FlushMaxBackoff = 50 * time.Millisecond
	c.Commitlog.Dir = "commitlog"
	c.Commitlog.SegmentSize = 64 << 10
	return c
}

// env is a shard's surroundings: a crashable disk, a bucket that can fail
// and a committer, with hooks to simulate a crash inside a flush.
type env struct {
	t         *testing.T
	cfg       Config
	fs        *vfs.MemFS
	faults    *faultstore.Store
	committer *MemCommitter
	l0        L0Gauge // NodeDeps.L0

	// Hooks run in the flush goroutine; an error fails the step.
	beforeUpload, beforeCommit, afterCommit atomic.Pointer[func() error]

	// js, if set, holds the shard's log (a streamlog on nats) instead of fs.
	js       jetstream.JetStream
	nats     *testserver.NATSServer
	replicas int // of the log's stream; 0 for 1
}

// logKinds are the shard logs that forEachLog runs a test against.
var logKinds = []string{"local", "jetstream"}

// forEachLog runs f against a shard env with each kind of log: the local
// commitlog, and a streamlog on a real nats-server.
func forEachLog(t *testing.T, f func(t *testing.T, e *env)) {
	for _, kind := range logKinds {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			if kind == "jetstream" {
				e.useNATS(testserver.NATS(t))
			}
			f(t, e)
		})
	}
}

// useNATS makes the env's shards log to a streamlog on n.
func (e *env) useNATS(n *testserver.NATSServer) {
	js, err := jetstream.New(n.Connect(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	e.js, e.nats = js, n
}

// openLog is NodeDeps.OpenLog for the env's streamlog, nil for the local
// commitlog.
func (e *env) openLog() func(context.Context, uint32, *slog.Logger) (Log, error) {
	if e.js == nil {
		return nil
	}
	return func(ctx context.Context, shard uint32, logger *slog.Logger) (Log, error) {
		return streamlog.Open(ctx, streamlog.Options{JetStream: e.js, Cluster: "test", Node: "n1", Shard: shard, Replicas: e.replicas, Logger: logger})
	}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	bucket, err := objectstore.NewFile(vfs.NewMem(), "bucket", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, cfg: testConfig(), fs: vfs.NewMem(), faults: faultstore.New(bucket)}
	e.committer = NewMemCommitter(e.faults)
	return e
}

func (e *env) open() *Shard {
	e.t.Helper()
	s, err := Open(context.Background(), e.cfg, 7, NodeDeps{
		FS:         e.fs,
		Store:      hookStore{e.faults, e},
		Committer:  hookCommitter{e.committer, e},
		Reader:     e.committer,
		Registerer: prometheus.NewRegistry(),
		ChunkSize:  4 << 10,
		L0:         e.l0,
		OpenLog:    e.openLog(),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func runHook(p *atomic.Pointer[func() error]) error {
	if h := p.Load(); h != nil {
		return (*h)()
	}
	return nil
}

func setHook(p *atomic.Pointer[func() error], f func() error) { p.Store(&f) }

type hookStore struct {
	objectstore.Store
	e *env
}

func (h hookStore) NewWriter(ctx context.Context, key string) (objectstore.Writer, error) {
	if err := runHook(&h.e.beforeUpload); err != nil {
		return nil, err
	}
	return h.Store.NewWriter(ctx, key)
}

type hookCommitter struct {
	*MemCommitter
	e *env
}

func (h hookCommitter) Commit(ctx context.Context, f Flush) error {
	if err := runHook(&h.e.beforeCommit); err != nil {
		return err
	}
	if err := h.MemCommitter.Commit(ctx, f); err != nil {
		return err
	}
	return runHook(&h.e.afterCommit)
}

var errCrashed = errors.New("test: crashed")

// crasher pulls the plug once: it clones the durable state of the disk and
// from then on fails every hooked step, so that the abandoned shard changes
// nothing the restarted one sees.
type crasher struct {
	mu      sync.RWMutex
	e       *env
	crashed bool
	clone   *vfs.MemFS
	done    chan struct{}
}

func newCrasher(e *env) *crasher { return &crasher{e: e, done: make(chan struct{})} }

func (c *crasher) crash() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.crashed {
		c.crashed = true
		c.clone = c.e.fs.CrashClone()
		close(c.done)
	}
	return errCrashed
}

// write applies m unless the crash happened, reporting whether it was
// acknowledged before the crash.
func (c *crasher) write(s *Shard, m *storage.Mutation) (bool, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.crashed {
		return false, nil
	}
	if err := s.Apply(context.Background(), m); err != nil {
		return false, err
	}
	return true, nil
}

var ckTypes = []*cqltype.Type{cqltype.BigintType}

// rowKey is the key of row ck in partition pk of a table with one bigint
// clustering column.
func rowKey(pk string, ck int64) []byte {
	c := binary.BigEndian.AppendUint64(nil, uint64(ck))
	k, err := keys.RowKey(nil, token.Murmur3([]byte(pk)), []byte(pk), [][]byte{c}, ckTypes, []bool{false})
	if err != nil {
		panic(err)
	}
	return k
}

func rowValue(ts int64, v string) []byte {
	return model.AppendRow(nil, &model.Row{Cells: []model.Cell{{Column: 1, Timestamp: ts, Value: []byte(v)}}})
}

func rowMutation(table storage.TableID, pk string, ck, ts int64, v string) *storage.Mutation {
	return &storage.Mutation{Table: table, Entries: []storage.Entry{{Key: rowKey(pk, ck), Value: rowValue(ts, v)}}}
}

// cellValue returns the value of column 1 of an encoded row.
func cellValue(t testing.TB, value []byte) string {
	t.Helper()
	var r model.Row
	if err := model.DecodeRow(value, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != 1 {
		t.Fatalf("row has %d cells", len(r.Cells))
	}
	return string(r.Cells[0].Value)
}

// contents reads a table as the read path would: the shard's memtables
// merged with the committed SSTables.
func contents(t testing.TB, s *Shard, c TableReader, table storage.TableID) map[string]string {
	t.Helper()
	mem := s.NewIter(table, nil, nil)
	sst, err := c.NewIter(context.Background(), table, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return drain(t, kv.Merging(model.Merge, mem, sst))
}

func drain(t testing.TB, it kv.Iterator) map[string]string {
	t.Helper()
	out := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = cellValue(t, it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// count returns the number of entries of it.
func count(t testing.TB, it kv.Iterator) int {
	t.Helper()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	it.Close()
	return n
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// flushing returns the number of memtables being flushed.
func (s *Shard) flushing() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mems) - 1
}

// streamMessages returns the number of messages on the log subject of the
// env's shard.
func (e *env) streamMessages(t testing.TB) uint64 {
	t.Helper()
	ctx := context.Background()
	st, err := e.js.Stream(ctx, streamlog.StreamName("test"))
	if err != nil {
		t.Fatal(err)
	}
	subject := streamlog.Subject("test", "n1", 7)
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}
