// Package gc deletes the objects on the manifest's garbage list: SSTables
// that compaction, TRUNCATE or DROP removed from the live set, and outputs
// that never joined it (manifest.Garbage); and, in an orphan sweep, the
// objects no one listed: those a crashed flush or compaction uploaded and
// never committed.
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
//
// # Orphans
//
// Every OrphanInterval a pass also sweeps for orphans, in this order:
//
//  1. list the objects under OrphanPrefixes (the SSTable prefixes, never
//     the manifest archive);
//  2. read the catalog: every sstables document, its live set and its
//     garbage list, in one get each;
//  3. delete each listed object that step 2 found nowhere and that is
//     older than OrphanAge, if the previous sweep found it unreferenced
//     too.
//
// An object moves only forward, and within its document: uploaded, live,
// garbage, deleted. Reading a document in one get finds every object it
// references at that moment, live or garbage; reading the catalog after the
// listing finds every listed object committed before the catalog was read.
// One committed later was uploaded before the listing and committed after
// it, which the committers bound: an ingest flush uploads its SSTables
// again if it could not commit them within -ingest.max-commit-delay, and a
// compaction attempt commits only within MaxCommitAge of its start
// (compaction.WorkerOptions). OrphanAge must exceed both by far, and the
// clock skew between the bucket and the collector: such an object is then
// never old enough to go. The second sighting is a second line of
// defence against a catalog read that misses a reference: two reads an
// interval apart must both miss it.
//
// Only the current catalog counts: an object that only an archived older
// manifest version names is an orphan, since a restore takes the newest
// version of each key. Every sstables document is read, not only those of
// the schema's tables: a DROP that stopped part way leaves live SSTables in
// the documents of a table the schema no longer has, and they stay
// referenced until DropSSTables moves them to the garbage list.
package gc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
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
	// OrphanInterval is the time between orphan sweeps, each part of a
	// pass; 0 sweeps never.
	OrphanInterval time.Duration `yaml:"orphan_interval"`
	// OrphanAge is how old an unreferenced object must be to go.
	OrphanAge time.Duration `yaml:"orphan_age"`
	// OrphanPrefixes are the key prefixes swept, each ending in "/".
	OrphanPrefixes []string `yaml:"orphan_prefixes"`
}

// MinOrphanAge bounds OrphanAge from below: well above the default
// -ingest.max-commit-delay (1h), the longest a flush's upload may wait for
// its commit, so that an object about to be committed is never old enough.
const MinOrphanAge = 6 * time.Hour

// archivePrefix holds the manifest archive, which no sweep may touch.
const archivePrefix = "manifest/"

// RegisterFlags registers the flags of c with their defaults.
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	f.DurationVar(&c.GracePeriod, "gc.grace-period", time.Hour, "How long an object removed from the manifest (by compaction, TRUNCATE or DROP) stays in the bucket before the compactor role deletes it. Must be longer than any read can last, plus the clock skew between nodes: a read still using a deleted object fails.")
	f.DurationVar(&c.Interval, "gc.interval", time.Minute, "Time between the compactor role's passes over the garbage list.")
	f.DurationVar(&c.OrphanInterval, "gc.orphan-interval", time.Hour, "Time between the compactor role's sweeps for orphans: objects under -gc.orphan-prefixes that the manifest references nowhere, left by crashed flushes and compactions. 0 turns the sweep off.")
	f.DurationVar(&c.OrphanAge, "gc.orphan-age", 24*time.Hour, "How old an unreferenced object must be before the orphan sweep deletes it. At least 6h and above -gc.grace-period; keep it far above -ingest.max-commit-delay and the compactor's longest job, which could otherwise commit an object the sweep deleted.")
	c.OrphanPrefixes = []string{"sst/", "compaction/"}
	f.Func("gc.orphan-prefixes", `Comma-separated key prefixes the orphan sweep lists, each ending in "/": where the ingest role (-ingest.object-prefix) and compaction write SSTables. Never the manifest archive (default "sst/,compaction/").`, func(v string) error {
		c.OrphanPrefixes = strings.Split(v, ",")
		return nil
	})
}

