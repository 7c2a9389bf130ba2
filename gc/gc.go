// Package gc deletes the objects on the manifest's garbage list: SSTables
// that compaction, TRUNCATE or DROP removed from the live set, and outputs
// that never joined it (manifest.Garbage).
//
// A read chooses its SSTables from one manifest version and then fetches
// their blocks, so an object that has left the live set may still be read
// for as long as a read lasts. The collector therefore deletes an object
// only once it has been garbage for longer than the grace period, which
// must exceed the longest read, plus the clock skew between the node that
// listed the object and the collector. Deleting too early makes a slow
// read fail; deleting late only costs storage.
//
// One collector runs at a time in the cluster: each pass first takes or
// renews the manifest lease LeaseName, and a collector that cannot get it
// stands by. Every pass deletes the objects whose grace has run out, then
// removes them from the list (manifest.Collected). A crash between the two
// leaves listed objects already deleted; the next pass deletes them again,
// which is harmless since deleting a missing object is not an error.
package gc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// LeaseName is the manifest lease the running collector holds.
const LeaseName = "gc"

// batch bounds the deletions between two updates of the garbage list, so
// that a crash repeats little work and a long pass shows progress.
const batch = 256

// deletes is how many deletions a collector has in flight: each is a round
// trip to the bucket (and a directory sync for the file backend), so
// running them one by one would bound a pass by latency, not throughput.
const deletes = 16

// Config is the collector's configuration.
type Config struct {
	// GracePeriod is how long an object stays after it became garbage. It
	// must exceed the longest read plus the clock skew between nodes.
	GracePeriod time.Duration `yaml:"grace_period"`
	// Interval is the time between passes.
	Interval time.Duration `yaml:"interval"`
}

// RegisterFlags registers the flags of c with their defaults.
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	f.DurationVar(&c.GracePeriod, "gc.grace-period", time.Hour, "How long an object removed from the manifest (by compaction, TRUNCATE or DROP) stays in the bucket before the compactor role deletes it. Must be longer than any read can last, plus the clock skew between nodes: a read still using a deleted object fails.")
	f.DurationVar(&c.Interval, "gc.interval", time.Minute, "Time between the compactor role's passes over the garbage list.")
}

// Validate checks c.
func (c *Config) Validate() error {
	if c.GracePeriod <= 0 {
		return errors.New("config: -gc.grace-period must be positive")
	}
	if c.Interval <= 0 {
		return errors.New("config: -gc.interval must be positive")
	}
	return nil
}

