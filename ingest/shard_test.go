package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/internal/vfs/errorfs"
)

func TestApplyRead(t *testing.T) {
	forEachLog(t, func(t *testing.T, e *env) {
		s := e.open()
		defer s.Close()
		const writers, each = 8, 50
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					m := rowMutation(storage.TableID(1+w%2), "p"+strconv.Itoa(w), int64(i), 1, fmt.Sprint(w, "/", i))
					if err := s.Apply(context.Background(), m); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		for table := storage.TableID(1); table <= 2; table++ {
			got := contents(t, s, e.committer, table)
			if len(got) != writers/2*each {
				t.Fatalf("table %d holds %d rows, want %d", table, len(got), writers/2*each)
			}
			for w := int(table) - 1; w < writers; w += 2 {
				for i := range each {
					if v := got[string(rowKey("p"+strconv.Itoa(w), int64(i)))]; v != fmt.Sprint(w, "/", i) {
						t.Fatalf("row %d/%d = %q", w, i, v)
					}
				}
			}
		}
		// Bounds select a slice of one table, without the table prefix.
		lo, hi := rowKey("p1", 10), rowKey("p1", 20)
		if got := drain(t, s.NewIter(2, lo, hi)); len(got) != 10 {
			t.Fatalf("range holds %d rows, want 10", len(got))
		}
		if got := drain(t, s.NewIter(3, nil, nil)); len(got) != 0 {
			t.Fatalf("empty table holds %d rows", len(got))
		}
	})
}

// TestMergeOnWrite checks that a key written twice holds the reconciled
// value: newest timestamp wins, whatever the order of the writes.
func TestMergeOnWrite(t *testing.T) {
	forEachLog(t, func(t *testing.T, e *env) {
		s := e.open()
		defer s.Close()
		ctx := context.Background()
		for _, m := range []*storage.Mutation{rowMutation(1, "a", 1, 20, "new"), rowMutation(1, "a", 1, 10, "old")} {
			if err := s.Apply(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		if got := contents(t, s, e.committer, 1); got[string(rowKey("a", 1))] != "new" {
			t.Fatalf("got %v", got)
		}
	})
}

// TestGroupCommit holds the shard goroutine inside a condition while writes
// arrive; they must then be written as one commitlog record and applied
// together.
func TestGroupCommit(t *testing.T) {
	forEachLog(t, func(t *testing.T, e *env) {
		s := e.open()
		defer s.Close()
		ctx := context.Background()
		entered, release := make(chan struct{}), make(chan struct{})
		go s.ApplyIf(ctx, rowMutation(1, "cas", 0, 1, "x"), func(kv.Iterator) (bool, error) {
			close(entered)
			<-release
			return false, nil
		})
		<-entered
		const n = 20
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if err := s.Apply(ctx, rowMutation(1, "g", int64(i), 1, "v")); err != nil {
					t.Error(err)
				}
			})
		}
		testwait.For(t, "writes to queue", func() bool { return len(s.reqs) == n })
		close(release)
		wg.Wait()
		if got := counterValue(s.m.batches); got != 1 {
			t.Fatalf("%d writes took %v group commits, want 1", n, got)
		}
		if st := s.log.Stats(); st.Appends != 1 || st.Syncs != 1 {
			t.Fatalf("commitlog stats %+v, want one append and one sync", st)
		}
		if got := contents(t, s, e.committer, 1); len(got) != n {
			t.Fatalf("%d rows, want %d", len(got), n)
		}
	})
}

func TestApplyIf(t *testing.T) {
	forEachLog(t, func(t *testing.T, e *env) {
		s := e.open()
		defer s.Close()
		ctx := context.Background()
		absent := func(it kv.Iterator) (bool, error) { return !it.First(), it.Error() }

		ok, err := s.ApplyIf(ctx, rowMutation(1, "k", 1, 1, "first"), absent)
		if err != nil || !ok {
			t.Fatalf("insert into empty partition: %v, %v", ok, err)
		}
		ok, err = s.ApplyIf(ctx, rowMutation(1, "k", 2, 2, "second"), absent)
		if err != nil || ok {
			t.Fatalf("insert into non-empty partition: %v, %v", ok, err)
		}
		// Another partition is not seen by the condition.
		ok, err = s.ApplyIf(ctx, rowMutation(1, "other", 1, 1, "x"), absent)
		if err != nil || !ok {
			t.Fatalf("insert into other partition: %v, %v", ok, err)
		}
		got := contents(t, s, e.committer, 1)
		if len(got) != 2 || got[string(rowKey("k", 1))] != "first" {
			t.Fatalf("got %v", got)
		}
		errCond := errors.New("condition failed")
		if _, err := s.ApplyIf(ctx, rowMutation(1, "k", 3, 3, "x"), func(kv.Iterator) (bool, error) { return false, errCond }); !errors.Is(err, errCond) {
			t.Fatalf("got %v, want the condition's error", err)
		}
		spanning := &storage.Mutation{Table: 1, Entries: []storage.Entry{{Key: rowKey("a", 1), Value: rowValue(1, "v")}, {Key: rowKey("b", 1), Value: rowValue(1, "v")}}}
		if _, err := s.ApplyIf(ctx, spanning, absent); !errors.Is(err, storage.ErrInvalidMutation) {
			t.Fatalf("got %v, want ErrInvalidMutation", err)
		}
	})
}

