package ingest

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/objectstore/faultstore"
)

// TestNodeFlush writes less than a memtable to every shard, flushes, and
// reopens: the memtables are empty, the committed SSTables hold every row,
// and the reopened node replays no record.
func TestNodeFlush(t *testing.T) {
	e := newEnv(t)
	e.cfg.Shards = 3
	n, err := e.openNode()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Nothing written: nothing to wait for.
	if err := n.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for round := range 2 { // the second Flush finds the first's commits
		for p := range 100 {
			m := rowMutation(1, "p"+strconv.Itoa(p), int64(round), 1, strconv.Itoa(round*1000+p))
			if err := n.Apply(ctx, m); err != nil {
				t.Fatal(err)
			}
			want[string(m.Entries[0].Key)] = strconv.Itoa(round*1000 + p)
		}
		if err := n.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range n.Shards() {
			s := n.Shard(i)
			if s.flushing() != 0 {
				t.Fatalf("shard %d: %d memtables still flushing after Flush", i, s.flushing())
			}
			if c := count(t, s.NewIter(1, nil, nil)); c != 0 {
				t.Fatalf("shard %d: memtables hold %d entries after Flush", i, c)
			}
		}
		sst, err := e.committer.NewIter(ctx, 1, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := drain(t, sst); !equalRows(got, want) {
			t.Fatalf("SSTables hold %d rows, want %d", len(got), len(want))
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n, err = e.openNode()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for i := range n.Shards() {
		if r := counterValue(n.Shard(i).m.replayed); r != 0 {
			t.Fatalf("shard %d replayed %v records after a flushed stop", i, r)
		}
	}
	if got := drain(t, n.NewIter(1, nil, nil)); len(got) != 0 {
		t.Fatalf("reopened memtables hold %d rows", len(got))
	}
}

func equalRows(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// TestFlushWaitsForBucket fills the memory limit while the bucket is down,
// with a write waiting for memory: Flush runs ahead of it, waits for the
// flushes until its context ends, and succeeds once the bucket is back.
func TestFlushWaitsForBucket(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	ctx := context.Background()
	e.faults.Inject(faultstore.Rule{Op: faultstore.OpWriter, Err: errors.New("bucket down")})
	val := string(make([]byte, 200))
	i := 0
	for s.memory() < e.cfg.MemoryLimit {
		if err := s.Apply(ctx, rowMutation(1, "p"+strconv.Itoa(i%50), int64(i), 1, val)); err != nil {
			t.Fatal(err)
		}
		i++
	}
	activeEmpty := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.mems[len(s.mems)-1].first.IsZero()
	}
	if activeEmpty() {
		t.Fatal("the last write left the active memtable empty")
	}
	blocked := make(chan error, 1)
	go func() { blocked <- s.Apply(ctx, rowMutation(1, "late", 0, 1, "late")) }()

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with the bucket down: %v, want the context's deadline", err)
	}
	if !activeEmpty() {
		t.Fatal("Flush did not queue the active memtable ahead of the write waiting for memory")
	}
	e.faults.Reset()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; err != nil {
		t.Fatalf("the write waiting for memory: %v", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c := count(t, s.NewIter(1, nil, nil)); c != 0 {
		t.Fatalf("memtables hold %d entries after Flush", c)
	}
	if got := contents(t, s, e.committer, 1); len(got) != i+1 {
		t.Fatalf("%d rows readable, %d written", len(got), i+1)
	}
}

// TestFlushClosedOrFenced: Flush on a closed shard is storage.ErrClosed, and
// on a fenced one the fencing error.
func TestFlushClosedOrFenced(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	ctx := context.Background()
	setHook(&e.beforeCommit, func() error { return storage.ErrFenced })
	if err := s.Apply(ctx, rowMutation(1, "a", 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); !errors.Is(err, storage.ErrFenced) {
		t.Fatalf("Flush of a fenced shard: %v, want ErrFenced", err)
	}
	s.Close()
	if err := s.Flush(ctx); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Flush of a closed shard: %v, want ErrClosed", err)
	}
}
