package frontend

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWorkers(t *testing.T) {
	w := newWorkers(time.Minute)
	base := runtime.NumGoroutine()
	var wg sync.WaitGroup
	var ran atomic.Int64
	// Tasks that overlap need a worker each; tasks run one after another
	// reuse the idle ones.
	for round := range 3 {
		release := make(chan struct{})
		for range 10 {
			wg.Add(1)
			w.run(func() {
				defer wg.Done()
				<-release
				ran.Add(1)
			})
		}
		close(release)
		wg.Wait()
		if n := runtime.NumGoroutine() - base; n > 10 {
			t.Fatalf("round %d: %d workers for 10 tasks at a time", round, n)
		}
	}
	if ran.Load() != 30 {
		t.Fatalf("%d tasks ran, want 30", ran.Load())
	}
	w.stop()
	for runtime.NumGoroutine() > base {
		time.Sleep(time.Millisecond)
	}
	// After stop a task still runs, on a worker that then ends.
	done := make(chan struct{})
	w.run(func() { close(done) })
	<-done
}
