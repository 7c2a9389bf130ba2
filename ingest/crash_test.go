package ingest

import (
	"strconv"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/testwait"
)

// TestCrashDuringFlush pulls the plug at each step of the first flush and
// checks, after a restart on what the disk kept, that every acknowledged
// write is readable and that each is stored exactly once across the
// committed SSTables and the replayed memtable.
func TestCrashDuringFlush(t *testing.T) {
	for _, point := range []string{"upload", "before commit", "after commit", "after release"} {
		t.Run(point, func(t *testing.T) {
			e := newEnv(t)
			c := newCrasher(e)
			// Writes hold the crasher's lock: they must never wait for a
			// flush, which may be waiting for the lock to crash.
			e.cfg.MemoryLimit = 64 << 20
			switch point {
			case "upload":
				setHook(&e.beforeUpload, c.crash)
			case "before commit":
				setHook(&e.beforeCommit, c.crash)
			case "after commit":
				setHook(&e.afterCommit, c.crash)
			}
			s := e.open()
			acked := map[string]string{}
			val := string(make([]byte, 150))
			for i := 0; ; i++ {
				m := rowMutation(1, "p"+strconv.Itoa(i%50), int64(i), 1, val+strconv.Itoa(i))
				ok, err := c.write(s, m)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				acked[string(m.Entries[0].Key)] = val + strconv.Itoa(i)
				if point == "after release" && counterValue(s.m.flushes) > 0 {
					// Crash once a flush released a segment, while
					// writes go on.
					segs, err := e.fs.ReadDir("commitlog/shard-00007")
					if err != nil {
						t.Fatal(err)
					}
					if segs[0] != "0000000000000001.log" {
						c.crash()
					}
				}
			}
			<-c.done
			s.Close() // the abandoned process
			flushedBefore := len(e.committer.SSTables(1))
			switch point {
			case "upload", "before commit":
				if flushedBefore != 0 {
					t.Fatalf("%d SSTables committed before the crash", flushedBefore)
				}
			default:
				if flushedBefore == 0 {
					t.Fatal("no SSTable committed before the crash")
				}
			}

			e.fs = c.clone
			e.beforeUpload.Store(nil)
			e.beforeCommit.Store(nil)
			e.afterCommit.Store(nil)
			e.cfg.FlushAge = 50 * time.Millisecond
			s = e.open()
			defer s.Close()
			check := func() {
				got := contents(t, s, e.committer, 1)
				for k, v := range acked {
					if got[k] != v {
						t.Fatalf("acknowledged row %x lost (got %q)", k, got[k])
					}
				}
				// Between a flush's commit and the memtable's removal, reads
				// see both (merging is idempotent); count once no flush runs.
				testwait.For(t, "flushes to finish", func() bool { return s.flushing() == 0 })
				stored := count(t, s.NewIter(1, nil, nil))
				for _, sst := range e.committer.SSTables(1) {
					stored += int(sst.Entries)
				}
				if stored != len(got) {
					t.Fatalf("%d entries stored for %d rows: some are stored twice", stored, len(got))
				}
			}
			check()
			// The restarted shard flushes what it replayed.
			testwait.For(t, "flush after restart", func() bool { return len(e.committer.SSTables(1)) > flushedBefore })
			check()
		})
	}
}
