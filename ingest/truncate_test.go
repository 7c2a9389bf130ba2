package ingest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/testwait"
)

func TestTruncate(t *testing.T) {
	forEachLog(t, func(t *testing.T, e *env) {
		s := e.open()
		ctx := context.Background()
		val := string(make([]byte, 100))
		const n = 1000 // several memtables: some flushed, some not
		for i := range n {
			for table := storage.TableID(1); table <= 2; table++ {
				if err := s.Apply(ctx, rowMutation(table, "p"+strconv.Itoa(i/10), int64(i), 1, val)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.Truncate(ctx, 1); err != nil {
			t.Fatal(err)
		}
		// Once Truncate returns, no flush commits rows written before it.
		flushedBefore := len(e.committer.SSTables(1))
		if got := drain(t, s.NewIter(1, nil, nil)); len(got) != 0 {
			t.Fatalf("truncated table holds %d rows in memtables", len(got))
		}
		if got := count(t, s.NewIter(2, nil, nil)) + entries(e.committer.SSTables(2)); got < n {
			t.Fatalf("other table holds %d entries, want %d", got, n)
		}
		if err := s.Apply(ctx, rowMutation(1, "after", 1, 1, "new")); err != nil {
			t.Fatal(err)
		}
		check := func(s *Shard) {
			t.Helper()
			testwait.For(t, "flushes", func() bool { return s.flushing() == 0 })
			got := drain(t, s.NewIter(1, nil, nil))
			if len(got) > 1 || (len(got) == 1 && got[string(rowKey("after", 1))] != "new") {
				t.Fatalf("truncated table's memtables hold %v", got)
			}
			// Only SSTables committed before the truncation hold old rows;
			// the manifest drops those.
			if got := entries(e.committer.SSTables(1)[flushedBefore:]) + len(got); got != 1 {
				t.Fatalf("%d entries of the truncated table stored after it, want 1", got)
			}
			if got := len(contents(t, s, e.committer, 2)); got != n {
				t.Fatalf("other table holds %d rows, want %d", got, n)
			}
		}
		check(s)
		// Replay repeats the truncation.
		s.Close()
		e.fs = e.fs.CrashClone()
		s = e.open()
		check(s)
		// Flushing everything keeps it truncated.
		s.Close()
		e.cfg.FlushAge = 10 * time.Millisecond
		s = e.open()
		defer s.Close()
		testwait.For(t, "flush of the replayed memtable", func() bool { return count(t, s.NewIter(2, nil, nil)) == 0 })
		check(s)
	})
}

// TestTruncateDuringFlush truncates a table while its SSTable is being
// uploaded: the flush must start over without it.
func TestTruncateDuringFlush(t *testing.T) {
	e := newEnv(t)
	e.cfg.FlushAge = 10 * time.Millisecond
	entered, proceed := make(chan struct{}), make(chan struct{})
	first := true
	setHook(&e.beforeUpload, func() error {
		if first {
			first = false
			close(entered)
			<-proceed
		}
		return nil
	})
	s := e.open()
	defer s.Close()
	ctx := context.Background()
	for table := storage.TableID(1); table <= 2; table++ {
		if err := s.Apply(ctx, rowMutation(table, "a", 1, 1, "v")); err != nil {
			t.Fatal(err)
		}
	}
	<-entered
	if err := s.Truncate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	testwait.For(t, "flush", func() bool { return len(e.committer.SSTables(2)) == 1 })
	if n := len(e.committer.SSTables(1)); n != 0 {
		t.Fatalf("%d SSTables committed for the truncated table", n)
	}
}

func entries(ts []SSTable) int {
	n := 0
	for _, t := range ts {
		n += int(t.Entries)
	}
	return n
}

// TestReplayTruncationAfterFullMemtables replays a log in which a table's
// rows fill memtables before its truncation: replay must not flush those
// rows, even when it has to wait for flushes to free memory before it
// reaches the truncation.
func TestReplayTruncationAfterFullMemtables(t *testing.T) {
	e := newEnv(t)
	e.cfg.MemoryLimit = 4 << 20
	setHook(&e.beforeCommit, func() error { return errCrashed })
	s := e.open()
	ctx := context.Background()
	val := string(make([]byte, 500))
	for i := range 600 { // several memtables, none committed
		if err := s.Apply(ctx, rowMutation(1, "p"+strconv.Itoa(i/10), int64(i), 1, val)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Truncate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, rowMutation(2, "other", 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := len(e.committer.SSTables(1)); n != 0 {
		t.Fatalf("%d SSTables committed before the restart", n)
	}

	// With room for only two memtables, replay waits for flushes of the
	// table's rows before it reaches the truncation.
	e.beforeCommit.Store(nil)
	e.cfg.MemoryLimit = 2 * e.cfg.MemtableSize
	e.cfg.FlushAge = 10 * time.Millisecond
	s = e.open()
	defer s.Close()
	testwait.For(t, "flushes", func() bool { return len(e.committer.SSTables(2)) == 1 })
	if n := entries(e.committer.SSTables(1)); n != 0 {
		t.Fatalf("%d truncated rows committed to SSTables", n)
	}
	if got := contents(t, s, e.committer, 1); len(got) != 0 {
		t.Fatalf("truncated table reads %d rows after restart", len(got))
	}
	if got := contents(t, s, e.committer, 2); len(got) != 1 {
		t.Fatalf("other table reads %d rows after restart, want 1", len(got))
	}
}
