package status

import (
	"fmt"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// S3 Standard list prices in us-east-1, in US dollars per 1000 requests, as
// of PricesAsOf. DELETE and multipart aborts are free.
const (
	PricePutPer1000 = 0.005  // PUT, COPY, POST, LIST
	PriceGetPer1000 = 0.0004 // GET, SELECT and all other requests
	PricesAsOf      = "2026-11-30"
)

// month is the period a cost rate is shown for as well as per hour.
const month = 30 * 24 * time.Hour

// Request classes, as S3 bills them.
const (
	classPut  = "PUT/LIST"
	classGet  = "GET"
	classFree = "free"
)

// requestClass maps an objectstore operation label to its billing class.
func requestClass(op string) string {
	switch op {
	case "put", "list", "multipart_create", "multipart_upload_part", "multipart_complete":
		return classPut
	case "delete", "multipart_abort":
		return classFree
	default: // get, get_range, head, and anything new
		return classGet
	}
}

// price is what one request of operation op costs, in dollars.
func price(op string) float64 {
	switch requestClass(op) {
	case classPut:
		return PricePutPer1000 / 1000
	case classGet:
		return PriceGetPer1000 / 1000
	}
	return 0
}

// Cache is one cache tier's lookups.
type Cache struct {
	Tier, Name   string
	Hits, Misses uint64
}

// HitRatio is the share of lookups served, in percent, or "n/a" before the
// first lookup.
func (c Cache) HitRatio() string {
	n := c.Hits + c.Misses
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", 100*float64(c.Hits)/float64(n))
}

// Requests are the object-store requests since the process started and
// what they cost.
type Requests struct {
	Ops []Op
	// Uptime is how long the counts took; Total is their cost.
	Uptime   string
	Total    float64
	PutPrice float64
	GetPrice float64
	AsOf     string
}

// count returns the requests of operation op.
func (r Requests) count(op string) uint64 {
	for _, o := range r.Ops {
		if o.Name == op {
			return o.Count
		}
	}
	return 0
}

// Op is the requests of one operation, over every backend.
type Op struct {
	Name, Class string
	Count       uint64
	Cost        float64
}

// Dollars formats an amount with six decimals: small clusters' costs are
// fractions of a cent.
func Dollars(v float64) string { return fmt.Sprintf("$%.6f", v) }

// label returns the value of label name of m.
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// counter returns the value of a counter or, for a CounterFunc the
// registry reports untyped, of its untyped value.
func counter(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetUntyped().GetValue()
}

// caches reads the cache tiers' hit and miss counters.
func caches(mfs []*dto.MetricFamily) []Cache {
	byKey := map[[2]string]*Cache{}
	get := func(m *dto.Metric) *Cache {
		k := [2]string{label(m, "tier"), label(m, "cache")}
		c := byKey[k]
		if c == nil {
			c = &Cache{Tier: k[0], Name: k[1]}
			byKey[k] = c
		}
		return c
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "sediment_cache_hits_total":
			for _, m := range mf.GetMetric() {
				get(m).Hits += uint64(counter(m))
			}
		case "sediment_cache_misses_total":
			for _, m := range mf.GetMetric() {
				get(m).Misses += uint64(counter(m))
			}
		}
	}
	out := make([]Cache, 0, len(byKey))
	for _, c := range byKey {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Cache) int {
		return strings.Compare(a.Tier+"\x00"+a.Name, b.Tier+"\x00"+b.Name)
	})
	return out
}

// Queue is the compaction queue's gauges (compaction.RegisterQueueMetrics).
type Queue struct {
	// Up says whether the queue answered; the rest is zero if not.
	Up        bool
	Jobs      int64
	Bytes     int64
	OldestAge string // seconds, one decimal
}

// queue reads the compaction queue's gauges, or returns nil if the
// process has no queue.
func queue(mfs []*dto.MetricFamily) *Queue {
	g := map[string]float64{}
	for _, mf := range mfs {
		if ms := mf.GetMetric(); len(ms) > 0 && strings.HasPrefix(mf.GetName(), "sediment_compaction_") {
			g[strings.TrimPrefix(mf.GetName(), "sediment_compaction_")] = ms[0].GetGauge().GetValue()
		}
	}
	up, ok := g["queue_up"]
	if !ok {
		return nil
	}
	return &Queue{Up: up == 1, Jobs: int64(g["queued_jobs"]), Bytes: int64(g["queued_bytes"]),
		OldestAge: formatSeconds(time.Duration(g["oldest_job_age_seconds"] * float64(time.Second)))}
}

// requests reads the object-store request counters and prices them; uptime
// is how long they counted.
func requests(mfs []*dto.MetricFamily, uptime time.Duration) Requests {
	r := Requests{PutPrice: PricePutPer1000, GetPrice: PriceGetPer1000, AsOf: PricesAsOf,
		Uptime: uptime.Round(time.Second).String()}
	byOp := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "sediment_objectstore_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			byOp[label(m, "operation")] += uint64(counter(m))
		}
	}
	for op, n := range byOp {
		o := Op{Name: op, Class: requestClass(op), Count: n, Cost: float64(n) * price(op)}
		r.Total += o.Cost
		r.Ops = append(r.Ops, o)
	}
	slices.SortFunc(r.Ops, func(a, b Op) int { return strings.Compare(a.Name, b.Name) })
	return r
}

// formatSeconds formats d in seconds with one decimal.
func formatSeconds(d time.Duration) string {
	return fmt.Sprintf("%.1f", d.Seconds())
}

// memtableBytes is the sum of the process's memtable gauges, -1 if it has
// none (no ingest role).
func memtableBytes(mfs []*dto.MetricFamily) int64 {
	for _, mf := range mfs {
		if mf.GetName() == "sediment_ingest_memtable_bytes" {
			var n float64
			for _, m := range mf.GetMetric() {
				n += m.GetGauge().GetValue()
			}
			return int64(n)
		}
	}
	return -1
}
