package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/compactor/gc"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
)

// CompactorConfig configures the compactor role's workers and planner.
type CompactorConfig struct {
	// Workers is how many jobs the process merges at once.
	Workers int `yaml:"workers"`
	// AckWait is how long a job may go without a sign of life from its
	// worker before another worker gets it.
	AckWait time.Duration `yaml:"ack_wait"`
	// ReadAhead bounds each job's input bytes in memory.
	ReadAhead int64 `yaml:"read_ahead"`

	Planner compactor.PlannerConfig `yaml:"planner"`
}

// RegisterFlags registers the flags of c with their defaults.
func (c *CompactorConfig) RegisterFlags(f *flag.FlagSet) {
	f.IntVar(&c.Workers, "compaction.workers", 1, "Compaction jobs a compactor process runs at once; each holds up to -compaction.read-ahead bytes of input.")
	f.DurationVar(&c.AckWait, "compaction.ack-wait", 30*time.Second, "How long a compaction job may go without a heartbeat from its worker before the queue hands it to another; a dead worker's job waits this long.")
	f.Int64Var(&c.ReadAhead, "compaction.read-ahead", compactor.DefaultReadAhead, "Bytes of input data one compaction job holds in memory, whatever the size of its SSTables.")
	c.Planner.RegisterFlags(f)
}

// Validate checks c.
func (c *CompactorConfig) Validate() error {
	var errs []error
	if c.Workers < 1 {
		errs = append(errs, errors.New("config: -compaction.workers must be at least 1"))
	}
	if c.AckWait <= 0 {
		errs = append(errs, errors.New("config: -compaction.ack-wait must be positive"))
	}
	if c.ReadAhead < compactor.MinChunk {
		errs = append(errs, fmt.Errorf("config: -compaction.read-ahead must be at least %d", compactor.MinChunk))
	}
	return errors.Join(append(errs, c.Planner.Validate())...)
}

// initCompactor runs the compactor role: -compaction.workers workers of
// the cluster's compaction queue, the planner, which plans while this
// process holds the planning lease and stands by otherwise, and the
// garbage collector, which deletes the objects the manifest lists as
// garbage once their grace period is over and sweeps for orphans, while
// this process holds the collection lease. Nothing is kept locally:
// compactors come and go as an autoscaler likes.
func (s *Sediment) initCompactor(ctx context.Context) (service, error) {
	cfg := s.cfg.Compactor
	id, err := loadNodeID(vfs.Default, s.cfg.DataDir)
	if err != nil {
		return service{}, err
	}
	js, err := jetstream.New(s.nats)
	if err != nil {
		return service{}, err
	}
	q, err := compactor.OpenQueue(ctx, js, s.manifest.Cluster(), compactor.QueueOptions{
		AckWait: cfg.AckWait,
		Dedup:   cfg.Planner.JobTimeout,
		GCGrace: func(table uuid.UUID) (int32, bool) { return gcGrace(s.view, table) },
	})
	if err != nil {
		return service{}, err
	}
	if err := compactor.RegisterQueueMetrics(s.reg, q); err != nil {
		return service{}, err
	}
	planner, err := compactor.NewPlanner(s.view, cfg.Planner, compactor.PlannerOptions{
		Holder: id, Submit: q.Submit, Running: q.Running, Logger: s.logger, Registerer: s.reg,
	})
	if err != nil {
		return service{}, err
	}
	metrics := compactor.NewMetrics(s.reg)
	runners := []func(context.Context) error{planner.Run}
	for range cfg.Workers {
		w, err := compactor.NewWorker(q, s.manifest, compactor.WorkerOptions{
			Store:     s.store,
			Run:       compactor.Options{ReadAhead: cfg.ReadAhead},
			Unflushed: unflushedBound(s.manifest, 3*s.cfg.Node.HeartbeatInterval, time.Now),
			// Far below the age at which the orphan sweep deletes them.
			MaxCommitAge: s.cfg.GC.OrphanAge / 2,
			Metrics:      metrics,
			Logger:       s.logger,
		})
		if err != nil {
			return service{}, err
		}
		runners = append(runners, w.Run)
	}
	collector, err := gc.New(s.manifest, s.store, s.cfg.GC, gc.Options{Holder: id, Logger: s.logger, Registerer: s.reg})
	if err != nil {
		return service{}, err
	}
	runners = append(runners, collector.Run)

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, run := range runners {
		wg.Go(func() { _ = run(runCtx) }) // each returns nil once runCtx ends
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	s.logger.Info("compactor started", "component", "compactor", "holder", id, "workers", cfg.Workers,
		"plan_interval", cfg.Planner.Interval, "ack_wait", cfg.AckWait, "gc_grace_period", s.cfg.GC.GracePeriod,
		"gc_orphan_interval", s.cfg.GC.OrphanInterval, "gc_orphan_age", s.cfg.GC.OrphanAge)
	return service{
		stop: func(ctx context.Context) error {
			// A job cut short is neither acked nor handed back: another
			// compactor gets it after the ack wait.
			cancel()
			select {
			case <-done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}, nil
}

// unflushedBound returns the workers' purge bound source
// (compactor.WorkerOptions.Unflushed): the oldest write any ingest member
// reported unflushed for the table, read fresh from the manifest's member
// list (not the View, which may lag), per ingest.OldestUnflushed.
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
func unflushedBound(m *manifest.Manifest, window time.Duration, now func() time.Time) func(context.Context, uuid.UUID, int) (int64, error) {
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
