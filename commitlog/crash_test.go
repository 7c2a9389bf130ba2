package commitlog

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// runCrashChild starts the child, kills it once it has run for about d after
// its first acknowledgement, and returns the ids it reported.
func runCrashChild(t *testing.T, dir string, base uint64, d time.Duration) []uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashBaseEnv+"="+strconv.FormatUint(base, 10))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan struct{})
	var ids []uint64
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReader(out)
		for {
			// A line cut short by the kill has no newline and is ignored.
			line, err := r.ReadString('\n')
			if err == io.EOF {
				readErr <- nil
				return
			}
			if err != nil {
				readErr <- err
				return
			}
			s, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "ack ")
			if !ok {
				continue // test framework output
			}
			id, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				readErr <- fmt.Errorf("child printed %q", line)
				return
			}
			if len(ids) == 0 {
				close(first)
			}
			ids = append(ids, id)
		}
	}()
	select {
	case <-first:
		time.Sleep(d)
	case <-time.After(30 * time.Second):
		t.Error("the child acknowledged nothing in 30s")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the child exited by itself")
	}
	return ids
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
				fmt.Fprintf(os.Stdout, "ack %d\n", id)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Minute) // the parent kills us long before
	os.Exit(3)
}
