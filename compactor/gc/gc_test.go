package gc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// failingStore fails the deletion of the keys in fail.
type failingStore struct {
	objectstore.Store
	mu   sync.Mutex
	fail map[string]bool
}

func (s *failingStore) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	fail := s.fail[key]
	s.mu.Unlock()
	if fail {
		return errors.New("test: delete refused")
	}
	return s.Store.Delete(ctx, key)
}

type env struct {
	t     testing.TB
	ctx   context.Context
	m     *manifest.Manifest
	store *failingStore
	dir   string // of the file store
	clock *clock
	table uuid.UUID
}

const ranges = 4

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	js, _ := manifesttest.JetStream(t)
	dir := t.TempDir()
	fs, err := objectstore.NewFile(vfs.Default, dir, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := manifest.Open(ctx, js, fs, "gc", manifest.Options{Now: c.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, ranges); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, m: m, store: &failingStore{Store: fs, fail: map[string]bool{}}, dir: dir, clock: c, table: uuid.New()}
}

// commit uploads an object and commits it as an SSTable of range r.
func (e *env) commit(key string, r int) {
	e.t.Helper()
	if _, err := e.store.Put(e.ctx, key, []byte("sstable "+key)); err != nil {
		e.t.Fatal(err)
	}
	lo, hi := manifest.RangeBounds(r, ranges)
	s := manifest.SSTable{Key: key, Size: int64(len("sstable " + key)), MinToken: lo, MaxToken: hi}
	if _, err := e.m.CommitSSTables(e.ctx, manifest.Commit{Table: e.table, Range: r, Add: []manifest.SSTable{s}}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) exists(key string) bool {
	e.t.Helper()
	_, err := e.store.Head(e.ctx, key)
	if objectstore.IsNotFound(err) {
		return false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return true
}

func (e *env) collector(holder string, reg prometheus.Registerer) *Collector {
	e.t.Helper()
	c, err := New(e.m, e.store, Config{GracePeriod: time.Hour, Interval: 10 * time.Millisecond}, Options{
		Holder: holder, LeaseTTL: time.Minute, Now: e.clock.Now, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func TestCollectAfterGrace(t *testing.T) {
	e := newEnv(t)
	for r := range ranges {
		e.commit(fmt.Sprintf("old/%d", r), r)
	}
	if _, err := e.m.DropSSTables(e.ctx, e.table); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(30 * time.Minute)
	e.commit("young/0", 0)
	e.commit("live/1", 1)
	if _, err := e.m.CommitSSTables(e.ctx, manifest.Commit{Table: e.table, Range: 0, Remove: []string{"young/0"}}); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	c := e.collector("n1", reg)
	// Nothing is old enough yet.
	st, err := c.Collect(e.ctx)
	if err != nil || st.Deleted != 0 || st.Waiting != ranges+1 {
		t.Fatalf("pass within grace: %+v, %v", st, err)
	}
	e.clock.Add(30 * time.Minute) // the drop's objects are an hour old, young/0 half that
	st, err = c.Collect(e.ctx)
	if err != nil || st.Deleted != ranges || st.Waiting != 1 || st.Failed != 0 {
		t.Fatalf("pass after grace: %+v, %v", st, err)
	}
	for r := range ranges {
		if k := fmt.Sprintf("old/%d", r); e.exists(k) {
			t.Errorf("%s survived its grace period", k)
		}
	}
	if !e.exists("young/0") || !e.exists("live/1") {
		t.Fatal("a young garbage object or a live one was deleted")
	}
	gs, err := e.m.Garbage(e.ctx)
	if err != nil || len(gs) != 1 || gs[0].Key != "young/0" {
		t.Fatalf("garbage left: %+v, %v", gs, err)
	}
	if got := value(t, c.deleted); got != ranges {
		t.Fatalf("deleted counter %v", got)
	}
	if got := value(t, c.bytes); got != float64(ranges*len("sstable old/0")) {
		t.Fatalf("bytes counter %v", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	if !names["sediment_gc_deleted_objects_total"] || !names["sediment_gc_lease_held"] {
		t.Fatalf("registry holds %v", names)
	}

	e.clock.Add(30 * time.Minute)
	if st, err := c.Collect(e.ctx); err != nil || st.Deleted != 1 || st.Waiting != 0 {
		t.Fatalf("last pass: %+v, %v", st, err)
	}
	if e.exists("young/0") || !e.exists("live/1") {
		t.Fatal("young/0 should be gone and live/1 kept")
	}
	if live, err := e.m.SSTables(e.ctx, e.table); err != nil || len(live) != 1 || live[0].Key != "live/1" {
		t.Fatalf("live sstables %+v, %v", live, err)
	}
}

// TestCollectIsIdempotent covers a crash between deletion and unlisting,
// and deletions that fail.
func TestCollectIsIdempotent(t *testing.T) {
	e := newEnv(t)
	e.commit("a", 0)
	e.commit("b", 0)
	e.commit("c", 2)
	if _, err := e.m.DropSSTables(e.ctx, e.table); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(2 * time.Hour)
	// "a" was deleted by a collector that crashed before unlisting it.
	if err := e.store.Delete(e.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	e.store.fail["c"] = true
	c := e.collector("n1", nil)
	st, err := c.Collect(e.ctx)
	if err != nil || st.Deleted != 2 || st.Failed != 1 {
		t.Fatalf("pass: %+v, %v", st, err)
	}
	gs, err := e.m.Garbage(e.ctx)
	if err != nil || len(gs) != 1 || gs[0].Key != "c" || !e.exists("c") {
		t.Fatalf("a failed deletion must stay listed: %+v, %v", gs, err)
	}
	delete(e.store.fail, "c")
	if st, err := c.Collect(e.ctx); err != nil || st.Deleted != 1 || st.Failed != 0 {
		t.Fatalf("retry pass: %+v, %v", st, err)
	}
	if gs, err := e.m.Garbage(e.ctx); err != nil || len(gs) != 0 || e.exists("c") {
		t.Fatalf("after retry: %+v, %v", gs, err)
	}
}

func TestOneCollectorHoldsTheLease(t *testing.T) {
	e := newEnv(t)
	e.commit("a", 1)
	if _, err := e.m.DropSSTables(e.ctx, e.table); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(2 * time.Hour)
	c1, c2 := e.collector("n1", nil), e.collector("n2", nil)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	stats := make([]Stats, 2)
	for i, c := range []*Collector{c1, c2} {
		wg.Go(func() { stats[i], errs[i] = c.Collect(e.ctx) })
	}
	testwait.Wait(t, "both collectors", &wg)
	held := 0
	for i, err := range errs {
		switch {
		case err == nil:
			held++
		case !errors.Is(err, manifest.ErrLeaseHeld):
			t.Fatalf("collector %d: %v", i, err)
		}
	}
	if held != 1 || stats[0].Deleted+stats[1].Deleted != 1 {
		t.Fatalf("%d collectors ran a pass (errors %v, stats %+v); want 1", held, errs, stats)
	}
	winner, loser := c1, c2
	if errs[0] != nil {
		winner, loser = c2, c1
	}
	if value(t, winner.holding) != 1 || value(t, loser.holding) != 0 {
		t.Fatal("lease_held gauges disagree with the passes")
	}
	// The holder renews; the other takes over once the lease expires.
	if _, err := winner.Collect(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := loser.Collect(e.ctx); !errors.Is(err, manifest.ErrLeaseHeld) {
		t.Fatalf("standby took a live lease: %v", err)
	}
	e.clock.Add(2 * time.Minute)
	if _, err := loser.Collect(e.ctx); err != nil {
		t.Fatalf("standby after expiry: %v", err)
	}
}

func TestRunCollectsAndReleases(t *testing.T) {
	e := newEnv(t)
	e.commit("a", 3)
	if _, err := e.m.DropSSTables(e.ctx, e.table); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(2 * time.Hour)
	c := e.collector("n1", nil)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	for e.exists("a") {
		select {
		case err := <-done:
			t.Fatalf("Run returned %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Lease(e.ctx, LeaseName); !errors.Is(err, manifest.ErrNotFound) {
		t.Fatalf("lease after Run stopped: %v, want released", err)
	}
	if value(t, c.holding) != 0 {
		t.Fatal("lease_held still 1 after Run")
	}
}

func TestConfig(t *testing.T) {
	var c Config
	fs := flagSet(&c)
	if err := fs.Parse([]string{"-gc.grace-period=2h", "-gc.interval=30s"}); err != nil {
		t.Fatal(err)
	}
	if c.GracePeriod != 2*time.Hour || c.Interval != 30*time.Second || c.Validate() != nil {
		t.Fatalf("parsed %+v", c)
	}
	for _, bad := range []Config{{GracePeriod: 0, Interval: time.Second}, {GracePeriod: time.Hour, Interval: -1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	if _, err := New(nil, nil, Config{GracePeriod: 1, Interval: 1}, Options{Holder: "x"}); err == nil {
		t.Error("New without a manifest succeeded")
	}
}

func flagSet(c *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.RegisterFlags(fs)
	return fs
}

// value reads a counter or gauge.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}

// hookStore runs hook before the first deletion.
type hookStore struct {
	objectstore.Store
	once sync.Once
	hook func()
}

func (s *hookStore) Delete(ctx context.Context, key string) error {
	s.once.Do(s.hook)
	return s.Store.Delete(ctx, key)
}

// TestLongPassLosesLease: a pass of several batches renews the lease
// between them, and stops, leaving the rest listed, once another collector
// has taken it.
func TestLongPassLosesLease(t *testing.T) {
	e := newEnv(t)
	n := batch + 10
	lo, hi := manifest.RangeBounds(1, ranges)
	var add []manifest.SSTable
	for i := range n {
		add = append(add, manifest.SSTable{Key: fmt.Sprintf("k/%04d", i), Size: 1, MinToken: lo, MaxToken: hi})
	}
	if _, err := e.m.CommitSSTables(e.ctx, manifest.Commit{Table: e.table, Range: 1, Add: add}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.DropSSTables(e.ctx, e.table); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(2 * time.Hour)
	thief := e.collector("thief", nil)
	hs := &hookStore{Store: e.store}
	c, err := New(e.m, hs, Config{GracePeriod: time.Hour, Interval: time.Second}, Options{
		Holder: "slow", LeaseTTL: time.Nanosecond, Now: e.clock.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	hs.hook = func() {
		// The slow collector's lease has expired by the manifest's clock.
		e.clock.Add(time.Second)
		if err := thief.acquire(e.ctx); err != nil {
			t.Error(err)
		}
	}
	st, err := c.Collect(e.ctx)
	if !errors.Is(err, manifest.ErrLeaseHeld) || st.Deleted != batch {
		t.Fatalf("pass: %+v, %v; want one batch deleted, then ErrLeaseHeld", st, err)
	}
	gs, err := e.m.Garbage(e.ctx)
	if err != nil || len(gs) != n-batch {
		t.Fatalf("%d listed after the lost lease, want %d (%v)", len(gs), n-batch, err)
	}
	if st, err := thief.Collect(e.ctx); err != nil || st.Deleted != n-batch {
		t.Fatalf("the new holder's pass: %+v, %v", st, err)
	}
}
