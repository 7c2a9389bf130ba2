package compactor

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/grafana/dskit/services"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/compactor/gc"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// Role is the compactor's role name, in -target and in the member list.
const Role = "compactor"

// Config configures the compactor role's workers and planner; the garbage
// collector has its own section (gc.Config).
type Config struct {
	// Workers is how many jobs the process merges at once.
	Workers int `yaml:"workers"`
	// AckWait is how long a job may go without a sign of life from its
	// worker before another worker gets it.
	AckWait time.Duration `yaml:"ack_wait"`
	// ReadAhead bounds each job's input bytes in memory.
	ReadAhead int64 `yaml:"read_ahead"`

	Planner PlannerConfig `yaml:"planner"`
}

// RegisterFlags registers the flags of c with their defaults.
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	f.IntVar(&c.Workers, "compactor.workers", 1, "Compaction jobs a compactor process runs at once; each holds up to -compactor.read-ahead bytes of input.")
	f.DurationVar(&c.AckWait, "compactor.ack-wait", 30*time.Second, "How long a compaction job may go without a heartbeat from its worker before the queue hands it to another; a dead worker's job waits this long.")
	f.Int64Var(&c.ReadAhead, "compactor.read-ahead", DefaultReadAhead, "Bytes of input data one compaction job holds in memory, whatever the size of its SSTables.")
	c.Planner.RegisterFlags(f)
}

// Validate checks c.
func (c *Config) Validate() error {
	var errs []error
	if c.Workers < 1 {
		errs = append(errs, errors.New("config: -compactor.workers must be at least 1"))
	}
	if c.AckWait <= 0 {
		errs = append(errs, errors.New("config: -compactor.ack-wait must be positive"))
	}
	if c.ReadAhead < MinChunk {
		errs = append(errs, fmt.Errorf("config: -compactor.read-ahead must be at least %d", MinChunk))
	}
	return errors.Join(append(errs, c.Planner.Validate())...)
}

