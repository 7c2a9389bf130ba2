package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/streamlog"
	"github.com/sedimentdb/sediment/manifest"
)

// takeoverMetrics count the takeovers of a node.
type takeoverMetrics struct {
	takeovers prometheus.Counter
	records   prometheus.Counter
	seconds   prometheus.Histogram
	adopting  prometheus.Gauge
}

// newTakeoverMetrics creates the takeover metrics in reg, and the gauges of
// g's owned ranges and of the ranges the View shows unowned.
func newTakeoverMetrics(reg prometheus.Registerer, g *Ingester) *takeoverMetrics {
	f := promauto.With(reg)
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "sediment", Subsystem: "ingest", Name: "ranges_owned",
		Help: "Token ranges this node owns.",
	}, func() float64 {
		if !g.open.Load() {
			return 0
		}
		return float64(len(g.committer.Owned()))
	})
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "sediment", Subsystem: "ingest", Name: "ranges_unowned",
		Help: "Token ranges of the cluster that no node owns, as this node's View shows them: their writes fail.",
	}, func() float64 { return float64(g.unowned()) })
	return &takeoverMetrics{
		takeovers: f.NewCounter(prometheus.CounterOpts{
			Namespace: "sediment", Subsystem: "ingest", Name: "takeovers_total",
			Help: "Ranges of dead nodes this node claimed and replayed.",
		}),
		records: f.NewCounter(prometheus.CounterOpts{
			Namespace: "sediment", Subsystem: "ingest", Name: "takeover_records_total",
			Help: "Records of dead nodes' logs, past their flush watermarks, replayed into this node.",
		}),
		seconds: f.NewHistogram(prometheus.HistogramOpts{
			Namespace: "sediment", Subsystem: "ingest", Name: "takeover_seconds",
			Help:    "Time from a takeover's start (the owner's lease long gone) to its ranges readable here.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 10),
		}),
		adopting: f.NewGauge(prometheus.GaugeOpts{
			Namespace: "sediment", Subsystem: "ingest", Name: "ranges_taking_over",
			Help: "Ranges being taken over: claimed, their former owner's log not yet replayed.",
		}),
	}
}

// watchOwners takes over the ranges of every ingest node whose heartbeat
// is older than -ingest.owner-lease, checking every heartbeat interval,
// until ctx ends. Only a replicated log lets another node replay a dead
// node's unflushed writes, so only then does the node take over.
func (g *Ingester) watchOwners(ctx context.Context) {
	tick := time.NewTicker(g.deps.HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, dead := range g.deadOwners() {
			if err := g.takeOver(ctx, dead); err != nil && ctx.Err() == nil {
				g.logger.Warn("taking over a dead node's ranges; retrying", "dead", dead, "err", err)
			}
		}
	}
}

// deadOwners returns the ingest members, other than this node, that have
// not beaten within the owner lease, as the View says. A member leaves the
// list only when it stops cleanly or a takeover of it completes, so one
// whose takeover was cut short is taken over again.
func (g *Ingester) deadOwners() []string {
	now := time.Now()
	var dead []string
	for _, m := range g.deps.View.Members() {
		if m.ID != g.deps.NodeID && slices.Contains(m.Roles, IngestRole) && !m.Live(now, g.cfg.OwnerLease) {
			dead = append(dead, m.ID)
		}
	}
	return dead
}

