package exec

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestKeyedLocks(t *testing.T) {
	k := &keyedLocks{locks: map[string]*keyedLock{}}
	ctx := context.Background()
	if err := k.lock(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// Another key is free; the same key waits until its context ends.
	if err := k.lock(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	k.unlock("b")
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := k.lock(short, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("locking a held key: %v", err)
	}
	// Holders take turns.
	var wg sync.WaitGroup
	n := 0
	k.unlock("a")
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if err := k.lock(ctx, "a"); err != nil {
					t.Error(err)
					return
				}
				n++
				k.unlock("a")
			}
		})
	}
	wg.Wait()
	if n != 800 {
		t.Fatalf("n = %d, want 800", n)
	}
	if len(k.locks) != 0 {
		t.Fatalf("%d locks left", len(k.locks))
	}
}
