package ingest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sedimentdb/sediment/commitlog"
	"github.com/sedimentdb/sediment/keys"
	"github.com/sedimentdb/sediment/kv"
	"github.com/sedimentdb/sediment/vfs/errorfs"
)

// syncGate holds the next fsync of a commitlog segment, once armed, until
// released, and can make it fail.
type syncGate struct {
	armed   atomic.Bool
	fail    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *syncGate) inject(op errorfs.Op, path string) error {
	if op != errorfs.OpSync || !strings.HasSuffix(path, ".log") || !g.armed.CompareAndSwap(true, false) {
		return nil
	}
	close(g.entered)
	<-g.release
	if g.fail.Load() {
		return errorfs.ErrInjected
	}
	return nil
}

// openGated opens a shard of e whose commitlog syncs pass through a gate.
func openGated(t *testing.T, e *env) (*Shard, *syncGate) {
	t.Helper()
	g := &syncGate{entered: make(chan struct{}), release: make(chan struct{})}
	s, err := Open(context.Background(), e.cfg, 7, Deps{
		FS:         errorfs.Wrap(e.fs, errorfs.InjectorFunc(g.inject)),
		Store:      e.faults,
		Committer:  e.committer,
		Reader:     e.committer,
		Registerer: prometheus.NewRegistry(),
		ChunkSize:  4 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, g
}

// send hands requests to the shard goroutine in order, as submit does.
func send(t *testing.T, s *Shard, rs ...*request) {
	t.Helper()
	for _, r := range rs {
		s.reqs <- r
	}
}

func plainRequest(t *testing.T, s *Shard, ctx context.Context, ck int64) *request {
	t.Helper()
	r, err := s.newRequest(ctx, rowMutation(1, "p", ck, 1, "v"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func isDone(r *request) bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// cancelledProbe sends a request whose context has ended and waits for the
// shard goroutine to answer it: it proves the goroutine got past every
// request sent before, without waiting for their fsync.
func cancelledProbe(t *testing.T, s *Shard) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	probe := plainRequest(t, s, ctx, 999)
	send(t, s, probe)
	select {
	case <-probe.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the shard goroutine is stuck behind an fsync")
	}
}

// TestConditionalWriteSeesInflightGroups holds the fsync of one group while
// more groups and a conditional write queue up behind it: the shard
// goroutine keeps going, nothing is acknowledged or visible before it is
// durable, and the condition sees every earlier write.
func TestConditionalWriteSeesInflightGroups(t *testing.T) {
	e := newEnv(t)
	s, g := openGated(t, e)
	defer s.Close()
	ctx := context.Background()

	g.armed.Store(true)
	first := plainRequest(t, s, ctx, 0)
	send(t, s, first)
	<-g.entered
	writes := []*request{first}
	for ck := range int64(5) {
		r := plainRequest(t, s, ctx, ck+1)
		send(t, s, r)
		writes = append(writes, r)
	}
	cancelledProbe(t, s)

	var seen int
	cond, err := s.newRequest(ctx, rowMutation(1, "p", 6, 1, "cas"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := keys.PartitionPrefixLen(rowKey("p", 0))
	cond.prefix = rowKey("p", 0)[:n]
	cond.cond = func(it kv.Iterator) (bool, error) {
		for ok := it.First(); ok; ok = it.Next() {
			seen++
		}
		return seen == len(writes), it.Error()
	}
	send(t, s, cond)

	for i, r := range writes {
		if isDone(r) {
			t.Fatalf("write %d acknowledged before its fsync returned", i)
		}
	}
	if got := contents(t, s, e.committer, 1); len(got) != 0 {
		t.Fatalf("writes visible before they are durable: %v", got)
	}
	close(g.release)
	for i, r := range append(writes, cond) {
		<-r.done
		if r.err != nil {
			t.Fatalf("request %d: %v", i, r.err)
		}
	}
	if !cond.applied || seen != len(writes) {
		t.Fatalf("condition saw %d rows of %d (applied %v)", seen, len(writes), cond.applied)
	}
	if got := contents(t, s, e.committer, 1); len(got) != len(writes)+1 {
		t.Fatalf("%d rows, want %d", len(got), len(writes)+1)
	}
}

// TestFailedSyncFailsInflightGroups fails the fsync of one group while
// others wait behind it: every one of them fails, none becomes visible, the
// shard refuses writes from then on, and a reopened shard holds every write
// acknowledged before.
func TestFailedSyncFailsInflightGroups(t *testing.T) {
	e := newEnv(t)
	s, g := openGated(t, e)
	ctx := context.Background()
	if err := s.Apply(ctx, rowMutation(1, "p", 100, 1, "kept")); err != nil {
		t.Fatal(err)
	}
	g.fail.Store(true)
	g.armed.Store(true)
	first := plainRequest(t, s, ctx, 0)
	send(t, s, first)
	<-g.entered
	writes := []*request{first}
	for ck := range int64(4) {
		r := plainRequest(t, s, ctx, ck+1)
		send(t, s, r)
		writes = append(writes, r)
		cancelledProbe(t, s) // each its own group
	}
	close(g.release)
	for i, r := range writes {
		<-r.done
		if !errors.Is(r.err, commitlog.ErrFailed) {
			t.Fatalf("write %d: got %v, want commitlog.ErrFailed", i, r.err)
		}
	}
	if err := s.Apply(ctx, rowMutation(1, "p", 50, 1, "refused")); !errors.Is(err, commitlog.ErrFailed) {
		t.Fatalf("after a failed sync: got %v", err)
	}
	if got := contents(t, s, e.committer, 1); len(got) != 1 {
		t.Fatalf("failed shard shows %v", got)
	}
	s.Close()
	e.fs = e.fs.CrashClone()
	s = e.open()
	defer s.Close()
	if got := contents(t, s, e.committer, 1); got[string(rowKey("p", 100))] != "kept" {
		t.Fatalf("reopened shard holds %v", got)
	}
}

// TestApplyInLogOrder writes from many goroutines and checks that the
// memtable's through is the last record in the log: groups are applied in
// log order, each moving it forward.
func TestApplyInLogOrder(t *testing.T) {
	e := newEnv(t)
	e.cfg.MemtableSize = 64 << 20
	e.cfg.MemoryLimit = 256 << 20
	big := strings.Repeat("v", 300) // records fill several segments
	s := e.open()
	ctx := context.Background()
	var wg sync.WaitGroup
	const writers, each = 8, 60
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.Apply(ctx, rowMutation(1, pad(w, 2), int64(i), 1, big)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	s.mu.Lock()
	through := s.mems[len(s.mems)-1].through
	s.mu.Unlock()
	if n := len(contents(t, s, e.committer, 1)); n != writers*each {
		t.Fatalf("%d rows, want %d", n, writers*each)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := commitlog.Open(commitlog.Options{FS: e.fs, Dir: "commitlog/shard-00007", Shard: 7, SegmentSize: e.cfg.Commitlog.SegmentSize})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var last commitlog.Position
	if err := l.Replay(func(pos commitlog.Position, _ []byte) error {
		last = pos
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if last.Segment < 2 || through != last {
		t.Fatalf("memtable through %v, last record %v", through, last)
	}
}
