package status

import (
	"context"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Defaults of a History: a sample every 10 s, the last hour kept.
const (
	DefaultSampleEvery = 10 * time.Second
	DefaultKeep        = time.Hour
)

// A History samples a process's metrics at a fixed interval and keeps the
// last Keep of them in memory, for the page's charts: rates and latencies
// are differences between consecutive samples. It holds a few hundred
// small samples; nothing is written anywhere.
type History struct {
	g     prometheus.Gatherer
	every time.Duration
	keep  time.Duration

	mu     sync.Mutex
	points []point // oldest first, at most keep/every+1
}

// point is one sample: the cumulative counters the charts need, summed
// over the labels they do not split by, and the gauges as they were.
type point struct {
	at          time.Time
	cqlRequests float64
	cqlErrors   map[string]float64 // by code
	latency     []bucket           // CQL request durations, all opcodes
	flushes     float64
	flushFails  float64
	backlog     float64 // compaction backlog bytes, every table
	queuedJobs  float64
	cacheHits   map[string]float64 // by tier
	cacheMisses map[string]float64
	requests    float64 // object-store requests
	cost        float64 // their price in dollars
}

// bucket is one cumulative histogram bucket.
type bucket struct {
	le    float64
	count float64
}

// NewHistory returns a History of g's metrics, sampled every every and
// kept for keep (defaults for zero values).
func NewHistory(g prometheus.Gatherer, every, keep time.Duration) *History {
	if every <= 0 {
		every = DefaultSampleEvery
	}
	if keep <= 0 {
		keep = DefaultKeep
	}
	return &History{g: g, every: every, keep: keep}
}

// Run samples every interval until ctx ends.
func (h *History) Run(ctx context.Context) {
	t := time.NewTicker(h.every)
	defer t.Stop()
	h.Sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			h.Sample(now)
		}
	}
}

// Sample takes one sample at now and drops those older than Keep.
func (h *History) Sample(now time.Time) {
	mfs, _ := h.g.Gather() // what could be gathered, as on the page
	p := pointOf(mfs, now)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.points = append(h.points, p)
	cut := 0
	for cut < len(h.points) && now.Sub(h.points[cut].at) > h.keep {
		cut++
	}
	h.points = slices.Delete(h.points, 0, cut)
}

func pointOf(mfs []*dto.MetricFamily, now time.Time) point {
	p := point{at: now, cqlErrors: map[string]float64{}, cacheHits: map[string]float64{}, cacheMisses: map[string]float64{}}
	les := map[float64]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "sediment_cql_requests_total":
				p.cqlRequests += counter(m)
			case "sediment_cql_errors_total":
				p.cqlErrors[label(m, "code")] += counter(m)
			case "sediment_cql_request_duration_seconds":
				addBuckets(les, m)
			case "sediment_ingest_flushes_total":
				p.flushes += counter(m)
			case "sediment_ingest_flush_failures_total":
				p.flushFails += counter(m)
			case "sediment_compaction_backlog_bytes":
				p.backlog += m.GetGauge().GetValue()
			case "sediment_compaction_queued_jobs":
				p.queuedJobs += m.GetGauge().GetValue()
			case "sediment_cache_hits_total":
				p.cacheHits[label(m, "tier")] += counter(m)
			case "sediment_cache_misses_total":
				p.cacheMisses[label(m, "tier")] += counter(m)
			case "sediment_objectstore_requests_total":
				n := counter(m)
				p.requests += n
				p.cost += n * price(label(m, "operation"))
			}
		}
	}
	p.latency = sortedBuckets(les)
	return p
}

// addBuckets adds histogram m's cumulative buckets to les, by bound, and
// its count as the +Inf bucket, which the exposition leaves implicit.
func addBuckets(les map[float64]float64, m *dto.Metric) {
	h := m.GetHistogram()
	for _, b := range h.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			les[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	les[math.Inf(1)] += float64(h.GetSampleCount())
}

func sortedBuckets(les map[float64]float64) []bucket {
	out := make([]bucket, 0, len(les))
	for le, n := range les {
		out = append(out, bucket{le, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].le < out[j].le })
	return out
}

// Quantile is the q-quantile, in milliseconds, of every observation of
// the histograms ms (a family's metrics, summed) since they started,
// interpolated as on the page's charts; NaN without observations. The
// histograms must count seconds.
func Quantile(ms []*dto.Metric, q float64) float64 {
	les := map[float64]float64{}
	for _, m := range ms {
		addBuckets(les, m)
	}
	return quantile(point{}, point{latency: sortedBuckets(les)}, q)
}

// snapshot returns the samples, oldest first.
func (h *History) snapshot() []point {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.points)
}

// rate is the per-second increase of f between two samples.
func rate(a, b point, f func(point) float64) float64 {
	dt := b.at.Sub(a.at).Seconds()
	if dt <= 0 {
		return math.NaN()
	}
	return (f(b) - f(a)) / dt
}

// quantile is the q-quantile, in milliseconds, of the requests between
// samples a and b, interpolated within the bucket it falls in as
// Prometheus's histogram_quantile does; NaN when there were none.
func quantile(a, b point, q float64) float64 {
	if len(b.latency) == 0 {
		return math.NaN()
	}
	prev := map[float64]float64{}
	for _, bk := range a.latency {
		prev[bk.le] = bk.count
	}
	delta := make([]bucket, len(b.latency))
	for i, bk := range b.latency {
		delta[i] = bucket{bk.le, bk.count - prev[bk.le]}
	}
	total := delta[len(delta)-1].count // the +Inf bucket
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lo, below := 0.0, 0.0
	for _, bk := range delta {
		if bk.count >= rank {
			if math.IsInf(bk.le, 1) {
				return lo * 1000 // beyond the largest bound: its lower edge
			}
			in := bk.count - below
			if in <= 0 {
				return bk.le * 1000
			}
			return (lo + (bk.le-lo)*(rank-below)/in) * 1000
		}
		lo, below = bk.le, bk.count
	}
	return lo * 1000
}
