package cache

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/testwait"
)

// waitWaiters waits until n callers wait on key's call.
func waitWaiters(t *testing.T, g *flight[string], key string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		c := g.calls[key]
		got := 0
		if c != nil {
			got = c.waiters
		}
		g.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("never saw %d waiters on %q", n, key)
}

func TestFlightSharesOneLoad(t *testing.T) {
	var g flight[string]
	var loads atomic.Int32
	release := make(chan struct{})
	const n = 50
	var wg sync.WaitGroup
	results := make([][]byte, n)
	for i := range n {
		wg.Go(func() {
			v, err := g.do(t.Context(), "k", func(context.Context) ([]byte, error) {
				loads.Add(1)
				<-release
				return []byte("v"), nil
			})
			if err != nil {
				t.Error(err)
			}
			results[i] = v
		})
	}
	waitWaiters(t, &g, "k", n)
	close(release)
	testwait.Wait(t, "the callers", &wg)
	if got := loads.Load(); got != 1 {
		t.Fatalf("%d loads, want 1", got)
	}
	for i, v := range results {
		if string(v) != "v" {
			t.Fatalf("caller %d got %q", i, v)
		}
	}
	if len(g.calls) != 0 {
		t.Fatalf("%d calls left behind", len(g.calls))
	}
}

type ctxKey struct{}

func TestFlightCallerGivesUp(t *testing.T) {
	var g flight[string]
	release := make(chan struct{})
	var loadCtx context.Context
	quitter, quit := context.WithCancel(context.WithValue(t.Context(), ctxKey{}, "first"))
	errs := make(chan error, 1)
	go func() {
		_, err := g.do(quitter, "k", func(ctx context.Context) ([]byte, error) {
			loadCtx = ctx
			<-release
			return []byte("v"), ctx.Err()
		})
		errs <- err
	}()
	waitWaiters(t, &g, "k", 1)
	got := make(chan []byte)
	go func() {
		v, err := g.do(t.Context(), "k", func(context.Context) ([]byte, error) { return nil, errors.New("second load") })
		if err != nil {
			t.Error(err)
		}
		got <- v
	}()
	waitWaiters(t, &g, "k", 2)
	quit()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller got %v, want context.Canceled", err)
	}
	close(release)
	if v := <-got; string(v) != "v" {
		t.Fatalf("second caller got %q", v)
	}
	if loadCtx.Value(ctxKey{}) != "first" {
		t.Fatal("load context lost the first caller's values")
	}
}

func TestFlightAllGiveUp(t *testing.T) {
	var g flight[string]
	cancelled := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, 1)
	go func() {
		_, err := g.do(ctx, "k", func(ctx context.Context) ([]byte, error) {
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
		errs <- err
	}()
	waitWaiters(t, &g, "k", 1)
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	<-cancelled // the abandoned load was cancelled
	// The next caller starts afresh rather than joining the cancelled load.
	v, err := g.do(t.Context(), "k", func(context.Context) ([]byte, error) { return []byte("fresh"), nil })
	if err != nil || string(v) != "fresh" {
		t.Fatalf("got %q, %v", v, err)
	}
}

func TestFlightLoadPanics(t *testing.T) {
	var g flight[string]
	defer func() {
		p, ok := recover().(*loadPanic)
		if !ok || p.value != "boom" || !strings.Contains(p.Error(), "boom") {
			t.Fatalf("recovered %v, want the load's panic", p)
		}
		if len(g.calls) != 0 {
			t.Fatal("a panicked call was left behind")
		}
	}()
	g.do(t.Context(), "k", func(context.Context) ([]byte, error) { panic("boom") })
	t.Fatal("do returned after its load panicked")
}

func TestFlightLoadExits(t *testing.T) {
	var g flight[string]
	_, err := g.do(t.Context(), "k", func(context.Context) ([]byte, error) {
		runtime.Goexit()
		return nil, nil
	})
	if !errors.Is(err, errLoadExited) {
		t.Fatalf("got %v, want errLoadExited", err)
	}
}
