package compactor

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the workers' metrics, shared by the workers of one process.
type Metrics struct {
	running                     prometheus.Gauge
	read, written               prometheus.Counter
	committed, failed, obsolete prometheus.Counter
	discarded                   prometheus.Counter
}

// NewMetrics registers the workers' metrics with reg (none if nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	counter := func(name, help string) prometheus.Counter {
		return f.NewCounter(prometheus.CounterOpts{Namespace: "sediment", Subsystem: "compaction", Name: name, Help: help})
	}
	return &Metrics{
		running: f.NewGauge(prometheus.GaugeOpts{Namespace: "sediment", Subsystem: "compaction", Name: "running_jobs",
			Help: "Compaction jobs this process's workers are running."}),
		read:      counter("read_bytes_total", "Stored bytes of the input SSTables of the jobs run, finished or not."),
		written:   counter("written_bytes_total", "Stored bytes of the output SSTables written, committed or not."),
		committed: counter("jobs_committed_total", "Jobs whose outputs replaced their inputs in the manifest."),
		failed:    counter("jobs_failed_total", "Job attempts that failed and were handed back to the queue."),
		obsolete:  counter("jobs_obsolete_total", "Jobs dropped because an input had left the live set or the job's lease was lost."),
		discarded: counter("discarded_outputs_total", "Output objects put on the garbage list because their job did not commit them."),
	}
}

// queueCollector reports the queue's contents on each scrape.
type queueCollector struct {
	q                    *Queue
	timeout              time.Duration
	now                  func() time.Time
	jobs, bytes, age, up *prometheus.Desc
}

var _ prometheus.Collector = (*queueCollector)(nil)

// RegisterQueueMetrics registers with reg the gauges of q's contents,
// read from the stream on each scrape: queued jobs, their input bytes and
// the age of the oldest. They are the same in every process; an
// autoscaler takes their max over the compactors.
func RegisterQueueMetrics(reg prometheus.Registerer, q *Queue) error {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName("sediment", "compaction", name), help, nil, nil)
	}
	return reg.Register(&queueCollector{
		q: q, timeout: 5 * time.Second, now: q.opts.Now,
		jobs:  desc("queued_jobs", "Jobs in the work queue, waiting or running."),
		bytes: desc("queued_bytes", "Stored bytes of the inputs of the jobs in the work queue: bytes waiting to be compacted."),
		age:   desc("oldest_job_age_seconds", "Age of the oldest job in the work queue; 0 when it is empty."),
		up:    desc("queue_up", "1 if the work queue answered the last scrape, else 0."),
	})
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.jobs
	ch <- c.bytes
	ch <- c.age
	ch <- c.up
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	s, err := c.q.Stats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	age := 0.0
	if !s.Oldest.IsZero() {
		age = max(0, c.now().Sub(s.Oldest).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(s.Jobs))
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(s.Bytes))
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, age)
}
