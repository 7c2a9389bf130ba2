// Package testwait bounds what tests wait for. A wait that never ends (a
// sync that never happens, a signal never sent, a goroutine that never
// returns) fails its test after Timeout, naming what it waited for, instead
// of hanging the package until go test's -timeout, which names no test.
package testwait

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

// Timeout is how long a test waits for anything. It is far above any wait
// that a working program needs, even on a loaded machine under the race
// detector, so it never decides a result; it turns a hang into a failure.
const Timeout = 30 * time.Second

// poll is how often For checks its condition.
const poll = time.Millisecond

// cleanupTimeout bounds a failed test's deferred calls, which often wait
// for the same thing (a Close that waits for the sync that never
// happened). A variable for this package's test of it.
var cleanupTimeout = 10 * time.Second

// For polls cond until it holds.
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	forWithin(t, Timeout, what, cond)
}

// Recv returns what ch delivers.
func Recv[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	return recvWithin(t, Timeout, what, ch)
}

// Wait waits for wg.
func Wait(t testing.TB, what string, wg *sync.WaitGroup) {
	t.Helper()
	waitWithin(t, Timeout, what, wg)
}

func forWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			fail(t, d, what)
		}
		time.Sleep(poll)
	}
}

func recvWithin[T any](t testing.TB, d time.Duration, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
	}
	fail(t, d, what)
	var zero T // for the compiler: fail does not return
	return zero
}

func waitWithin(t testing.TB, d time.Duration, what string, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		// Left behind if wg never finishes: the test fails anyway.
		wg.Wait()
		close(done)
	}()
	recvWithin(t, d, what, done)
}

// fail fails t for what it waited d for. The message goes to stderr at
// once too, since t's log is printed only when the test ends. If the
// test's deferred calls then hang as well, the binary is stopped with every
// goroutine's stack after cleanupTimeout, as go test's -timeout would do
// minutes later, without naming the test.
func fail(t testing.TB, d time.Duration, what string) {
	t.Helper()
	msg := fmt.Sprintf("%s: waited %v for %s", t.Name(), d, what)
	fmt.Fprintln(os.Stderr, msg)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) }) // runs once the test function has returned
	go func() {
		timer := time.NewTimer(cleanupTimeout)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			debug.SetTraceback("all")
			panic(msg + ", then did not return from its deferred calls in " + cleanupTimeout.String())
		}
	}()
	t.Fatalf("waited %v for %s", d, what)
}
