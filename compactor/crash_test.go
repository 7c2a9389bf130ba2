package compactor

import (
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/compactor/gc"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// crashStore kills a worker (cancels its context) at a chosen point of its
// job: the nth ranged read of an input (during the merge), the close of
// the nth output upload (during the upload), or the first manifest archive
// write once armed (right after the commit, before the ack). Only a job's
// merge reads ranges.
type crashStore struct {
	objectstore.Store
	kill  context.CancelFunc
	when  string
	n     int64
	armed atomic.Bool

	reads, uploads atomic.Int64
	fired          atomic.Bool
	once           sync.Once
}

func (s *crashStore) fire() { s.once.Do(func() { s.fired.Store(true); s.kill() }) }

func (s *crashStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if s.when == "merge" && s.reads.Add(1) == s.n {
		s.fire()
		return nil, context.Canceled
	}
	return s.Store.GetRange(ctx, key, off, length)
}

func (s *crashStore) NewWriter(ctx context.Context, key string) (objectstore.Writer, error) {
	w, err := s.Store.NewWriter(ctx, key)
	if err != nil || s.when != "upload" || !strings.HasPrefix(key, "compaction/") {
		return w, err
	}
	return &crashWriter{Writer: w, s: s, n: s.uploads.Add(1)}, nil
}

func (s *crashStore) PutIf(ctx context.Context, key string, data []byte, cond objectstore.Condition) (string, error) {
	etag, err := s.Store.PutIf(ctx, key, data, cond)
	if s.when == "committed" && err == nil && s.armed.Load() {
		s.fire()
	}
	return etag, err
}

// crashWriter dies at its Close if it is the nth upload: the object is
// never made visible, as when the process dies mid-upload.
type crashWriter struct {
	objectstore.Writer
	s *crashStore
	n int64
}

func (w *crashWriter) Close() error {
	if w.n == w.s.n {
		w.s.fire()
		return abortKilled(w.Writer)
	}
	return w.Writer.Close()
}

func abortKilled(w objectstore.Writer) error {
	_ = w.Abort()
	return context.Canceled
}

// TestCrash kills a worker during the merge, during the upload of its
// second output and right after its commit, before the ack. Another worker
// then finishes the job: the range reads as the inputs did, every object
// under the compaction prefix is live or on the garbage list, and a
// collector pass with no grace leaves only the live ones.
func TestCrash(t *testing.T) {
	for i, when := range []string{"merge", "upload", "committed"} {
		t.Run(when, func(t *testing.T) {
			f := newFleet(t, 1, time.Second)
			table := uuid.New()
			inputs, want := f.flushes(uint64(40+i), table, 0, 3)
			p := plan(table, 0, inputs)
			p.TargetSize = 1 // an output per partition: several uploads
			if err := f.q.Submit(f.ctx, p); err != nil {
				t.Fatal(err)
			}
			ctx, kill := context.WithCancel(f.ctx)
			defer kill()
			store := &crashStore{Store: f.store, kill: kill, when: when, n: 2}
			m := f.m
			if when == "committed" {
				// The worker's manifest writes its archive copies through
				// store: the first after the commit kills the worker.
				var err error
				if m, err = manifest.Open(f.ctx, f.q.js, store, "c1", manifest.Options{}); err != nil {
					t.Fatal(err)
				}
			}
			dead, err := NewWorker(f.q, m, WorkerOptions{
				Store: store, Metrics: NewMetrics(nil), Poll: 50 * time.Millisecond,
				MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
				Run: Options{Writer: sstable.WriterOptions{BlockSize: 256, BufferSize: 256}},
			})
			if err != nil {
				t.Fatal(err)
			}
			dead.beforeCommit = func(context.Context, string) { store.armed.Store(true) }
			ok, err := dead.RunOne(ctx, time.Second)
			if !ok {
				t.Fatal("the job was not delivered")
			}
			if !store.fired.Load() {
				t.Fatalf("the worker was not killed (%d reads, %d uploads): %v", store.reads.Load(), store.uploads.Load(), err)
			}
			live := f.live(table, 0)
			if committed := len(live) != len(inputs) || live[0].Key != inputs[0].Key; committed != (when == "committed") {
				t.Fatalf("killed at %s: committed %v", when, committed)
			}
			if s := f.queued(); s.Jobs != 1 {
				t.Fatalf("queue after the death: %+v", s)
			}

			w := f.worker(nil)
			deadline := time.Now().Add(20 * time.Second)
			for f.queued().Jobs != 0 {
				if time.Now().After(deadline) {
					t.Fatal("job not redelivered and settled")
				}
				if _, err := w.RunOne(f.ctx, 200*time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			if when == "committed" {
				if value(f.mets.obsolete) != 1 || value(f.mets.committed) != 0 {
					t.Fatalf("the second worker did not find the job done: %v obsolete, %v committed", value(f.mets.obsolete), value(f.mets.committed))
				}
			} else if value(f.mets.committed) != 1 {
				t.Fatal("the second worker did not commit")
			}
			f.checkCompacted(table, 0, inputs, want)
			checkBucket(t, f, table, true)

			c, err := gc.New(f.m, f.store, gc.Config{GracePeriod: time.Nanosecond, Interval: time.Second},
				gc.Options{Holder: "gc", Now: func() time.Time { return time.Now().Add(time.Hour) }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Collect(f.ctx); err != nil {
				t.Fatal(err)
			}
			if gs := f.garbage(table, 0); len(gs) != 0 {
				t.Fatalf("garbage after a pass with no grace: %+v", gs)
			}
			checkBucket(t, f, table, false)
			for _, in := range inputs {
				if _, err := f.store.Head(f.ctx, in.Key); !objectstore.IsNotFound(err) {
					t.Fatalf("input %s after the collection: %v", in.Key, err)
				}
			}
			if when == "committed" {
				// The dead attempt's commit stands: the retry replaced nothing.
				after := f.live(table, 0)
				if len(after) != len(live) {
					t.Fatalf("live set changed by the retry: %d, then %d sstables", len(live), len(after))
				}
				for i := range after {
					if after[i].Key != live[i].Key {
						t.Fatalf("live set changed by the retry: %s, then %s", live[i].Key, after[i].Key)
					}
				}
			}
		})
	}
}

// checkBucket checks that every object under the compaction prefix is a
// live SSTable of table or, if garbageOK, on its garbage list; and that
// every live SSTable is in the bucket.
func checkBucket(t *testing.T, f *fleet, table uuid.UUID, garbageOK bool) {
	t.Helper()
	live := map[string]bool{}
	for _, s := range f.live(table, 0) {
		live[s.Key] = true
		if _, err := f.store.Head(f.ctx, s.Key); err != nil {
			t.Fatalf("live %s: %v", s.Key, err)
		}
	}
	gs := f.garbage(table, 0)
	err := f.store.List(f.ctx, "compaction/", func(a objectstore.Attrs) error {
		if live[a.Key] {
			return nil
		}
		if _, ok := gs[a.Key]; ok && garbageOK {
			return nil
		}
		t.Errorf("object %s is neither live nor garbage", a.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
