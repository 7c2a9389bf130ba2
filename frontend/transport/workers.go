package transport

import (
	"sync/atomic"
	"time"
)

// workers runs statements on goroutines that outlive them. A goroutine
// starts with a small stack that a statement's first calls grow by
// copying it, again and again; a worker keeps its grown stack for the
// next statement. Profiles of a goroutine per statement showed a fifth
// of the server's time in stack growth.
type workers struct {
	tasks chan func()
	quit  chan struct{}
	idle  time.Duration
	// live counts the workers.
	live atomic.Int64
}

func newWorkers(idle time.Duration) *workers {
	return &workers{tasks: make(chan func()), quit: make(chan struct{}), idle: idle}
}

// run runs f on an idle worker, or on a new one when none is idle.
func (w *workers) run(f func()) {
	select {
	case w.tasks <- f:
	default:
		w.live.Add(1)
		go w.loop(f)
	}
}

// loop runs f and then what it is given, until it has been idle for
// w.idle or the workers stop.
func (w *workers) loop(f func()) {
	t := time.NewTimer(w.idle)
	defer func() {
		t.Stop()
		w.live.Add(-1)
	}()
	for {
		f()
		t.Reset(w.idle)
		select {
		case f = <-w.tasks:
		case <-t.C:
			return
		case <-w.quit:
			return
		}
	}
}

// stop ends idle workers; busy ones end when their task does.
func (w *workers) stop() { close(w.quit) }