// TestApplyIfCounter increments a counter with compare-and-set from many
// goroutines while plain writes go on: every successful increment must count,
// so no write slips between a condition's read and its write.
func TestApplyIfCounter(t *testing.T) {
	e := newEnv(t)
	e.cfg.MemtableSize = 64 << 10 // flushes happen meanwhile: reads span SSTables
	s := e.open()
	defer s.Close()
	ctx := context.Background()
	const workers, increments = 4, 25
	read := func(it kv.Iterator) (int, error) {
		if !it.First() {
			return 0, it.Error()
		}
		return strconv.Atoi(cellValue(t, it.Value()))
	}
	// Start with the counter in an SSTable, so conditions read across both.
	if err := s.Apply(ctx, rowMutation(1, "ctr", 0, 0, "0")); err != nil {
		t.Fatal(err)
	}
	for i := 0; counterValue(s.m.flushes) == 0; i++ {
		if err := s.Apply(ctx, rowMutation(2, "fill", int64(i), 1, string(make([]byte, 500)))); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Apply(ctx, rowMutation(2, "noise", int64(i), 1, string(make([]byte, 500)))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var cas sync.WaitGroup
	for range workers {
		cas.Go(func() {
			for done := 0; done < increments; {
				var seen int
				ok, err := s.ApplyIf(ctx, rowMutation(1, "ctr", 0, 0, "0"), func(it kv.Iterator) (bool, error) {
					v, err := read(it)
					seen = v
					return false, err
				})
				if err != nil || ok {
					t.Error(ok, err)
					return
				}
				next := seen + 1
				ok, err = s.ApplyIf(ctx, rowMutation(1, "ctr", 0, int64(next), strconv.Itoa(next)), func(it kv.Iterator) (bool, error) {
					v, err := read(it)
					return v == seen, err
				})
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					done++
				}
			}
		})
	}
	cas.Wait()
	close(stop)
	wg.Wait()
	if got := contents(t, s, e.committer, 1)[string(rowKey("ctr", 0))]; got != strconv.Itoa(workers*increments) {
		t.Fatalf("counter = %s, want %d", got, workers*increments)
	}
}

func TestApplyErrors(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	ctx := context.Background()
	if err := s.Apply(ctx, &storage.Mutation{Table: 1}); !errors.Is(err, storage.ErrInvalidMutation) {
		t.Fatalf("got %v, want ErrInvalidMutation", err)
	}
	big := rowMutation(1, "a", 1, 1, string(make([]byte, 70<<10)))
	if err := s.Apply(ctx, big); !errors.Is(err, storage.ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Apply(cctx, rowMutation(1, "a", 1, 1, "v")); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, rowMutation(1, "a", 1, 1, "v")); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
}

// TestFlushReleaseReopen writes enough to flush several memtables, checks
// that flushed commitlog segments are released, and that a reopened shard
// replays only what no committed SSTable holds.
func TestFlushReleaseReopen(t *testing.T) {
	forEachLog(t, func(t *testing.T, e *env) {
		s := e.open()
		ctx := context.Background()
		const n = 2000
		val := string(make([]byte, 100))
		for i := range n {
			if err := s.Apply(ctx, rowMutation(storage.TableID(1+i%3), "p"+strconv.Itoa(i/10), int64(i), 1, val)); err != nil {
				t.Fatal(err)
			}
		}
		testwait.For(t, "flushes", func() bool { return counterValue(s.m.flushes) >= 3 })
		if e.js == nil {
			segs, err := e.fs.ReadDir("commitlog/shard-00007")
			if err != nil {
				t.Fatal(err)
			}
			// 2000 rows of ~130 bytes span about four 64 KiB segments;
			// flushes covering most of them must have released some.
			if st := s.log.Stats(); len(segs) >= int(st.Appends*130/(64<<10))+1 {
				t.Fatalf("%d segments left after %d flushes", len(segs), int(counterValue(s.m.flushes)))
			}
		} else {
			// Once the full memtables are flushed, only the active one's
			// records (some 64 KiB of 2000 rows of ~130 bytes) are left.
			appends := s.log.Stats().Appends
			testwait.For(t, "purge of flushed records", func() bool { return e.streamMessages(t) < appends/2 })
		}
		check := func(s *Shard) {
			testwait.For(t, "flushes to finish", func() bool { return s.flushing() == 0 })
			total, stored := 0, 0
			for table := storage.TableID(1); table <= 3; table++ {
				total += len(contents(t, s, e.committer, table))
				stored += count(t, s.NewIter(table, nil, nil))
				for _, sst := range e.committer.SSTables(table) {
					stored += int(sst.Entries)
				}
			}
			if total != n || stored != n {
				t.Fatalf("%d rows readable, %d stored in memtables and SSTables, want %d", total, stored, n)
			}
		}
		check(s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = e.open()
		defer s.Close()
		check(s)
	})
}

func TestFlushAge(t *testing.T) {
	e := newEnv(t)
	e.cfg.FlushAge = 20 * time.Millisecond
	s := e.open()
	defer s.Close()
	if err := s.Apply(context.Background(), rowMutation(1, "a", 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "age flush", func() bool { return len(e.committer.SSTables(1)) == 1 })
	testwait.For(t, "memtable dropped", func() bool { return count(t, s.NewIter(1, nil, nil)) == 0 })
	if got := contents(t, s, e.committer, 1); got[string(rowKey("a", 1))] != "v" {
		t.Fatalf("got %v", got)
	}
}

// TestCommitlogFailure fails an fsync: the writes of that group fail, the
// shard refuses writes from then on, and a reopened shard has every write
// acknowledged before.
func TestCommitlogFailure(t *testing.T) {
	e := newEnv(t)
	mem := e.fs
	var failing atomic.Bool
	fsys := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpSync && failing.Load() {
			return errorfs.ErrInjected
		}
		return nil
	}))
	ctx := context.Background()
	deps := NodeDeps{FS: fsys, Store: e.faults, Committer: e.committer, Reader: e.committer}
	s, err := Open(ctx, e.cfg, 7, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, rowMutation(1, "a", 1, 1, "kept")); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	if err := s.Apply(ctx, rowMutation(1, "a", 2, 1, "lost")); !errors.Is(err, commitlog.ErrFailed) {
		t.Fatalf("got %v, want commitlog.ErrFailed", err)
	}
	failing.Store(false)
	if err := s.Apply(ctx, rowMutation(1, "a", 3, 1, "refused")); !errors.Is(err, commitlog.ErrFailed) {
		t.Fatalf("after a failed sync: got %v, want commitlog.ErrFailed", err)
	}
	// The failed write was never acknowledged, and never becomes visible.
	if got := contents(t, s, e.committer, 1); len(got) != 1 {
		t.Fatalf("failed shard shows %v", got)
	}
	s.Close()
	e.fs = mem.CrashClone()
	s = e.open()
	defer s.Close()
	if got := contents(t, s, e.committer, 1); got[string(rowKey("a", 1))] != "kept" {
		t.Fatalf("reopened shard holds %v", got)
	}
}

