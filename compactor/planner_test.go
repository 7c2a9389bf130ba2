package compactor

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

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

type planClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *planClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *planClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const plannerRanges = 4

type plannerEnv struct {
	t     *testing.T
	ctx   context.Context
	m     *manifest.Manifest
	v     *manifest.View
	clock *planClock
	table *manifest.Table
	n     int
}

func newPlannerEnv(t *testing.T, compaction map[string]string) *plannerEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	js, _ := manifesttest.JetStream(t)
	fs, err := objectstore.NewFile(vfs.Default, t.TempDir(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c := &planClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	m, err := manifest.Open(ctx, js, fs, "plan", manifest.Options{Now: c.Now, Logger: plannerLog()})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, plannerRanges); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, true); err != nil {
		t.Fatal(err)
	}
	opts := manifest.DefaultTableOptions()
	opts.Compaction = compaction
	tbl, err := m.CreateTable(ctx, manifest.TableSpec{Keyspace: "ks", Name: "t",
		Columns: []manifest.ColumnSpec{{Name: "k", Type: "int"}}, PartitionKey: []string{"k"}, Options: &opts})
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	return &plannerEnv{t: t, ctx: ctx, m: m, v: v, clock: c, table: tbl}
}

// metricValue reads a gauge or counter.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Gauge != nil {
		return d.GetGauge().GetValue()
	}
	return d.GetCounter().GetValue()
}

func plannerLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// flush commits an L0 SSTable over all of range r and waits for the view.
func (e *plannerEnv) flush(r int) manifest.SSTable {
	e.t.Helper()
	e.n++
	lo, hi := manifest.RangeBounds(r, plannerRanges)
	s := manifest.SSTable{Key: fmt.Sprintf("flush/%d", e.n), Size: 1000, MinToken: lo, MaxToken: hi, Created: e.clock.Now().Add(time.Duration(e.n))}
	e.commit(manifest.Commit{Table: e.table.ID, Range: r, Add: []manifest.SSTable{s}})
	return s
}

// commit applies c and waits until the view shows it.
func (e *plannerEnv) commit(c manifest.Commit) {
	e.t.Helper()
	want, err := e.m.CommitSSTables(e.ctx, c)
	if err != nil {
		e.t.Fatal(err)
	}
	err = e.v.WaitFor(e.ctx, func(v *manifest.View) bool { return len(v.SSTablesInRange(c.Table, c.Range)) == len(want) })
	if err != nil {
		e.t.Fatal(err)
	}
}

// planQueue records submitted plans.
type planQueue struct {
	mu    sync.Mutex
	plans []Plan
	fail  error
}

func (q *planQueue) submit(_ context.Context, p Plan) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail != nil {
		return q.fail
	}
	q.plans = append(q.plans, p)
	return nil
}

func (q *planQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.plans)
}