// Options are what a Collector works with besides its Config.
type Options struct {
	// Holder names the collector in the lease: the node ID. Required.
	Holder string
	// LeaseTTL is how long the lease lasts unrenewed: how soon a standby
	// takes over from a collector that died (default 3 × Interval).
	LeaseTTL time.Duration
	// Now is the clock the grace period is measured by (default time.Now).
	Now func() time.Time
	// Logger receives a line per deleted object (default slog.Default).
	Logger *slog.Logger
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Stats counts what one pass did.
type Stats struct {
	Deleted int   // objects deleted and unlisted
	Bytes   int64 // their size, as the manifest recorded it
	Failed  int   // deletions that failed, left for the next pass
	Waiting int   // garbage still within its grace period
}

// Collector deletes garbage objects. Collect runs one pass, Run passes
// every Interval.
type Collector struct {
	m     *manifest.Manifest
	store objectstore.Store
	cfg   Config
	opts  Options
	log   *slog.Logger

	held atomic.Bool // whether the last lease request succeeded

	deleted, bytes, failed prometheus.Counter
	waiting, holding       prometheus.Gauge
}

// New returns a Collector of m's garbage, which lives in store.
func New(m *manifest.Manifest, store objectstore.Store, cfg Config, opts Options) (*Collector, error) {
	if m == nil || store == nil {
		return nil, errors.New("gc: a collector needs a manifest and a store")
	}
	if opts.Holder == "" {
		return nil, errors.New("gc: a collector needs a holder name")
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
	counter := func(name, help string) prometheus.Counter {
		return f.NewCounter(prometheus.CounterOpts{Namespace: "sediment", Subsystem: "gc", Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return f.NewGauge(prometheus.GaugeOpts{Namespace: "sediment", Subsystem: "gc", Name: name, Help: help})
	}
	return &Collector{
		m: m, store: store, cfg: cfg, opts: opts,
		log:     opts.Logger.With("component", "gc"),
		deleted: counter("deleted_objects_total", "Garbage objects deleted from the bucket."),
		bytes:   counter("deleted_bytes_total", "Bytes of the garbage objects deleted, as the manifest recorded them."),
		failed:  counter("delete_failures_total", "Deletions of garbage objects that failed and are retried at the next pass."),
		waiting: gauge("waiting_objects", "Garbage objects still within their grace period at the last pass."),
		holding: gauge("lease_held", "1 while this collector holds the collection lease, else 0."),
	}, nil
}

// Collect runs one pass: it takes or renews the lease, failing with an
// error matching manifest.ErrLeaseHeld if another collector holds it, then
// deletes and unlists every object whose grace period has run out.
func (c *Collector) Collect(ctx context.Context) (Stats, error) {
	var st Stats
	if err := c.acquire(ctx); err != nil {
		return st, err
	}
	acquired := time.Now()
	gs, err := c.m.Garbage(ctx)
	if err != nil {
		return st, err
	}
	now := c.opts.Now()
	var due []manifest.TableGarbage
	for _, g := range gs {
		if now.Sub(g.Since) >= c.cfg.GracePeriod {
			due = append(due, g)
		} else {
			st.Waiting++
		}
	}
	c.waiting.Set(float64(st.Waiting))
	for len(due) > 0 {
		if time.Since(acquired) > c.opts.LeaseTTL/2 {
			// A long pass keeps the lease, or stops if it lost it.
			if err := c.acquire(ctx); err != nil {
				return st, err
			}
			acquired = time.Now()
		}
		n := min(batch, len(due))
		done, failed := c.delete(ctx, now, due[:n])
		st.Failed += failed
		if ctx.Err() != nil {
			// Unlist what is gone, so the next pass need not repeat it.
			return st, errors.Join(ctx.Err(), c.unlist(context.WithoutCancel(ctx), done))
		}
		if err := c.unlist(ctx, done); err != nil {
			return st, err
		}
		for _, g := range done {
			st.Deleted++
			st.Bytes += g.Size
			c.deleted.Inc()
			c.bytes.Add(float64(g.Size))
		}
		due = due[n:]
	}
	return st, nil
}

// delete deletes the objects of gs, up to deletes at once, and returns those it deleted and how many deletions failed.
func (c *Collector) delete(ctx context.Context, now time.Time, gs []manifest.TableGarbage) (done []manifest.TableGarbage, failed int) {
	ok := make([]bool, len(gs))
	sem := make(chan struct{}, deletes)
	var wg sync.WaitGroup
	for i, g := range gs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := c.store.Delete(ctx, g.Key); err != nil {
				if ctx.Err() == nil {
					c.log.Warn("delete of garbage object failed; retried next pass", "object", g.Key, "err", err)
				}
				return
			}
			ok[i] = true
			c.log.Info("deleted garbage object", "object", g.Key, "bytes", g.Size, "reason", g.Reason,
				"table", g.Table, "range", g.Range, "garbage_for", now.Sub(g.Since).Round(time.Second))
		})
	}
	wg.Wait()
	for i, g := range gs {
		if ok[i] {
			done = append(done, g)
		} else if ctx.Err() == nil {
			failed++
			c.failed.Inc()
		}
	}
	return done, failed
}

// unlist removes deleted objects from the garbage list.
func (c *Collector) unlist(ctx context.Context, done []manifest.TableGarbage) error {
	if len(done) == 0 {
		return nil
	}
	if err := c.m.Collected(ctx, done...); err != nil {
		return fmt.Errorf("gc: unlist %d deleted objects: %w", len(done), err)
	}
	return nil
}

func (c *Collector) acquire(ctx context.Context) error {
	_, err := c.m.AcquireLease(ctx, LeaseName, c.opts.Holder, c.opts.LeaseTTL)
	c.held.Store(err == nil)
	if err != nil {
		c.holding.Set(0)
		return fmt.Errorf("gc: %w", err)
	}
	c.holding.Set(1)
	return nil
}

// Run passes every Interval until ctx ends, then gives up the lease if it
// holds it, so that a standby takes over without waiting for it to expire.
// Failed passes are logged and retried at the next interval; Run returns
// nil when ctx ends.
func (c *Collector) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	held := false
	for {
		st, err := c.Collect(ctx)
		if now := c.held.Load(); now != held {
			if now {
				c.log.Info("collection lease taken", "holder", c.opts.Holder)
			} else {
				c.log.Info("collection lease not held; standing by", "err", err)
			}
			held = now
		}
		switch {
		case err != nil && !errors.Is(err, manifest.ErrLeaseHeld) && ctx.Err() == nil:
			c.log.Warn("garbage collection pass failed", "err", err, "deleted", st.Deleted)
		case st.Deleted > 0 || st.Failed > 0:
			c.log.Info("garbage collection pass", "deleted", st.Deleted, "bytes", st.Bytes, "failed", st.Failed, "waiting", st.Waiting)
		}
		select {
		case <-ctx.Done():
			// Released even if the last request seemed to fail: the
			// cancelled request may have taken the lease all the same.
			c.release(context.WithoutCancel(ctx))
			return nil
		case <-t.C:
		}
	}
}

// release gives up the lease if this collector holds it.
func (c *Collector) release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.m.ReleaseLease(ctx, LeaseName, c.opts.Holder); err != nil && !errors.Is(err, manifest.ErrLeaseHeld) {
		c.log.Warn("release of the collection lease failed", "err", err)
	}
	c.held.Store(false)
	c.holding.Set(0)
}
