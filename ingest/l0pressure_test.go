package ingest

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/testwait"
)

// fakeL0 answers a pressure set by the test and records what it was asked.
type fakeL0 struct {
	p     atomic.Uint64 // math.Float64bits
	mu    sync.Mutex
	asked map[[2]int]int // (table, range) -> calls
}

var _ L0Gauge = (*fakeL0)(nil)

func newFakeL0(p float64) *fakeL0 {
	g := &fakeL0{asked: map[[2]int]int{}}
	g.set(p)
	return g
}

func (g *fakeL0) set(p float64) { g.p.Store(math.Float64bits(p)) }

func (g *fakeL0) L0Pressure(table storage.TableID, r int) float64 {
	g.mu.Lock()
	g.asked[[2]int{int(table), r}]++
	g.mu.Unlock()
	return math.Float64frombits(g.p.Load())
}

func (g *fakeL0) calls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.asked {
		n += c
	}
	return n
}

func gaugeValue(t *testing.T, s *Shard) float64 {
	t.Helper()
	var m dto.Metric
	if err := s.m.l0Pressure.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// TestFlushDelayedByL0Pressure checks that a flush below the limit is
// delayed in proportion to the pressure, and that pressure 0 or NaN delays
// nothing.
func TestFlushDelayedByL0Pressure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pressure float64
		delayed  bool
	}{
		{"none", 0, false},
		{"nan", math.NaN(), false},
		{"half", 0.5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.cfg.FlushDelay = 200 * time.Millisecond
			g := newFakeL0(tc.pressure)
			e.l0 = g
			s := e.open()
			defer s.Close()
			ctx := context.Background()
			if err := s.Apply(ctx, rowMutation(3, "p", 1, 1, "v")); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			g.mu.Lock()
			asked := g.asked[[2]int{3, 0}]
			g.mu.Unlock()
			if asked == 0 {
				t.Fatalf("gauge asked %v, want table 3 range 0", g.asked)
			}
			delays, secs := counterValue(s.m.flushDelays), counterValue(s.m.flushDelaySeconds)
			if !tc.delayed {
				if delays != 0 || secs != 0 {
					t.Fatalf("%v delays of %vs at pressure %v", delays, secs, tc.pressure)
				}
				return
			}
			// Half the pressure, half the longest delay: a lower bound.
			if delays != 1 || secs < 0.1 || took < 100*time.Millisecond {
				t.Fatalf("flush took %v: %v delays, %vs counted; want one of at least 100ms", took, delays, secs)
			}
			if got := gaugeValue(t, s); got != tc.pressure {
				t.Fatalf("l0_pressure gauge %v, want %v", got, tc.pressure)
			}
			if got := contents(t, s, e.committer, 3); len(got) != 1 {
				t.Fatalf("%d rows after the flush, want 1", len(got))
			}
		})
	}
}

// TestFlushHeldAtL0Limit holds a flush at pressure 1: nothing is committed,
// memtables fill, writes fail with storage.ErrOverloaded; once the pressure
// drops the flush commits, writes resume and every acknowledged write is
// there.
func TestFlushHeldAtL0Limit(t *testing.T) {
	e := newEnv(t)
	e.cfg.WriteTimeout = 50 * time.Millisecond
	e.cfg.FlushDelay = 5 * time.Millisecond
	e.cfg.FlushHold = time.Hour
	g := newFakeL0(1)
	e.l0 = g
	s := e.open()
	defer s.Close()
	ctx := context.Background()

	acked := map[string]string{}
	val := string(make([]byte, 200))
	i := 0
	write := func() error {
		m := rowMutation(1, "p"+strconv.Itoa(i%100), int64(i), 1, val+strconv.Itoa(i))
		err := s.Apply(ctx, m)
		if err == nil {
			acked[string(m.Entries[0].Key)] = val + strconv.Itoa(i)
		}
		i++
		return err
	}
	var err error
	for err == nil {
		err = write()
	}
	if !errors.Is(err, storage.ErrOverloaded) {
		t.Fatalf("write failed with %v, want ErrOverloaded", err)
	}
	if n := counterValue(s.m.flushes); n != 0 {
		t.Fatalf("%v flushes committed while L0 is at its limit", n)
	}
	testwait.For(t, "the held flush to ask again", func() bool { return g.calls() > 2 })
	if got := gaugeValue(t, s); got != 1 {
		t.Fatalf("l0_pressure gauge %v, want 1", got)
	}

	g.set(0.2)
	testwait.For(t, "writes to resume", func() bool { return write() == nil })
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if counterValue(s.m.flushDelays) == 0 || counterValue(s.m.flushDelaySeconds) == 0 {
		t.Fatal("the held flush was not counted")
	}
	got := contents(t, s, e.committer, 1)
	for k, v := range acked {
		if got[k] != v {
			t.Fatalf("acknowledged row %x lost", k)
		}
	}
	if len(got) != len(acked) {
		t.Fatalf("%d rows readable, %d acknowledged", len(got), len(acked))
	}
}

// TestFlushHoldBounded checks that a flush held past the limit commits
// after FlushHold even if the pressure never drops.
func TestFlushHoldBounded(t *testing.T) {
	e := newEnv(t)
	e.cfg.FlushDelay = 0 // polls every holdPoll
	e.cfg.FlushHold = 150 * time.Millisecond
	e.l0 = newFakeL0(math.Inf(1))
	s := e.open()
	defer s.Close()
	ctx := context.Background()
	if err := s.Apply(ctx, rowMutation(1, "p", 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if secs := counterValue(s.m.flushDelaySeconds); secs < 0.15 {
		t.Fatalf("held %vs, want FlushHold", secs)
	}
	if n := counterValue(s.m.flushes); n != 1 {
		t.Fatalf("%v flushes, want 1", n)
	}
}

// TestHeldFlushClose checks that Close does not wait out a hold.
func TestHeldFlushClose(t *testing.T) {
	e := newEnv(t)
	e.cfg.FlushHold = time.Hour
	e.l0 = newFakeL0(5)
	s := e.open()
	ctx := context.Background()
	if err := s.Apply(ctx, rowMutation(1, "p", 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.Flush(fctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("flush held at pressure 5 returned %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The write stays in the commitlog: a reopened shard without
	// back-pressure flushes it.
	e.l0 = nil
	s = e.open()
	defer s.Close()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, s, e.committer, 1); len(got) != 1 {
		t.Fatalf("%d rows after reopen, want 1", len(got))
	}
}