func (e *plannerEnv) planner(holder string, q *planQueue, reg prometheus.Registerer, interval time.Duration) *Planner {
	e.t.Helper()
	p, err := NewPlanner(e.v, PlannerConfig{Interval: interval, JobTimeout: time.Hour}, PlannerOptions{
		Holder: holder, Submit: q.submit, LeaseTTL: time.Minute, Now: e.clock.Now, Logger: plannerLog(), Registerer: reg,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func TestPlannerLeadership(t *testing.T) {
	e := newPlannerEnv(t, nil)
	for range DefaultL0Threshold {
		e.flush(1)
	}
	qa, qb := &planQueue{}, &planQueue{}
	a := e.planner("a", qa, nil, 20*time.Millisecond)
	b := e.planner("b", qb, nil, 20*time.Millisecond)

	// Both start at once: one wins and submits, the other waits.
	ctxA, stopA := context.WithCancel(e.ctx)
	ctxB, stopB := context.WithCancel(e.ctx)
	defer stopB()
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctxA) })
	wg.Go(func() { b.Run(ctxB) })
	deadline := time.Now().Add(30 * time.Second)
	for qa.len()+qb.len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no planner submitted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // many intervals: the loser must stay idle
	winner, wq, loser, lq, stopWinner := a, qa, b, qb, stopA
	if qb.len() > 0 {
		winner, wq, loser, lq, stopWinner = b, qb, a, qa, stopB
	}
	if wq.len() != 1 || lq.len() != 0 {
		t.Fatalf("winner submitted %d plans, loser %d; want 1 and 0", wq.len(), lq.len())
	}
	if !winner.Leader() || loser.Leader() {
		t.Fatalf("leaders: winner %v, loser %v", winner.Leader(), loser.Leader())
	}
	if p := wq.plans[0]; p.Range != 1 || p.OutputLevel != 1 || len(p.Inputs) != DefaultL0Threshold {
		t.Fatalf("plan %+v", p)
	}

	// The winner stops and releases the lease: the loser takes over and,
	// knowing nothing of the winner's planQueue, plans the same compaction.
	stopWinner()
	for lq.len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the loser did not take over")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !loser.Leader() {
		t.Fatal("the new planner is not the leader")
	}
	stopA()
	stopB()
	testwait.Wait(t, "the planners to stop", &wg)
	if _, err := e.m.Lease(e.ctx, PlannerLease); !errors.Is(err, manifest.ErrNotFound) {
		t.Fatalf("lease after both stopped: %v", err)
	}
}

func TestPlannerTakeoverAfterExpiry(t *testing.T) {
	e := newPlannerEnv(t, nil)
	a := e.planner("a", &planQueue{}, nil, time.Second)
	b := e.planner("b", &planQueue{}, nil, time.Second)
	if _, err := a.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Tick(e.ctx); !errors.Is(err, manifest.ErrLeaseHeld) {
		t.Fatalf("second planner: %v, want ErrLeaseHeld", err)
	}
	// a dies without releasing; its lease runs out.
	e.clock.Add(time.Minute + time.Second)
	if _, err := b.Tick(e.ctx); err != nil {
		t.Fatalf("takeover after expiry: %v", err)
	}
	if _, err := a.Tick(e.ctx); !errors.Is(err, manifest.ErrLeaseHeld) || a.Leader() {
		t.Fatalf("the old planner came back: %v, leader %v", err, a.Leader())
	}
}

func TestPlannerBusyAndMetrics(t *testing.T) {
	e := newPlannerEnv(t, map[string]string{"class": "SizeTieredCompactionStrategy", "min_threshold": "2", "l0_limit": "6"})
	reg := prometheus.NewRegistry()
	q := &planQueue{}
	p := e.planner("a", q, reg, time.Second)
	tick := func(want int) {
		t.Helper()
		if n, err := p.Tick(e.ctx); err != nil || n != want {
			t.Fatalf("Tick = %d, %v; want %d plans", n, err, want)
		}
	}
	gauge := func(v *prometheus.GaugeVec) float64 { return metricValue(t, v.WithLabelValues("ks", "t")) }

	tick(0)
	in := []manifest.SSTable{e.flush(2), e.flush(2)}
	e.flush(3)
	tick(1)
	if gauge(p.l0) != 3 || gauge(p.backlog) != 3000 || gauge(p.l0Press) != 0 {
		t.Fatalf("l0 %v, backlog %v, pressure %v", gauge(p.l0), gauge(p.backlog), gauge(p.l0Press))
	}
	// Submitted: busy while its inputs are live. New flushes wait too, for
	// their L1 outputs would overlap the busy plan's.
	for range 3 {
		e.flush(2)
	}
	tick(0)
	if got := gauge(p.l0Press); got != 0.75 {
		t.Fatalf("pressure %v, want 0.75 (5 of 2..6)", got)
	}
	// The first job commits: its plan is done, the next is due.
	out := manifest.SSTable{Key: "out/1", Size: 2000, Level: 1, MinToken: in[0].MinToken, MaxToken: in[0].MaxToken}
	e.commit(manifest.Commit{Table: e.table.ID, Range: 2, Add: []manifest.SSTable{out}, Remove: []string{in[0].Key, in[1].Key}})
	tick(1)
	if got := q.plans[1]; len(got.Inputs) != 4 || got.Inputs[3].Key != "out/1" {
		t.Fatalf("second plan %s", planString([]Plan{got}))
	}
	tick(0)
	// The second job is lost: after the timeout, it is planned again.
	e.clock.Add(time.Hour)
	tick(1)
	if n := metricValue(t, p.plans); n != 3 {
		t.Fatalf("plans submitted %v", n)
	}

	// A refused plan is made again.
	e.clock.Add(time.Hour)
	q.fail = errors.New("planQueue full")
	if _, err := p.Tick(e.ctx); err == nil || metricValue(t, p.failures) != 1 {
		t.Fatalf("Tick with the planQueue refusing: %v", err)
	}
	q.fail = nil
	tick(1)

	// A dropped table leaves the figures; a standby reports none.
	if err := e.m.DropTable(e.ctx, "ks", "t"); err != nil {
		t.Fatal(err)
	}
	if err := e.v.WaitFor(e.ctx, func(v *manifest.View) bool { return v.Table("ks", "t") == nil }); err != nil {
		t.Fatal(err)
	}
	tick(0)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "sediment_compaction_l0_sstables" && len(mf.GetMetric()) > 0 {
			t.Fatalf("%d l0 series after the drop", len(mf.GetMetric()))
		}
	}
	if metricValue(t, p.holding) != 1 {
		t.Fatal("lease_held is not 1")
	}
}