// Deps is what the compactor needs from the rest of the process.
type Deps struct {
	JetStream jetstream.JetStream
	Manifest  *manifest.Manifest
	View      *manifest.View
	Store     objectstore.Store
	// NodeID names this process in the planning and collection leases.
	NodeID string
	// HeartbeatInterval is the ingest nodes' (-node.heartbeat-interval):
	// purging needs every one of them to have beaten within three.
	HeartbeatInterval time.Duration
	// Address, if set, makes the compactor a member of the cluster under
	// NodeID with the compactor role, announcing this address (the HTTP
	// one, where its /metrics and /status are), renewed every
	// HeartbeatInterval and left on stop. A process that also runs the
	// ingest role leaves it empty: its ingest member lists every role.
	Address string

	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Compactor is a running compactor role: -compactor.workers workers of the
// cluster's compaction queue; the planner, which plans while this process
// holds the planning lease and stands by otherwise; and the garbage
// collector, which deletes the objects the manifest lists as garbage once
// their grace period is over and sweeps for orphans, while this process
// holds the collection lease. Nothing is kept locally: compactors come and
// go as an autoscaler likes.
type Compactor struct {
	services.Service
	runners []func(context.Context) error
	// member is the compactor's own member entry, if it has one.
	member *manifest.Member
	beater *manifest.Beater
	m      *manifest.Manifest
}

// New builds the compactor role: the queue (created in JetStream if
// missing), the planner, the workers and the collector.
func New(ctx context.Context, cfg Config, gcCfg gc.Config, deps Deps) (*Compactor, error) {
	logger := deps.Logger
	if logger == nil {
		logger = slog.Default()
	}
	q, err := OpenQueue(ctx, deps.JetStream, deps.Manifest.Cluster(), QueueOptions{
		AckWait: cfg.AckWait,
		Dedup:   cfg.Planner.JobTimeout,
		GCGrace: func(table uuid.UUID) (int32, bool) { return gcGrace(deps.View, table) },
	})
	if err != nil {
		return nil, err
	}
	if err := RegisterQueueMetrics(deps.Registerer, q); err != nil {
		return nil, err
	}
	planner, err := NewPlanner(deps.View, cfg.Planner, PlannerOptions{
		Holder: deps.NodeID, Submit: q.Submit, Running: q.Running, Logger: logger, Registerer: deps.Registerer,
	})
	if err != nil {
		return nil, err
	}
	metrics := NewMetrics(deps.Registerer)
	c := &Compactor{runners: []func(context.Context) error{planner.Run}}
	for range cfg.Workers {
		w, err := NewWorker(q, deps.Manifest, WorkerOptions{
			Store:     deps.Store,
			Run:       Options{ReadAhead: cfg.ReadAhead},
			Unflushed: UnflushedBound(deps.Manifest, 3*deps.HeartbeatInterval, time.Now),
			// Far below the age at which the orphan sweep deletes them.
			MaxCommitAge: gcCfg.OrphanAge / 2,
			Metrics:      metrics,
			Logger:       logger,
		})
		if err != nil {
			return nil, err
		}
		c.runners = append(c.runners, w.Run)
	}
	collector, err := gc.New(deps.Manifest, deps.Store, gcCfg, gc.Options{Holder: deps.NodeID, Logger: logger, Registerer: deps.Registerer})
	if err != nil {
		return nil, err
	}
	c.runners = append(c.runners, collector.Run)
	logger.Info("compactor started", "component", Role, "holder", deps.NodeID, "workers", cfg.Workers,
		"plan_interval", cfg.Planner.Interval, "ack_wait", cfg.AckWait, "gc_grace_period", gcCfg.GracePeriod,
		"gc_orphan_interval", gcCfg.OrphanInterval, "gc_orphan_age", gcCfg.OrphanAge)
	if deps.Address != "" {
		mem := manifest.Member{ID: deps.NodeID, Roles: []string{Role}, Addr: deps.Address}
		c.member, c.m = &mem, deps.Manifest
		c.beater = deps.Manifest.NewBeater(deps.HeartbeatInterval, func() manifest.Member { return mem }, logger)
		c.runners = append(c.runners, func(ctx context.Context) error { c.beater.Run(ctx); return nil })
	}
	c.Service = services.NewBasicService(c.starting, c.running, c.stopping).WithName(Role)
	return c, nil
}

// starting announces the member, if the compactor has one.
func (c *Compactor) starting(ctx context.Context) error {
	if c.beater == nil {
		return nil
	}
	if err := c.beater.Beat(ctx); err != nil {
		return fmt.Errorf("compactor: heartbeat: %w", err)
	}
	return nil
}

// stopping leaves the member list, so that a compactor stopped on purpose
// does not linger as a stale member.
func (c *Compactor) stopping(error) error {
	if c.member == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.m.Leave(ctx, c.member.ID)
}

// running runs the planner, the workers and the collector until the
// service stops. A job cut short by the stop is neither acked nor handed
// back: another compactor gets it after the ack wait.
func (c *Compactor) running(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, run := range c.runners {
		wg.Go(func() { _ = run(ctx) }) // each returns nil once ctx ends
	}
	wg.Wait()
	return nil
}

// UnflushedBound returns the workers' purge bound source
// (WorkerOptions.Unflushed): the oldest write any ingest member reported
// unflushed for the table, read fresh from the manifest's member list (not
// the View, which may lag), per ingest.OldestUnflushed.
//
// The answer is known only if every ingest member beat within window of
// now. The window is three heartbeat intervals (as frontends judge members
// live): a live node that misses a beat or two keeps purging on, and a
// node that stopped publishing (dead, partitioned, or an older version)
// turns purging off within seconds, until it comes back and reports, or
// leaves after flushing. It assumes the ingest nodes beat at this
// process's -node.heartbeat-interval and that clocks agree to well within
// it.
//
// Writes acknowledged after the start of the window may be in no
// heartbeat yet. Their timestamps, assigned at write time, are not older
// than the window's start unless a client or a skewed clock chose them,
// so the bound is also capped at the window's start: a tombstone is
// purged only if it is older than every write that can still be on its
// way into an SSTable. (A write stamped older than a purged tombstone
// after its gc_grace_seconds is visible again, as in Cassandra.)
//
// The range argument is unused: members report per table, which only
// makes the bound lower.
func UnflushedBound(m *manifest.Manifest, window time.Duration, now func() time.Time) func(context.Context, uuid.UUID, int) (int64, error) {
	return func(ctx context.Context, table uuid.UUID, _ int) (int64, error) {
		members, err := m.Members(ctx)
		if err != nil {
			return 0, err
		}
		since := now().Add(-window)
		ts, known := ingest.OldestUnflushed(members, table, since)
		if !known {
			return math.MinInt64, nil
		}
		return min(ts, since.UnixMicro()), nil
	}
}

// gcGrace returns the gc_grace_seconds of the table with ID table.
func gcGrace(v *manifest.View, table uuid.UUID) (int32, bool) {
	if t := v.TableByID(table); t != nil {
		return t.Options.GCGraceSeconds, true
	}
	return 0, false
}
