package transport

import (
	"sync"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/testwait"
)

func TestWorkers(t *testing.T) {
	w := newWorkers(time.Minute)
	done := make(chan struct{})
	w.run(func() { done <- struct{}{} })
	testwait.Recv(t, "the first task", done)
	// The worker, done, waits for the next task instead of ending.
	select {
	case w.tasks <- func() { done <- struct{}{} }:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle worker takes no task")
	}
	testwait.Recv(t, "the second task", done)
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
	testwait.Wait(t, "the overlapping tasks", &wg)
	w.stop()
	testwait.For(t, "the workers to end after stop", func() bool { return w.live.Load() == 0 })
	// After stop a task still runs, on a worker that then ends.
	w.run(func() { close(done) })
	testwait.Recv(t, "the task run after stop", done)
}

func TestWorkersEndWhenIdle(t *testing.T) {
	w := newWorkers(time.Millisecond)
	done := make(chan struct{})
	w.run(func() { close(done) })
	testwait.Recv(t, "the task", done)
	testwait.For(t, "the idle worker to end", func() bool { return w.live.Load() == 0 })
}
