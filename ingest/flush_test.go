package ingest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/objectstore"
)

// TestFlushCommitLandedDespiteError fails a commit after it was recorded:
// the retry must find it recorded and not upload the committed SSTable's
// key again.
func TestFlushCommitLandedDespiteError(t *testing.T) {
	e := newEnv(t)
	e.cfg.FlushAge = 10 * time.Millisecond
	var uploads, failed atomic.Int32
	setHook(&e.beforeUpload, func() error { uploads.Add(1); return nil })
	setHook(&e.afterCommit, func() error {
		if failed.Add(1) == 1 {
			return errors.New("test: commit response lost")
		}
		return nil
	})
	s := e.open()
	defer s.Close()
	if err := s.Apply(context.Background(), rowMutation(1, "a", 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "flush", func() bool { return counterValue(s.m.flushes) == 1 })
	if n := uploads.Load(); n != 1 {
		t.Fatalf("%d uploads of a flush whose commit landed, want 1", n)
	}
	if got := contents(t, s, e.committer, 1); len(got) != 1 {
		t.Fatalf("table reads %d rows, want 1", len(got))
	}
}

// TestFlushRetryUploadsSameBytes fails a commit before it is recorded: the
// retry uploads the same key again, and must write the same bytes.
func TestFlushRetryUploadsSameBytes(t *testing.T) {
	e := newEnv(t)
	e.cfg.FlushAge = 10 * time.Millisecond
	var mu sync.Mutex
	var uploaded [][]byte
	setHook(&e.beforeCommit, func() error {
		var objs [][]byte
		err := e.faults.List(context.Background(), "", func(a objectstore.Attrs) error {
			r, err := e.faults.Get(context.Background(), a.Key)
			if err != nil {
				return err
			}
			defer r.Close()
			b, err := io.ReadAll(r)
			objs = append(objs, b)
			return err
		})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		uploaded = append(uploaded, bytes.Join(objs, nil))
		if len(uploaded) == 1 {
			time.Sleep(2 * time.Millisecond) // a later CreatedAt, were it the clock's
			return errors.New("test: commit failed")
		}
		return nil
	})
	s := e.open()
	defer s.Close()
	if err := s.Apply(context.Background(), rowMutation(1, "a", 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "flush", func() bool { return counterValue(s.m.flushes) == 1 })
	mu.Lock()
	defer mu.Unlock()
	if len(uploaded) != 2 {
		t.Fatalf("%d commit attempts, want 2", len(uploaded))
	}
	if !bytes.Equal(uploaded[0], uploaded[1]) {
		t.Fatal("the retried flush uploaded different bytes under the same key")
	}
}

// ctxStore records the context of each upload.
type ctxStore struct {
	objectstore.Store
	mu   sync.Mutex
	ctxs []context.Context
}

func (c *ctxStore) NewWriter(ctx context.Context, key string) (objectstore.Writer, error) {
	c.mu.Lock()
	c.ctxs = append(c.ctxs, ctx)
	c.mu.Unlock()
	return c.Store.NewWriter(ctx, key)
}

// TestFlushUploadContext checks that uploads run under the flush's context,
// which Close cancels, so that the store itself can stop an upload.
func TestFlushUploadContext(t *testing.T) {
	e := newEnv(t)
	e.cfg.FlushAge = 10 * time.Millisecond
	store := &ctxStore{Store: e.faults}
	s, err := Open(context.Background(), e.cfg, 7, NodeDeps{FS: e.fs, Store: store, Committer: e.committer, Reader: e.committer})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(context.Background(), rowMutation(1, "a", 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "flush", func() bool { return counterValue(s.m.flushes) == 1 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.ctxs) == 0 {
		t.Fatal("no upload")
	}
	for _, ctx := range store.ctxs {
		if ctx.Err() == nil {
			t.Fatal("an upload's context outlives the shard")
		}
	}
}

// TestFlushStaleUploadWrittenAgain checks that a flush whose commit comes
// later than MaxCommitDelay after its upload starts (here a slow upload)
// uploads its SSTables again, under the same keys, before
// committing: the orphan sweep may have judged the old uploads unreferenced.
func TestFlushStaleUploadWrittenAgain(t *testing.T) {
	e := newEnv(t)
	e.cfg.FlushAge = 10 * time.Millisecond
	e.cfg.FlushDelay, e.cfg.FlushHold = 0, 0
	e.cfg.MaxCommitDelay = 50 * time.Millisecond
	var mu sync.Mutex
	uploads, commits := 0, 0
	var objects []string
	setHook(&e.beforeUpload, func() error {
		mu.Lock()
		uploads++
		n := uploads
		mu.Unlock()
		if n == 1 {
			time.Sleep(2 * e.cfg.MaxCommitDelay) // the first attempt's upload is slow
		}
		return nil
	})
	setHook(&e.beforeCommit, func() error {
		var keys []string
		err := e.faults.List(context.Background(), "", func(a objectstore.Attrs) error {
			keys = append(keys, a.Key)
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		commits++
		objects = keys
		return err
	})
	s := e.open()
	defer s.Close()
	if err := s.Apply(context.Background(), rowMutation(1, "a", 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "flush", func() bool { return counterValue(s.m.flushes) >= 1 })
	mu.Lock()
	defer mu.Unlock()
	if uploads != 2 || commits != 1 {
		t.Fatalf("%d uploads and %d commits; want 2 and 1", uploads, commits)
	}
	if len(objects) != 1 {
		t.Fatalf("bucket holds %q at the commit; want the SSTable, overwritten", objects)
	}
	if got := contents(t, s, e.committer, 1); len(got) != 1 {
		t.Fatalf("committed rows %v, want 1", got)
	}
}

// TestFlushHeldPastCommitDelay checks that a flush held back by L0
// pressure for longer than MaxCommitDelay uploads again and then commits
// without being held a second time.
func TestFlushHeldPastCommitDelay(t *testing.T) {
	e := newEnv(t)
	e.cfg.FlushAge = 10 * time.Millisecond
	// The hold outlasts MaxCommitDelay by far, and MaxCommitDelay the
	// upload again by far, even on a busy machine.
	e.cfg.FlushDelay, e.cfg.FlushHold = 10*time.Millisecond, 600*time.Millisecond
	e.cfg.MaxCommitDelay = 200 * time.Millisecond
	e.l0 = newFakeL0(1) // full throughout
	var uploads, commits atomic.Int32
	setHook(&e.beforeUpload, func() error { uploads.Add(1); return nil })
	setHook(&e.beforeCommit, func() error { commits.Add(1); return nil })
	s := e.open()
	defer s.Close()
	if err := s.Apply(context.Background(), rowMutation(1, "a", 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "flush", func() bool { return counterValue(s.m.flushes) >= 1 })
	if u, c := uploads.Load(), commits.Load(); u != 2 || c != 1 {
		t.Fatalf("%d uploads and %d commits; want 2 and 1", u, c)
	}
	if d := counterValue(s.m.flushDelays); d != 1 {
		t.Fatalf("flush held %v times, want once", d)
	}
}