func TestPlannerInvalidOptions(t *testing.T) {
	e := newPlannerEnv(t, map[string]string{"class": "LeveledCompactionStrategy", "fanout_size": "one"})
	q := &planQueue{}
	p := e.planner("a", q, nil, time.Second)
	for range DefaultL0Threshold - 1 {
		e.flush(0)
	}
	if n, err := p.Tick(e.ctx); err != nil || n != 0 {
		t.Fatalf("Tick = %d, %v", n, err)
	}
	e.flush(0)
	// The defaults apply.
	if n, err := p.Tick(e.ctx); err != nil || n != 1 {
		t.Fatalf("Tick = %d, %v", n, err)
	}
}

func TestPlannerRunning(t *testing.T) {
	e := newPlannerEnv(t, nil)
	var ins []manifest.SSTable
	for range DefaultL0Threshold {
		ins = append(ins, e.flush(0))
	}
	running := []Plan{{Table: e.table.ID, Range: 0, Inputs: ins, OutputLevel: 1}}
	var runErr error
	q := &planQueue{}
	p, err := NewPlanner(e.v, PlannerConfig{Interval: time.Second, JobTimeout: time.Hour}, PlannerOptions{
		Holder: "a", Submit: q.submit, Logger: plannerLog(),
		Running: func(context.Context) ([]Plan, error) { return running, runErr },
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Tick(e.ctx); err != nil || n != 0 {
		t.Fatalf("Tick with the plan running elsewhere = %d, %v", n, err)
	}
	runErr = errors.New("planQueue down")
	if _, err := p.Tick(e.ctx); !errors.Is(err, runErr) {
		t.Fatalf("Tick with Running failing: %v", err)
	}
	running, runErr = nil, nil
	if n, err := p.Tick(e.ctx); err != nil || n != 1 {
		t.Fatalf("Tick = %d, %v", n, err)
	}
}

func TestPlannerConfig(t *testing.T) {
	var c PlannerConfig
	f := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(f)
	if err := c.Validate(); err != nil || c.Interval != 10*time.Second || c.JobTimeout != time.Hour {
		t.Fatalf("defaults %+v: %v", c, err)
	}
	if err := f.Parse([]string{"-compactor.plan-interval=0s"}); err != nil {
		t.Fatal(err)
	}
	if c.Validate() == nil {
		t.Fatal("a zero interval is valid")
	}
	if _, err := NewPlanner(nil, c, PlannerOptions{}); err == nil {
		t.Fatal("NewPlanner without a view")
	}
}
