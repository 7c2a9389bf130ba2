package commitlog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/crashtest"
)

// crashChildEnv, when set to a directory, turns the test binary into the
// child of TestCrashProcess: it appends records to a log in that directory
// until it is killed.
const (
	crashChildEnv = "SEDIMENT_COMMITLOG_CRASH_DIR"
	crashBaseEnv  = "SEDIMENT_COMMITLOG_CRASH_BASE"
)

// TestCrashProcess kills a process appending to a log with SIGKILL at random
// moments, then checks that every record the process reported as
// acknowledged is replayed intact and that no record is half present.
func TestCrashProcess(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir, os.Getenv(crashBaseEnv))
		return
	}
	budget := 12 * time.Second
	if testing.Short() {
		budget = 4 * time.Second
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	acked := map[uint64]bool{}
	start := time.Now()
	var rounds, replayed int
	for rounds < 3 || time.Since(start) < budget {
		rounds++
		base := uint64(rounds) << 32
		ids := runCrashChild(t, dir, base, time.Duration(50+rng.IntN(400))*time.Millisecond)
		for _, id := range ids {
			acked[id] = true
		}

		l, err := Open(Options{Dir: dir, Logger: testLogger(t)})
		if err != nil {
			t.Fatalf("round %d: open: %v", rounds, err)
		}
		seen := map[uint64]bool{}
		err = l.Replay(func(pos Position, rec []byte) error {
			id, err := checkRecord(rec)
			if err != nil {
				return fmt.Errorf("record at %v: %w", pos, err)
			}
			if seen[id] {
				return fmt.Errorf("record %d replayed twice", id)
			}
			seen[id] = true
			return nil
		})
		if cerr := l.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("round %d: replay: %v", rounds, err)
		}
		for id := range acked {
			if !seen[id] {
				t.Fatalf("round %d: acknowledged record %#x lost", rounds, id)
			}
		}
		replayed = len(seen)
		t.Logf("round %d: %d acknowledged this round, %d records in the log", rounds, len(ids), len(seen))
	}
	if len(acked) == 0 {
		t.Fatal("the child never acknowledged a record")
	}
	t.Logf("%d rounds, %d acknowledged records, %d replayed", rounds, len(acked), replayed)
}

// runCrashChild runs the child, kills it about d after its first acknowledgement,
// and returns the ids it acknowledged.
func runCrashChild(t *testing.T, dir string, base uint64, d time.Duration) []uint64 {
	return crashtest.Run(t, "TestCrashProcess", []string{crashChildEnv + "=" + dir, crashBaseEnv + "=" + strconv.FormatUint(base, 10)}, d)
}

// crashChild appends records from several goroutines and prints "ack <id>"
// for each acknowledged one, until killed.
func crashChild(dir, baseStr string) {
	base, err := strconv.ParseUint(baseStr, 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad base:", err)
		os.Exit(2)
	}
	l, err := Open(Options{Dir: dir, SegmentSize: 256 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var next atomic.Uint64
	var mu sync.Mutex
	for range 8 {
		go func() {
			for {
				id := base + next.Add(1)
				if _, err := l.Append(context.Background(), makeRecord(id, int(id%3000))); err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					os.Exit(2)
				}
				mu.Lock()
				crashtest.Ack(id)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Minute) // the parent kills us long before
	os.Exit(3)
}