// takeOver claims the ranges of dead, under new epochs, and replays its
// log's unflushed records into this node. Under the range-claim lease, so
// that no other node takes over or claims at once, it:
//
//  1. checks in the manifest that dead's heartbeat is still older than the
//     lease;
//  2. refuses reads of dead's ranges here, since they would miss its
//     records until step 4;
//  3. claims them: dead's flushes can no longer commit;
//  4. opens each of dead's shard logs, which fences its appends (an
//     acknowledged write of dead is thus before the open marker), and
//     applies the records after the shard's flush watermark to this
//     node, which logs them in its own log;
//  5. drops dead's logs, lets reads in, and removes dead's member.
//
// A crash or error anywhere leaves dead's logs in place for the next
// attempt; applying a record twice stores what once does.
func (g *Ingester) takeOver(ctx context.Context, dead string) error {
	m := g.deps.Manifest
	if _, err := g.acquireClaimLease(ctx); err != nil {
		return err
	}
	defer func() {
		if err := m.ReleaseLease(context.WithoutCancel(ctx), claimLease, g.deps.NodeID); err != nil {
			g.logger.Warn("releasing the range-claim lease", "err", err)
		}
	}()
	start := time.Now()
	members, err := m.Members(ctx)
	if err != nil {
		return err
	}
	for _, mem := range members {
		if mem.ID == dead && mem.Live(time.Now(), g.cfg.OwnerLease) {
			return nil // it came back
		}
	}
	var ranges []int
	for r := range g.node.ranges {
		o, err := m.Ownership(ctx, r)
		if err != nil && !errors.Is(err, manifest.ErrNotFound) {
			return err
		}
		if o.Owner == dead {
			ranges = append(ranges, r)
		}
	}
	g.logger.Warn("taking over the ranges of a node whose lease expired", "dead", dead, "ranges", ranges)
	g.node.adopt(ranges, true)
	g.tm.adopting.Add(float64(len(ranges)))
	defer func() {
		g.node.adopt(ranges, false)
		g.tm.adopting.Sub(float64(len(ranges)))
	}()
	for _, r := range ranges {
		if _, err := g.committer.Claim(ctx, r); err != nil {
			return fmt.Errorf("claim range %d: %w", r, err)
		}
	}
	shards, err := streamlog.Shards(ctx, g.deps.JetStream, m.Cluster(), dead)
	if err != nil {
		return err
	}
	records := 0
	for _, shard := range shards {
		n, err := g.adoptLog(ctx, dead, shard)
		if err != nil {
			return fmt.Errorf("replay the log of %s shard %d: %w", dead, shard, err)
		}
		records += n
	}
	if err := m.Leave(ctx, dead); err != nil {
		return err
	}
	took := time.Since(start)
	g.tm.takeovers.Add(float64(len(ranges)))
	g.tm.records.Add(float64(records))
	g.tm.seconds.Observe(took.Seconds())
	g.logger.Warn("took over a dead node's ranges", "dead", dead, "ranges", len(ranges), "records", records, "took", took)
	return nil
}

// adoptLog opens dead's log of shard, fencing it, applies its records
// after the shard's flush watermark to this node, and drops the log. It
// returns the number of records applied.
func (g *Ingester) adoptLog(ctx context.Context, dead string, shard uint32) (int, error) {
	l, err := streamlog.Open(ctx, streamlog.Options{
		JetStream: g.deps.JetStream, Cluster: g.deps.Manifest.Cluster(),
		Node: dead, Shard: shard, Replicas: g.cfg.Log.Replicas,
		AppendTimeout: g.cfg.Log.AppendTimeout, Logger: g.logger,
	})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	flushed, err := g.committer.FlushedOf(ctx, dead, shard)
	if err != nil {
		return 0, err
	}
	type record struct {
		pos commitlog.Position
		rec []byte
	}
	var recs []record
	truncated := map[storage.TableID]commitlog.Position{}
	err = l.Replay(func(pos commitlog.Position, rec []byte) error {
		if pos.Compare(flushed) <= 0 {
			return nil
		}
		if len(rec) > 0 && rec[0] == recordTruncate {
			table, err := decodeTruncate(rec)
			if err != nil {
				return err
			}
			truncated[table] = pos
			return nil
		}
		recs = append(recs, record{pos, rec})
		return nil
	})
	if err != nil {
		return 0, err
	}
	// Mutations commute (every cell carries its timestamp), so they are
	// applied in parallel, each retried while the node is overloaded.
	muts := make(chan *storage.Mutation)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for mu := range muts {
				if err := g.applyAdopted(ctx, mu); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	var derr error
feed:
	for _, r := range recs {
		derr = decodeRecord(r.rec, func(mu *storage.Mutation) error {
			if t, ok := truncated[mu.Table]; ok && r.pos.Compare(t) < 0 {
				return nil
			}
			c := &storage.Mutation{Table: mu.Table, Entries: slices.Clone(mu.Entries)}
			select {
			case muts <- c:
				return nil
			case err := <-errs:
				return err
			}
		})
		if derr != nil {
			break feed
		}
	}
	close(muts)
	wg.Wait()
	if derr != nil {
		return 0, derr
	}
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return len(recs), l.Drop(ctx)
}

// applyAdopted applies a mutation of a dead node's log, retrying retriable
// failures while ctx allows.
func (g *Ingester) applyAdopted(ctx context.Context, m *storage.Mutation) error {
	backoff := 10 * time.Millisecond
	for {
		err := g.node.Apply(ctx, m)
		if err == nil || !storage.Retriable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// unowned returns the number of ranges the View shows without an owner, 0
// before the node knows the range count.
func (g *Ingester) unowned() int {
	if g.deps.View == nil || !g.open.Load() {
		return 0
	}
	n := 0
	for r := range g.node.ranges {
		if o, ok := g.deps.View.Ownership(r); !ok || o.Owner == "" {
			n++
		}
	}
	return n
}
