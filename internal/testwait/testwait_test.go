package testwait

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fatalTB records the failure of a helper and stops its goroutine, as
// testing.T's Fatalf does, and runs its cleanups when run's goroutine
// ends.
type fatalTB struct {
	testing.TB
	msg      string
	cleanups []func()
}

func (f *fatalTB) Helper()           {}
func (f *fatalTB) Name() string      { return "TestFake" }
func (f *fatalTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls wait with a fatalTB in a goroutine of its own and returns
// what it failed with, "" if it returned.
func run(wait func(testing.TB)) string {
	tb := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			for _, fn := range tb.cleanups {
				fn()
			}
		}()
		wait(tb)
	}()
	<-done // wait returns or fails within its own short bound
	return tb.msg
}

const short = 20 * time.Millisecond

func TestForFailsNamingWhat(t *testing.T) {
	if msg := run(func(tb testing.TB) { forWithin(tb, short, "the moon", func() bool { return false }) }); msg != "waited 20ms for the moon" {
		t.Fatalf("failure %q does not name what it waited for", msg)
	}
	n := 0
	if msg := run(func(tb testing.TB) { forWithin(tb, Timeout, "three polls", func() bool { n++; return n == 3 }) }); msg != "" || n != 3 {
		t.Fatalf("a condition that comes true: failure %q after %d polls", msg, n)
	}
}

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	if msg := run(func(tb testing.TB) { recvWithin(tb, short, "a value", ch) }); !strings.Contains(msg, "a value") {
		t.Fatalf("failure %q does not name what it waited for", msg)
	}
	ch <- 7
	if got := Recv(t, "a sent value", ch); got != 7 {
		t.Fatalf("Recv = %d, want 7", got)
	}
}

func TestWait(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	if msg := run(func(tb testing.TB) { waitWithin(tb, short, "the group", &wg) }); !strings.Contains(msg, "the group") {
		t.Fatalf("failure %q does not name what it waited for", msg)
	}
	wg.Done()
	Wait(t, "a finished group", &wg)
}

// TestHangingCleanupStopsBinary runs itself as a child whose wait fails and
// whose deferred call then hangs: the child must stop soon, naming the test
// and what it waited for, with every goroutine's stack.
func TestHangingCleanupStopsBinary(t *testing.T) {
	if os.Getenv("TESTWAIT_CHILD") == "1" {
		cleanupTimeout = 100 * time.Millisecond
		never := make(chan struct{})
		defer func() { <-never }()
		recvWithin(t, short, "nothing", never)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHangingCleanupStopsBinary$", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), "TESTWAIT_CHILD=1")
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("child: %v, want it stopped with an error; output:\n%s", err, out)
	}
	for _, want := range []string{
		"panic: TestHangingCleanupStopsBinary: waited 20ms for nothing, then did not return from its deferred calls in 100ms",
		"testwait.TestHangingCleanupStopsBinary.func1", // the hanging deferred call's stack
	} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("child output lacks %q:\n%s", want, out)
		}
	}
}
