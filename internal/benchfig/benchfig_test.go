package benchfig

import (
	"testing"
	"time"
)

func TestBestKeepsSmallestPositive(t *testing.T) {
	var b Best
	b.Observe(5, 0, 7)
	b.Observe(3, 4, 9)
	b.Observe(0, 6, 8)
	if want := (Best{3, 4, 7}); b[0] != want[0] || b[1] != want[1] || b[2] != want[2] {
		t.Fatalf("Best = %v, want %v", b, want)
	}
}

func TestSpeedup(t *testing.T) {
	if got := Speedup(2*time.Second, 3*time.Second); got != 1.5 {
		t.Fatalf("Speedup = %v, want 1.5", got)
	}
	if got := Speedup(0, time.Second); got != 0 {
		t.Fatalf("Speedup with a side that did not run = %v, want 0", got)
	}
}
