package manifest

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/testwait"
)

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func garbageKeys(gs []TableGarbage) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Key)
	}
	return out
}

func TestDropSSTables(t *testing.T) {
	e := newEnv(t)
	clock := &fakeClock{now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	m, err := Open(ctxT(t), e.connect(), e.store, "c1", Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	initRanges(t, m)
	tbl, other := uuid.New(), uuid.New()
	for r := range testRanges {
		lo, hi := RangeBounds(r, testRanges)
		for _, c := range []Commit{
			{Table: tbl, Range: r, Add: []SSTable{sst("t/"+string(rune('a'+r)), lo, hi)}},
			{Table: other, Range: r, Add: []SSTable{sst("o/"+string(rune('a'+r)), lo, hi)}},
		} {
			if _, err := m.CommitSSTables(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	dropped, err := m.DropSSTables(ctx, tbl)
	if err != nil || len(dropped) != testRanges {
		t.Fatalf("DropSSTables = %d sstables, %v; want %d", len(dropped), err, testRanges)
	}
	if live, err := m.SSTables(ctx, tbl); err != nil || len(live) != 0 {
		t.Fatalf("after drop: %d live, %v", len(live), err)
	}
	if live, err := m.SSTables(ctx, other); err != nil || len(live) != testRanges {
		t.Fatalf("other table: %d live, %v; want %d", len(live), err, testRanges)
	}
	gs, err := m.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := garbageKeys(gs), []string{"t/a", "t/b", "t/c", "t/d"}; !slices.Equal(got, want) {
		t.Fatalf("garbage %v, want %v", got, want)
	}
	for i, g := range gs {
		if g.Table != tbl || g.Range != i || g.Reason != ReasonTruncated || !g.Since.Equal(clock.Now()) || g.Size != 1<<20 {
			t.Fatalf("garbage entry %+v", g)
		}
	}
	// A retry drops nothing more and lists nothing twice.
	if again, err := m.DropSSTables(ctx, tbl); err != nil || len(again) != 0 {
		t.Fatalf("retried drop: %v, %v", again, err)
	}
	if gs2, _ := m.Garbage(ctx); len(gs2) != len(gs) {
		t.Fatalf("garbage after retry: %v", garbageKeys(gs2))
	}
	// An unknown table has nothing to drop.
	if d, err := m.DropSSTables(ctx, uuid.New()); err != nil || len(d) != 0 {
		t.Fatalf("drop of an unknown table: %v, %v", d, err)
	}
	if _, err := m.DropSSTables(ctx, uuid.Nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("drop of the nil table: %v", err)
	}

	// A flush retried after the drop does not bring its SSTable back.
	lo, hi := RangeBounds(0, testRanges)
	got, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: 0, Add: []SSTable{sst("t/a", lo, hi)}})
	if err != nil || len(got) != 0 {
		t.Fatalf("retried add of a dropped sstable: %v, %v", got, err)
	}
	// New SSTables after the drop are live; the drop's garbage stays listed.
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: 0, Add: []SSTable{sst("t/new", lo, hi)}}); err != nil {
		t.Fatal(err)
	}

	// Collecting part of the list leaves the rest; collecting twice is a
	// no-op; a range with nothing left loses its document.
	if err := m.Collected(ctx, gs[0], gs[1]); err != nil {
		t.Fatal(err)
	}
	if err := m.Collected(ctx, gs[0], gs[1]); err != nil {
		t.Fatal(err)
	}
	left, err := m.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := garbageKeys(left), []string{"t/c", "t/d"}; !slices.Equal(got, want) {
		t.Fatalf("garbage after collection %v, want %v", got, want)
	}
	if live, err := m.SSTablesInRange(ctx, tbl, 0); err != nil || len(live) != 1 || live[0].Key != "t/new" {
		t.Fatalf("range 0 after collection: %v, %v", live, err)
	}
	if err := m.Collected(ctx, left...); err != nil {
		t.Fatal(err)
	}
	keys, err := m.sstables.keys(ctx, "t."+tbl.String()+".*")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []int{1, 2, 3} {
		if doc, err := get(ctx, m.sstables, sstablesKey(tbl, r)); err != nil || doc != nil {
			t.Fatalf("range %d: document %s, %v after its last garbage went", r, doc, err)
		}
	}
	if len(keys) != testRanges { // deletions are tombstones
		t.Fatalf("keys %v", keys)
	}
}

func TestCommitListsGarbage(t *testing.T) {
	e := newEnv(t)
	clock := &fakeClock{now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	m, err := Open(ctxT(t), e.connect(), e.store, "c1", Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	initRanges(t, m)
	tbl := uuid.New()
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{sst("a", 0, 10), sst("b", 5, 20)}}); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Minute)
	swap := Commit{Table: tbl, Range: testRange, Add: []SSTable{sst("c", 0, 20)}, Remove: []string{"a", "b"}, Discard: []string{"failed-output"}}
	if _, err := m.CommitSSTables(ctx, swap); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Minute)
	// A retry of the swap is applied already and changes nothing.
	if got, err := m.CommitSSTables(ctx, swap); err != nil || len(got) != 1 || got[0].Key != "c" {
		t.Fatalf("retried swap: %v, %v", got, err)
	}
	gs, err := m.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": ReasonRemoved, "b": ReasonRemoved, "failed-output": ReasonDiscarded}
	if len(gs) != len(want) {
		t.Fatalf("garbage %+v", gs)
	}
	for _, g := range gs {
		if want[g.Key] != g.Reason || !g.Since.Equal(clock.Now().Add(-time.Minute)) {
			t.Fatalf("garbage entry %+v", g)
		}
	}
	for _, bad := range []Commit{
		{Table: tbl, Range: testRange, Discard: []string{"c"}},                                      // live
		{Table: tbl, Range: testRange, Add: []SSTable{sst("x", 0, 1)}, Discard: []string{"x"}},      // both
		{Table: tbl, Range: testRange, Add: []SSTable{sst("x", 0, 1)}, Remove: []string{"x"}},       // both
		{Table: tbl, Range: testRange, Remove: []string{"c"}, Discard: []string{"c"}},               // twice
		{Table: tbl, Range: testRange, Discard: []string{""}},                                       // no key
		{Table: tbl, Range: testRange, Add: []SSTable{sst("y", 0, 1)}, Discard: []string{"y", "y"}}, // twice
	} {
		if _, err := m.CommitSSTables(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("commit %+v: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestRestoreKeepsGarbage(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	initRanges(t, m)
	tbl := uuid.New()
	lo, hi := RangeBounds(1, testRanges)
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: 1, Add: []SSTable{sst("a", lo, hi), sst("b", lo, hi)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DropSSTables(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	want, err := m.Garbage(ctx)
	if err != nil || len(want) != 2 {
		t.Fatalf("garbage %v, %v", want, err)
	}

	e.stop()
	if err := os.RemoveAll(e.natsDir); err != nil {
		t.Fatal(err)
	}
	e.start(0)
	js := e.connect()
	if _, err := Restore(ctx, e.store, js); err != nil {
		t.Fatal(err)
	}
	m2, err := Open(ctx, js, e.store, "c1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m2.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("garbage after restore %+v, want %+v", got, want)
	}
	for i := range got {
		if got[i].Key != want[i].Key || !got[i].Since.Equal(want[i].Since) || got[i].Table != tbl || got[i].Range != 1 {
			t.Fatalf("garbage after restore %+v, want %+v", got, want)
		}
	}
	if live, _ := m2.SSTables(ctx, tbl); len(live) != 0 {
		t.Fatalf("dropped sstables came back: %v", live)
	}
}

// TestDropSSTablesRacesFlushes drops a table while another writer commits
// to it: every SSTable ends up either live or on the garbage list, never
// both and never neither.
func TestDropSSTablesRacesFlushes(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	initRanges(t, m)
	tbl := uuid.New()
	lo, hi := RangeBounds(testRange, testRanges)
	const n = 20
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			if _, err := m.CommitSSTables(context.Background(), Commit{Table: tbl, Range: testRange, Add: []SSTable{sst(string(rune('A'+i)), lo, hi)}}); err != nil {
				t.Error(err)
			}
		}
	})
	for range 5 {
		if _, err := m.DropSSTables(ctx, tbl); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Wait(t, "the concurrent writers", &wg)
	live, err := m.SSTables(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := m.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, s := range live {
		seen[s.Key]++
	}
	for _, g := range gs {
		seen[g.Key]++
	}
	for i := range n {
		if k := string(rune('A' + i)); seen[k] != 1 {
			t.Fatalf("sstable %s is listed %d times (live %d, garbage %d)", k, seen[k], len(live), len(gs))
		}
	}
}
