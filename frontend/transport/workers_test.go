package transport

import (
	"sync"
	"testing"
	"time"
)

func TestWorkers(t *testing.T) {
	w := newWorkers(time.Minute)
	done := make(chan struct{})
	w.run(func() { done <- struct{}{} })
	<-done
	// The worker, done, waits for the next task instead of ending.
	select {
	case w.tasks <- func() { done <- struct{}{} }:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle worker takes no task")
	}
	<-done
	if n := w.live.Load(); n != 1 {
		t.Fatalf("%d workers, want 1", n)
	}
	// Overlapping tasks need a worker each.
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 10 {
		wg.Add(1)
		w.run(func() {
			defer wg.Done()
			<-release
		})
	}
	if n := w.live.Load(); n < 10 || n > 11 {
		t.Fatalf("%d workers for 10 tasks at once", n)
	}
	close(release)
	wg.Wait()
	w.stop()
	for w.live.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	// After stop a task still runs, on a worker that then ends.
	w.run(func() { close(done) })
	<-done
}

func TestWorkersEndWhenIdle(t *testing.T) {
	w := newWorkers(time.Millisecond)
	done := make(chan struct{})
	w.run(func() { close(done) })
	<-done
	for w.live.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
}