// Validate checks c.
func (c *Config) Validate() error {
	if c.GracePeriod <= 0 {
		return errors.New("config: -gc.grace-period must be positive")
	}
	if c.Interval <= 0 {
		return errors.New("config: -gc.interval must be positive")
	}
	if c.OrphanInterval < 0 {
		return errors.New("config: -gc.orphan-interval must not be negative")
	}
	if c.OrphanInterval == 0 {
		return nil
	}
	if c.OrphanAge < MinOrphanAge || c.OrphanAge <= c.GracePeriod {
		return fmt.Errorf("config: -gc.orphan-age %v must be at least %v and above -gc.grace-period %v", c.OrphanAge, MinOrphanAge, c.GracePeriod)
	}
	if len(c.OrphanPrefixes) == 0 {
		return errors.New("config: -gc.orphan-prefixes is empty")
	}
	for _, p := range c.OrphanPrefixes {
		// A prefix ends in "/", so only "manifest/" itself, or one under
		// it, reaches the archive.
		if p == "/" || !strings.HasSuffix(p, "/") || strings.HasPrefix(p, archivePrefix) || strings.HasPrefix(p, "/") {
			return fmt.Errorf("config: -gc.orphan-prefixes: %q must be a key prefix ending in \"/\" outside %q", p, archivePrefix)
		}
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
	Pinned  int   // garbage a snapshot names, kept until it is dropped

	// Of the orphan sweep, if the pass ran one:
	Swept        bool
	Orphans      int   // orphans deleted
	OrphanBytes  int64 // their size, as the bucket listed it
	YoungOrphans int   // unreferenced objects younger than OrphanAge
	Suspects     int   // old unreferenced objects seen for the first time
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

	// nextSweep is when the next orphan sweep is due; suspects are the
	// old unreferenced objects the last sweep found (a second sighting
	// deletes them). Only Collect, which runs one pass at a time, uses
	// them.
	nextSweep time.Time
	suspects  map[string]bool

	deleted, bytes, failed       prometheus.Counter
	orphans, orphanBytes, sweeps prometheus.Counter
	waiting, pinned, holding     prometheus.Gauge
	young, suspected             prometheus.Gauge
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
		failed:  counter("delete_failures_total", "Deletions of garbage or orphan objects that failed and are retried at the next pass or sweep."),
		waiting: gauge("waiting_objects", "Garbage objects still within their grace period at the last pass."),
		pinned:  gauge("pinned_objects", "Garbage objects kept past their grace period because a snapshot names them, at the last pass."),
		holding: gauge("lease_held", "1 while this collector holds the collection lease, else 0."),

		orphans:     counter("orphans_deleted_total", "Orphan objects (under the orphan prefixes, referenced by no live set or garbage list, older than the orphan age) deleted from the bucket."),
		orphanBytes: counter("orphan_bytes_deleted_total", "Bytes of the orphan objects deleted, as the bucket listed them."),
		sweeps:      counter("orphan_sweeps_total", "Orphan sweeps completed."),
		young:       gauge("young_orphans", "Unreferenced objects under the orphan prefixes still younger than the orphan age at the last sweep."),
		suspected:   gauge("orphan_suspects", "Unreferenced objects older than the orphan age first seen at the last sweep, deleted at the next if still unreferenced."),
	}, nil
}

// Collect runs one pass: it takes or renews the lease, failing with an
// error matching manifest.ErrLeaseHeld if another collector holds it, then
// deletes and unlists every object whose grace period has run out, and
// sweeps for orphans if one is due. Passes of one Collector must not
// overlap.
func (c *Collector) Collect(ctx context.Context) (Stats, error) {
	st, err := c.collect(ctx)
	if err == nil && c.cfg.OrphanInterval > 0 && !c.opts.Now().Before(c.nextSweep) {
		if err = c.sweep(ctx, &st); err == nil {
			c.nextSweep = c.opts.Now().Add(c.cfg.OrphanInterval)
		}
	}
	if errors.Is(err, manifest.ErrLeaseHeld) {
		// Another collector sweeps meanwhile: sightings made before then
		// are no second read an interval before the next.
		c.suspects = nil
	}
	return st, err
}

// collect deletes and unlists the garbage whose grace has run out.
func (c *Collector) collect(ctx context.Context) (Stats, error) {
	var st Stats
	if err := c.acquire(ctx); err != nil {
		return st, err
	}
	acquired := time.Now()
	gs, err := c.m.Garbage(ctx)
	if err != nil {
		return st, err
	}
	// Read after the garbage list: a snapshot taken since pins only
	// SSTables that were live a moment ago, still within their grace.
	pinned, err := c.m.PinnedKeys(ctx)
	if err != nil {
		return st, err
	}
	now := c.opts.Now()
	var due []manifest.TableGarbage
	for _, g := range gs {
		switch {
		case pinned[g.Key]:
			st.Pinned++
		case now.Sub(g.Since) >= c.cfg.GracePeriod:
			due = append(due, g)
		default:
			st.Waiting++
		}
	}
	c.waiting.Set(float64(st.Waiting))
	c.pinned.Set(float64(st.Pinned))
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
	ok := c.deleteAll(ctx, len(gs), func(i int) string { return gs[i].Key }, func(i int, err error) {
		g := gs[i]
		if err != nil {
			c.log.Warn("delete of garbage object failed; retried next pass", "object", g.Key, "err", err)
			return
		}
		c.log.Info("deleted garbage object", "object", g.Key, "bytes", g.Size, "reason", g.Reason,
			"table", g.Table, "range", g.Range, "garbage_for", now.Sub(g.Since).Round(time.Second))
	})
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

// deleteAll deletes the n objects key(i), up to deletes at once, calls
// logf with each outcome but the failures after ctx ended, and reports
// which succeeded.
func (c *Collector) deleteAll(ctx context.Context, n int, key func(int) string, logf func(i int, err error)) []bool {
	ok := make([]bool, n)
	sem := make(chan struct{}, deletes)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := c.store.Delete(ctx, key(i))
			ok[i] = err == nil
			if err == nil || ctx.Err() == nil {
				logf(i, err)
			}
		})
	}
	wg.Wait()
	return ok
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
		case st.Deleted > 0 || st.Failed > 0 || st.Orphans > 0:
			c.log.Info("garbage collection pass", "deleted", st.Deleted, "bytes", st.Bytes, "failed", st.Failed, "waiting", st.Waiting,
				"orphans", st.Orphans, "orphan_bytes", st.OrphanBytes)
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
