package compactor

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/sedimentdb/sediment/manifest"
)

// PlannerLease is the manifest lease the active planner holds.
const PlannerLease = "compaction-planner"

// PlannerConfig is the planner's configuration.
type PlannerConfig struct {
	// Interval is the time between plannings.
	Interval time.Duration `yaml:"plan_interval"`
	// JobTimeout is how long a submitted plan counts as running while its
	// inputs stay live; after it, the plan is made again.
	JobTimeout time.Duration `yaml:"job_timeout"`
}

// RegisterFlags registers the flags of c with their defaults.
func (c *PlannerConfig) RegisterFlags(f *flag.FlagSet) {
	f.DurationVar(&c.Interval, "compactor.plan-interval", 10*time.Second, "Time between the compaction planner's passes over the manifest.")
	f.DurationVar(&c.JobTimeout, "compactor.job-timeout", time.Hour, "How long a submitted compaction counts as running while its inputs stay live; after it, the planner submits it again.")
}

// Validate checks c.
func (c *PlannerConfig) Validate() error {
	if c.Interval <= 0 {
		return errors.New("config: -compactor.plan-interval must be positive")
	}
	if c.JobTimeout <= 0 {
		return errors.New("config: -compactor.job-timeout must be positive")
	}
	return nil
}

// PlannerOptions are what a Planner works with besides its config.
type PlannerOptions struct {
	// Holder names the planner in the lease: the node ID. Required.
	Holder string
	// Submit hands a plan to the workers. Required. A plan it accepts
	// counts as running until its inputs leave the live set or
	// JobTimeout passes; one it refuses is made again next pass.
	Submit func(context.Context, Plan) error
	// Running, if set, returns the plans queued or running that this
	// planner did not submit itself (a new leader's predecessor's).
	Running func(context.Context) ([]Plan, error)
	// LeaseTTL is how long the lease lasts unrenewed: how soon a standby
	// takes over from a planner that died (default 3 × Interval).
	LeaseTTL time.Duration
	// Now is the clock of JobTimeout (default time.Now).
	Now func() time.Time
	// Logger (default slog.Default).
	Logger *slog.Logger
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Planner turns the manifest into compaction plans. One planner is active
// in a cluster at a time, the holder of the lease PlannerLease; the others
// stand by and take over when it stops or its lease expires.
type Planner struct {
	v    *manifest.View
	cfg  PlannerConfig
	opts PlannerOptions
	log  *slog.Logger

	mu        sync.Mutex
	held      bool
	acquired  time.Time
	submitted []submission
	tables    map[uuid.UUID][]string // labels of the per-table gauges set
	badOpts   map[uuid.UUID]string   // options last reported invalid

	holding              prometheus.Gauge
	plans, failures      prometheus.Counter
	l0, backlog, l0Press *prometheus.GaugeVec
}

type submission struct {
	plan Plan
	at   time.Time
}

// NewPlanner returns a planner over v's manifest.
func NewPlanner(v *manifest.View, cfg PlannerConfig, opts PlannerOptions) (*Planner, error) {
	if v == nil || opts.Submit == nil {
		return nil, errors.New("compaction: a planner needs a view and a submit function")
	}
	if opts.Holder == "" {
		return nil, errors.New("compaction: a planner needs a holder name")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 3 * cfg.Interval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	f := promauto.With(opts.Registerer)
	perTable := func(name, help string) *prometheus.GaugeVec {
		return f.NewGaugeVec(prometheus.GaugeOpts{Namespace: "sediment", Subsystem: "compaction", Name: name, Help: help}, []string{"keyspace", "table"})
	}
	return &Planner{
		v: v, cfg: cfg, opts: opts,
		log:     opts.Logger.With("component", "compaction-planner"),
		tables:  map[uuid.UUID][]string{},
		badOpts: map[uuid.UUID]string{},
		holding: f.NewGauge(prometheus.GaugeOpts{Namespace: "sediment", Subsystem: "compaction", Name: "planner_lease_held",
			Help: "1 while this planner holds the planning lease, else 0. The per-table figures come from the holder only."}),
		plans: f.NewCounter(prometheus.CounterOpts{Namespace: "sediment", Subsystem: "compaction", Name: "plans_submitted_total",
			Help: "Compaction plans handed to the workers."}),
		failures: f.NewCounter(prometheus.CounterOpts{Namespace: "sediment", Subsystem: "compaction", Name: "plan_submit_failures_total",
			Help: "Compaction plans the queue refused, made again at the next pass."}),
		l0:      perTable("l0_sstables", "SSTables in L0, over all ranges of the table."),
		backlog: perTable("backlog_bytes", "Bytes waiting to be compacted: L0 and the excess of each level over its target."),
		l0Press: perTable("l0_pressure", "0 while L0 is at most the compaction threshold in every range, 1 at the limit where flushes stop."),
	}, nil
}

// Tick takes or renews the lease, failing with an error matching
// manifest.ErrLeaseHeld if another planner holds it, then plans every
// table and submits the plans; it returns how many it submitted. A table
// with a pending compaction request (manifest.CompactionRequest) gets the
// major compaction's plans (Strategy.PlanMajor) first, and the request is
// marked done once every range of the table is Compacted.
func (p *Planner) Tick(ctx context.Context) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.acquire(ctx); err != nil {
		return 0, err
	}
	busy := p.running()
	if p.opts.Running != nil {
		others, err := p.opts.Running(ctx)
		if err != nil {
			return 0, fmt.Errorf("compaction: running plans: %w", err)
		}
		busy = append(busy, others...)
	}
	requests, err := p.requests(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	seen := map[uuid.UUID]bool{}
	for _, t := range p.v.Schema().Tables() {
		seen[t.ID] = true
		s := p.strategy(t)
		snap := SnapshotOf(p.v, t.ID)
		p.report(t, s, snap)
		var plans []Plan
		if req, ok := requests[t.ID]; ok && !req.Done() {
			var left []int
			plans, left = s.PlanMajor(snap, busy, req.RequestedAt)
			if len(left) == 0 {
				if err := p.v.Manifest().FinishCompactionRequest(ctx, t.ID, req.ID); err != nil {
					return n, fmt.Errorf("compaction: finish the compaction request of %s.%s: %w", t.Keyspace, t.Name, err)
				}
				p.log.Info("major compaction done", "keyspace", t.Keyspace, "table", t.Name, "request", req.ID)
			}
			// The ranges the major compaction has yet to cover are its
			// alone: the strategy's plans there would only delay it.
			snap.Ranges = maps.Clone(snap.Ranges)
			for _, r := range left {
				delete(snap.Ranges, r)
			}
		}
		plans = append(plans, s.Plan(snap, busy)...)
		for _, plan := range plans {
			if p.opts.Now().Sub(p.acquired) > p.opts.LeaseTTL/2 {
				// A slow queue must not let a successor plan alongside.
				if err := p.acquire(ctx); err != nil {
					return n, err
				}
			}
			if err := p.opts.Submit(ctx, plan); err != nil {
				p.failures.Inc()
				return n, fmt.Errorf("compaction: submit plan of %s.%s range %d: %w", t.Keyspace, t.Name, plan.Range, err)
			}
			p.plans.Inc()
			p.submitted = append(p.submitted, submission{plan, p.opts.Now()})
			busy = append(busy, plan)
			n++
		}
	}
	for id, labels := range p.tables { // dropped tables
		if !seen[id] {
			p.forget(id, labels)
		}
	}
	return n, p.expireRequests(ctx, requests, seen)
}

// RequestRetention is how long a done compaction request stays in the
// manifest for operators to see before the planner deletes it.
const RequestRetention = 24 * time.Hour

// requests returns the compaction requests, done or not, by table.
func (p *Planner) requests(ctx context.Context) (map[uuid.UUID]manifest.CompactionRequest, error) {
	all, err := p.v.Manifest().CompactionRequests(ctx)
	if err != nil {
		return nil, fmt.Errorf("compaction: compaction requests: %w", err)
	}
	out := make(map[uuid.UUID]manifest.CompactionRequest, len(all))
	for _, r := range all {
		out[r.Table] = r
	}
	return out, nil
}

// expireRequests deletes the requests done more than RequestRetention ago
// and those of tables the schema no longer has (seen).
func (p *Planner) expireRequests(ctx context.Context, requests map[uuid.UUID]manifest.CompactionRequest, seen map[uuid.UUID]bool) error {
	now := p.opts.Now()
	for _, r := range requests {
		if seen[r.Table] && (!r.Done() || now.Sub(r.DoneAt) < RequestRetention) {
			continue
		}
		if err := p.v.Manifest().DeleteCompactionRequest(ctx, r.Table, r.ID); err != nil {
			return fmt.Errorf("compaction: delete the compaction request of table %s: %w", r.Table, err)
		}
	}
	return nil
}

// running drops the submissions whose inputs have left the live set (the
// job committed, or the table or range changed under it) or that timed
// out, and returns the others.
func (p *Planner) running() []Plan {
	now := p.opts.Now()
	var out []Plan
	p.submitted = slices.DeleteFunc(p.submitted, func(s submission) bool {
		if now.Sub(s.at) >= p.cfg.JobTimeout {
			return true
		}
		live := p.v.SSTablesInRange(s.plan.Table, s.plan.Range)
		for _, in := range s.plan.Inputs {
			if !slices.ContainsFunc(live, func(t manifest.SSTable) bool { return t.Key == in.Key }) {
				return true
			}
		}
		out = append(out, s.plan)
		return false
	})
	return out
}

// strategy returns the table's strategy, or the default if its options are
// invalid, which is logged once per change of them.
func (p *Planner) strategy(t *manifest.Table) Strategy {
	s, err := ParseStrategy(t.Options.Compaction)
	if err == nil {
		delete(p.badOpts, t.ID)
		return s
	}
	if p.badOpts[t.ID] != err.Error() {
		p.badOpts[t.ID] = err.Error()
		p.log.Warn("invalid compaction options; using the defaults", "keyspace", t.Keyspace, "table", t.Name, "err", err)
	}
	return DefaultStrategy()
}

func (p *Planner) report(t *manifest.Table, s Strategy, snap Snapshot) {
	labels := []string{t.Keyspace, t.Name}
	if old, ok := p.tables[t.ID]; ok && !slices.Equal(old, labels) {
		p.forget(t.ID, old)
	}
	p.tables[t.ID] = labels
	b := s.Backlog(snap)
	p.l0.WithLabelValues(labels...).Set(float64(b.L0Tables))
	p.backlog.WithLabelValues(labels...).Set(float64(b.Bytes))
	p.l0Press.WithLabelValues(labels...).Set(s.L0Pressure(snap))
}

func (p *Planner) forget(id uuid.UUID, labels []string) {
	p.l0.DeleteLabelValues(labels...)
	p.backlog.DeleteLabelValues(labels...)
	p.l0Press.DeleteLabelValues(labels...)
	delete(p.tables, id)
}

func (p *Planner) acquire(ctx context.Context) error {
	_, err := p.v.Manifest().AcquireLease(ctx, PlannerLease, p.opts.Holder, p.opts.LeaseTTL)
	if err != nil {
		p.standBy()
		return fmt.Errorf("compaction: %w", err)
	}
	if !p.held {
		p.log.Info("planning lease taken", "holder", p.opts.Holder)
	}
	p.held, p.acquired = true, p.opts.Now()
	p.holding.Set(1)
	return nil
}

// standBy forgets what a leader knew: a successor may have submitted or
// finished anything since, and its figures are the ones that count.
func (p *Planner) standBy() {
	if p.held {
		p.log.Info("planning lease lost; standing by", "holder", p.opts.Holder)
	}
	p.held = false
	p.submitted = nil
	for id, labels := range p.tables {
		p.forget(id, labels)
	}
	p.holding.Set(0)
}

// Leader reports whether the last Tick held the lease.
func (p *Planner) Leader() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Run plans every Interval until ctx ends, then gives up the lease if it
// holds it, so that a standby takes over without waiting for it to expire.
// Failed passes are logged and retried; Run returns nil when ctx ends.
func (p *Planner) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		n, err := p.Tick(ctx)
		switch {
		case err != nil && !errors.Is(err, manifest.ErrLeaseHeld) && ctx.Err() == nil:
			p.log.Warn("compaction planning failed", "err", err, "submitted", n)
		case n > 0:
			p.log.Debug("compaction plans submitted", "plans", n)
		}
		select {
		case <-ctx.Done():
			p.release(context.WithoutCancel(ctx))
			return nil
		case <-t.C:
		}
	}
}

// release gives up the lease if this planner holds it. It is released
// even if the last request seemed to fail: a cancelled request may have
// taken it all the same.
func (p *Planner) release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := p.v.Manifest().ReleaseLease(ctx, PlannerLease, p.opts.Holder); err != nil && !errors.Is(err, manifest.ErrLeaseHeld) {
		p.log.Warn("release of the planning lease failed", "err", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.standBy()
}
