package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/internal/testwait"
)

// writeRecorder runs writers against a shard, each writing its own rows,
// and records every write's outcome.
type writeRecorder struct {
	mu    sync.Mutex
	acked map[string]string // row key → value of acknowledged writes
	tried map[string]string // every write, acknowledged or not
	errs  []error
	// lastAck is when the newest acknowledged write started.
	lastAck atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
}

func startWriters(s *Shard, writers int) *writeRecorder {
	w := &writeRecorder{acked: map[string]string{}, tried: map[string]string{}, stop: make(chan struct{})}
	for id := range writers {
		w.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-w.stop:
					return
				default:
				}
				pk := fmt.Sprint("w", id)
				v := fmt.Sprint(id, "/", i)
				key := string(rowKey(pk, int64(i)))
				w.mu.Lock()
				w.tried[key] = v
				w.mu.Unlock()
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := s.Apply(ctx, rowMutation(1, pk, int64(i), 1, v))
				cancel()
				w.mu.Lock()
				if err == nil {
					w.acked[key] = v
					w.lastAck.Store(start.UnixNano())
				} else {
					w.errs = append(w.errs, err)
				}
				w.mu.Unlock()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	return w
}

// counts returns the numbers of acknowledged and failed writes so far.
func (w *writeRecorder) counts() (acked, failed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked), len(w.errs)
}

// takeErrs returns the errors recorded since the last call.
func (w *writeRecorder) takeErrs() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	errs := w.errs
	w.errs = nil
	return errs
}

func (w *writeRecorder) finish() {
	close(w.stop)
	w.wg.Wait()
}

// TestReplicatedLog writes through a shard whose log is a stream of three
// replicas on a NATS cluster, and takes NATS servers away: with one killed,
// writes go on with at most retriable errors; with two stopped, none is
// acknowledged and they fail with storage.ErrUnavailable; once both are
// back, writes resume by themselves. A shard opened afresh on another
// connection, as on another machine, then reads every acknowledged write
// back with its value, and nothing that was never written.
func TestReplicatedLog(t *testing.T) {
	c := testserver.NATSClusterOf(t, 3)
	e := newEnv(t)
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	e.js, e.replicas = js, 3
	s := e.open()
	w := startWriters(s, 8)
	defer func() {
		select {
		case <-w.stop:
		default:
			w.finish()
		}
	}()
	progress := func(what string, n int) {
		t.Helper()
		acked, _ := w.counts()
		testwait.For(t, what, func() bool { a, _ := w.counts(); return a >= acked+n })
	}
	progress("writes to a healthy cluster", 200)
	if errs := w.takeErrs(); len(errs) > 0 {
		t.Fatalf("writes to a healthy cluster failed: %v", errs)
	}

	c.Servers[0].Kill()
	progress("writes with one server killed", 200)
	for _, err := range w.takeErrs() {
		if !storage.Retriable(err) {
			t.Fatalf("write with one server killed: %v, want only retriable errors", err)
		}
	}

	c.Servers[1].Stop()
	stopped := time.Now()
	testwait.For(t, "a write refused as unavailable", func() bool {
		for _, err := range w.takeErrs() {
			if !storage.Retriable(err) {
				t.Fatalf("write with two servers stopped: %v, want a retriable error", err)
			}
			if errors.Is(err, storage.ErrUnavailable) {
				return true
			}
		}
		return false
	})
	// No write that started without a quorum may be acknowledged.
	time.Sleep(3 * time.Second)
	if last := time.Unix(0, w.lastAck.Load()); last.After(stopped) {
		t.Fatalf("a write that started %v after the second server stopped was acknowledged", last.Sub(stopped))
	}

	c.Servers[0].Restart(t)
	c.Servers[1].Restart(t)
	progress("writes after the servers' return", 200)
	w.finish()

	acked, failed := w.counts()
	t.Logf("%d writes acknowledged, %d failed", acked, failed)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	js2, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	e.js = js2
	s = e.open()
	defer s.Close()
	got := contents(t, s, e.committer, 1)
	for k, v := range w.acked {
		if got[k] != v {
			t.Fatalf("acknowledged write %q = %q reads back as %q", k, v, got[k])
		}
	}
	for k, v := range got {
		if w.tried[k] != v {
			t.Fatalf("row %q = %q was never written", k, v)
		}
	}
}