func TestPeriodicSync(t *testing.T) {
	e := newEnv(t)
	e.cfg.Commitlog.SyncMode = "periodic"
	e.cfg.Commitlog.SyncPeriod = 5 * time.Millisecond
	s := e.open()
	ctx := context.Background()
	for i := range 20 {
		if err := s.Apply(ctx, rowMutation(1, "a", int64(i), 1, "v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Close syncs: what was acknowledged survives a crash after it.
	e.fs = e.fs.CrashClone()
	s = e.open()
	defer s.Close()
	if got := contents(t, s, e.committer, 1); len(got) != 20 {
		t.Fatalf("%d rows after reopening, want 20", len(got))
	}
}

// TestLogUnavailable freezes the log's NATS server during a write: the write
// fails with a retriable error, and once the server is back the next write,
// here a conditional one, settles it first. The failed write may be applied (as a Cassandra write
// that timed out may be), and here it is, since the retry stores it: it
// must then read back, and be replayed once.
func TestLogUnavailable(t *testing.T) {
	e := newEnv(t)
	e.useNATS(testserver.NATS(t))
	s := e.open()
	ctx := context.Background()
	if err := s.Apply(ctx, rowMutation(1, "a", 1, 1, "before")); err != nil {
		t.Fatal(err)
	}
	e.nats.Pause(t)
	err := s.Apply(ctx, rowMutation(1, "a", 2, 1, "during"))
	e.nats.Resume(t)
	if !storage.Retriable(err) {
		t.Fatalf("write while the log is frozen: %v, want a retriable error", err)
	}
	testwait.For(t, "the server to answer", func() bool { _, err := e.js.AccountInfo(ctx); return err == nil })
	// A condition sees the unsettled write as the log will have it.
	during := string(rowKey("a", 2))
	applied, err := s.ApplyIf(ctx, rowMutation(1, "a", 3, 1, "after"), func(it kv.Iterator) (bool, error) {
		for ok := it.First(); ok; ok = it.Next() {
			if string(it.Key()) == during {
				return true, nil
			}
		}
		return false, it.Error()
	})
	if err != nil || !applied {
		t.Fatalf("write conditional on the unsettled one: applied %v, %v", applied, err)
	}
	want := map[string]string{
		string(rowKey("a", 1)): "before",
		string(rowKey("a", 2)): "during",
		string(rowKey("a", 3)): "after",
	}
	if got := contents(t, s, e.committer, 1); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	s.Close()
	s = e.open()
	defer s.Close()
	if got := contents(t, s, e.committer, 1); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after replay got %v, want %v", got, want)
	}
	if got := counterValue(s.m.replayed); got != 3 {
		t.Fatalf("replayed %v records, want 3", got)
	}
}
