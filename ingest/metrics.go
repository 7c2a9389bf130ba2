package ingest

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/sedimentdb/sediment/internal/commitlog"
)

type metrics struct {
	batches, mutations, overloaded prometheus.Counter
	batchSize                      prometheus.Histogram
	flushes, flushFailures         prometheus.Counter
	flushedBytes, replayed         prometheus.Counter
	flushSeconds                   prometheus.Histogram
	flushDelays, flushDelaySeconds prometheus.Counter
	l0Pressure                     prometheus.Gauge
}

// newMetrics creates a shard's metrics, labelled with its ID, in reg (none
// registered if reg is nil), reading the commitlog's counters from log.
func newMetrics(reg prometheus.Registerer, shard uint32, memory func() int64, log func() commitlog.Stats) *metrics {
	f := promauto.With(reg)
	l := prometheus.Labels{"shard": shardLabel(shard)}
	counter := func(name, help string) prometheus.Counter {
		return f.NewCounter(prometheus.CounterOpts{Namespace: "sediment", Subsystem: "ingest", Name: name, Help: help, ConstLabels: l})
	}
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "sediment", Subsystem: "ingest", Name: "memtable_bytes", ConstLabels: l,
		Help: "Bytes of the shard's active and flushing memtables.",
	}, func() float64 { return float64(memory()) })
	f.NewCounterFunc(prometheus.CounterOpts{
		Namespace: "sediment", Subsystem: "ingest", Name: "commitlog_syncs_total", ConstLabels: l,
		Help: "Syncs (fdatasync) of the shard's commitlog.",
	}, func() float64 { return float64(log().Syncs) })
	f.NewCounterFunc(prometheus.CounterOpts{
		Namespace: "sediment", Subsystem: "ingest", Name: "commitlog_sync_seconds_total", ConstLabels: l,
		Help: "Seconds spent in syncs of the shard's commitlog.",
	}, func() float64 { return log().SyncTime.Seconds() })
	return &metrics{
		batches:    counter("batches_total", "Group commits: commitlog records written and applied."),
		mutations:  counter("mutations_total", "Mutations written."),
		overloaded: counter("overloaded_total", "Writes failed because memtable memory stayed exhausted."),
		batchSize: f.NewHistogram(prometheus.HistogramOpts{
			Namespace: "sediment", Subsystem: "ingest", Name: "batch_mutations", ConstLabels: l,
			Help:    "Mutations per group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8),
		}),
		flushes:           counter("flushes_total", "Memtables flushed and committed."),
		flushFailures:     counter("flush_failures_total", "Flush attempts that failed and were retried."),
		flushedBytes:      counter("flushed_bytes_total", "Bytes of SSTables uploaded."),
		replayed:          counter("replayed_records_total", "Commitlog records replayed at open."),
		flushDelays:       counter("flush_delays_total", "Flush commits delayed or held because their L0 was filling up."),
		flushDelaySeconds: counter("flush_delay_seconds_total", "Seconds flush commits spent delayed or held for L0 back-pressure."),
		l0Pressure: f.NewGauge(prometheus.GaugeOpts{
			Namespace: "sediment", Subsystem: "ingest", Name: "l0_pressure", ConstLabels: l,
			Help: "Highest L0 pressure among the token ranges of the shard's last flush check: 0 fine, 1 at l0_limit, more beyond.",
		}),
		flushSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Namespace: "sediment", Subsystem: "ingest", Name: "flush_seconds", ConstLabels: l,
			Help:    "Time of a successful flush attempt: uploads and commit.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 8),
		}),
	}
}
