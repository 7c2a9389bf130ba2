package cache

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Stats are a tier's counters since it was created or opened.
type Stats struct {
	Hits       uint64 // lookups served from the tier
	Misses     uint64 // lookups the tier could not serve
	Evictions  uint64 // entries pushed out to make room
	LoadErrors uint64 // failed loads from the next tier
	Corrupt    uint64 // entries that failed verification and were dropped
	Bytes      int64  // bytes held, including per-entry overhead
	Entries    int64  // entries held
}

func (s *Stats) add(o Stats) {
	s.Hits += o.Hits
	s.Misses += o.Misses
	s.Evictions += o.Evictions
	s.LoadErrors += o.LoadErrors
	s.Corrupt += o.Corrupt
	s.Bytes += o.Bytes
	s.Entries += o.Entries
}

// registerMetrics exports stats, read at scrape time, so the hit path pays
// nothing for metrics beyond the counters a tier keeps under its own lock.
func registerMetrics(reg prometheus.Registerer, tier string, o Options, stats func() Stats) {
	if reg == nil {
		return
	}
	f := promauto.With(prometheus.WrapRegistererWith(prometheus.Labels{"tier": tier, "cache": o.Name}, reg))
	counter := func(name, help string, v func(Stats) uint64) {
		f.NewCounterFunc(prometheus.CounterOpts{Namespace: "sediment", Subsystem: "cache", Name: name, Help: help},
			func() float64 { return float64(v(stats())) })
	}
	gauge := func(name, help string, v func(Stats) int64) {
		f.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "sediment", Subsystem: "cache", Name: name, Help: help},
			func() float64 { return float64(v(stats())) })
	}
	counter("hits_total", "Lookups served from the cache tier.", func(s Stats) uint64 { return s.Hits })
	counter("misses_total", "Lookups the cache tier could not serve.", func(s Stats) uint64 { return s.Misses })
	counter("evictions_total", "Entries evicted to make room.", func(s Stats) uint64 { return s.Evictions })
	counter("load_errors_total", "Failed loads from the next tier.", func(s Stats) uint64 { return s.LoadErrors })
	counter("corrupt_total", "Entries that failed verification and were dropped.", func(s Stats) uint64 { return s.Corrupt })
	gauge("bytes", "Bytes held by the cache tier, including per-entry overhead.", func(s Stats) int64 { return s.Bytes })
	gauge("entries", "Entries held by the cache tier.", func(s Stats) int64 { return s.Entries })
}
