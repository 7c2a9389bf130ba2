package cache

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// errLoadExited is returned to the callers of a load that called
// runtime.Goexit instead of returning.
var errLoadExited = errors.New("cache: load exited without returning")

// loadPanic carries a load's panic to every caller, each of which panics
// again, as a panic in the caller's own goroutine would have.
type loadPanic struct {
	value any
	stack []byte
}

func (p *loadPanic) Error() string {
	return fmt.Sprintf("cache: load panicked: %v\n\n%s", p.value, p.stack)
}

// flight makes concurrent misses on one key share a single load.
//
// The load runs in its own goroutine with a context that keeps the values of
// the first caller's but not its cancellation: a caller that gives up returns
// at once with its context's error, while the others keep waiting. Only when
// every caller has given up is the load cancelled, and the key forgotten so
// that the next caller starts afresh. A load that panics makes every caller
// panic with it, as if the load had run in the caller's goroutine.
type flight[K comparable] struct {
	mu    sync.Mutex
	calls map[K]*call
}

type call struct {
	done    chan struct{}
	val     []byte
	err     error
	panic   *loadPanic
	waiters int // guarded by flight.mu
	cancel  context.CancelFunc
}

// do returns the result of fn for key, sharing a call in progress.
func (g *flight[K]) do(ctx context.Context, key K, fn LoadFunc) ([]byte, error) {
	g.mu.Lock()
	c, ok := g.calls[key]
	if ok {
		c.waiters++
	} else {
		if g.calls == nil {
			g.calls = make(map[K]*call)
		}
		loadCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &call{done: make(chan struct{}), waiters: 1, cancel: cancel}
		g.calls[key] = c
		go g.run(loadCtx, key, c, fn)
	}
	g.mu.Unlock()

	select {
	case <-c.done:
		if c.panic != nil {
			panic(c.panic)
		}
		return c.val, c.err
	case <-ctx.Done():
		g.mu.Lock()
		c.waiters--
		if c.waiters == 0 {
			c.cancel()
			if g.calls[key] == c {
				delete(g.calls, key)
			}
		}
		g.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (g *flight[K]) run(ctx context.Context, key K, c *call, fn LoadFunc) {
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil {
				c.panic = &loadPanic{value: r, stack: debug.Stack()}
			} else {
				c.err = errLoadExited
			}
		}
		c.cancel()
		g.mu.Lock()
		if g.calls[key] == c {
			delete(g.calls, key)
		}
		g.mu.Unlock()
		close(c.done)
	}()
	c.val, c.err = fn(ctx)
	returned = true
}
