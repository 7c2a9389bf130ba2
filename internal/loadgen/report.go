package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// opKind is a kind of operation, measured on its own.
type opKind int

const (
	opWrite opKind = iota
	opRead
	opScan
	opCounter
	numKinds
)

var kindNames = [numKinds]string{"write", "read", "scan", "counter"}

// Latencies are recorded in microseconds from 1 µs to a minute with three
// significant digits: a recorded value is within 0.1% of the true one.
const (
	minLatencyMicros = 1
	maxLatencyMicros = 60_000_000
	sigFigs          = 3
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(minLatencyMicros, maxLatencyMicros, sigFigs)
}

// recordValue records d, clamped to the histogram's range.
func recordValue(h *hdrhistogram.Histogram, d time.Duration) {
	us := min(max(d.Microseconds(), minLatencyMicros), maxLatencyMicros)
	_ = h.RecordValue(us) // cannot fail: us is in range
}

// recorder collects the outcome of every operation of a run. Workers share
// it: one lock held for a few counter updates costs far less than the
// network round trip of each operation.
type recorder struct {
	mu       sync.Mutex
	kinds    [numKinds]kindStats
	interval *hdrhistogram.Histogram // every kind since the last tick
	tickOps  int64
	tickErrs int64
	firstErr error
}

type kindStats struct {
	hist                      *hdrhistogram.Histogram
	ops, errors, misses, rows int64
}

func newRecorder() *recorder {
	r := &recorder{interval: newHistogram()}
	for k := range r.kinds {
		r.kinds[k].hist = newHistogram()
	}
	return r
}

// record records one operation of kind k that took d. A failed operation
// counts as an error and its latency is not recorded; rows is how many rows
// a read returned, and a read that found none is a miss.
func (r *recorder) record(k opKind, d time.Duration, err error, rows int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.kinds[k]
	s.ops++
	r.tickOps++
	if err != nil {
		s.errors++
		r.tickErrs++
		if r.firstErr == nil {
			r.firstErr = err
		}
		return
	}
	if (k == opRead || k == opScan) && rows == 0 {
		s.misses++
	}
	s.rows += int64(rows)
	recordValue(s.hist, d)
	recordValue(r.interval, d)
}

// tick returns the operations, errors and 99th percentile latency since the
// last tick.
func (r *recorder) tick() (ops, errs int64, p99 time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops, errs = r.tickOps, r.tickErrs
	p99 = time.Duration(r.interval.ValueAtQuantile(99)) * time.Microsecond
	r.tickOps, r.tickErrs = 0, 0
	r.interval.Reset()
	return ops, errs, p99
}

// Report is the outcome of a run.
type Report struct {
	Workload     string `json:"workload"`
	Distribution string `json:"distribution"`
	Ceiling      bool   `json:"ceiling"`
	// DurableCeiling: the ceiling synced its writes (CeilingCommitlog).
	DurableCeiling bool    `json:"durable_ceiling"`
	Concurrency    int     `json:"concurrency"`
	Connections    int     `json:"connections"`
	RowSize        int     `json:"row_size"`
	Elapsed        float64 `json:"elapsed_s"`
	// Ops counts every operation issued, failed or not.
	Ops int64 `json:"ops"`
	// Errors counts failed operations, and misses in the read and scan
	// workloads.
	Errors int64 `json:"errors"`
	// Misses counts reads and scans that found no row.
	Misses    int64   `json:"misses"`
	OpsPerSec float64 `json:"ops_per_s"`
	// Latency is that of every successful operation.
	Latency Latency    `json:"latency"`
	ByOp    []OpReport `json:"by_op"`
	// FirstError is the first failure, if any.
	FirstError string `json:"first_error,omitempty"`
}

// OpReport is the outcome of the operations of one kind: write, read, scan
// or counter.
type OpReport struct {
	Op     string `json:"op"`
	Ops    int64  `json:"ops"`
	Errors int64  `json:"errors"`
	Misses int64  `json:"misses"`
	// Rows counts the rows reads and scans returned.
	Rows    int64   `json:"rows"`
	Latency Latency `json:"latency"`
}

// Latency summarizes a latency distribution, in milliseconds.
type Latency struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

func summarize(h *hdrhistogram.Histogram) Latency {
	ms := func(us int64) float64 { return float64(us) / 1e3 }
	return Latency{
		P50:  ms(h.ValueAtQuantile(50)),
		P90:  ms(h.ValueAtQuantile(90)),
		P99:  ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)),
		Max:  ms(h.Max()),
		Mean: math.Round(h.Mean()) / 1e3, // to the microsecond, as the others
	}
}

// report builds the report of a run of cfg that took elapsed.
func (r *recorder) report(cfg *Config, elapsed time.Duration) *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := &Report{
		Workload: cfg.Workload, Distribution: cfg.Distribution,
		Ceiling: cfg.Ceiling, DurableCeiling: cfg.Ceiling && cfg.CeilingCommitlog != "",
		Concurrency: cfg.Concurrency, Connections: cfg.Connections, RowSize: cfg.RowSize,
		Elapsed: elapsed.Seconds(),
	}
	all := newHistogram()
	for k := range r.kinds {
		s := &r.kinds[k]
		if s.ops == 0 {
			continue
		}
		all.Merge(s.hist)
		rep.Ops += s.ops
		rep.Errors += s.errors
		rep.Misses += s.misses
		rep.ByOp = append(rep.ByOp, OpReport{
			Op: kindNames[k], Ops: s.ops, Errors: s.errors, Misses: s.misses, Rows: s.rows,
			Latency: summarize(s.hist),
		})
	}
	if cfg.Workload == Read || cfg.Workload == Scan {
		rep.Errors += rep.Misses
	}
	if elapsed > 0 {
		rep.OpsPerSec = float64(rep.Ops) / elapsed.Seconds()
	}
	rep.Latency = summarize(all)
	if r.firstErr != nil {
		rep.FirstError = r.firstErr.Error()
	}
	return rep
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	target := "server"
	switch {
	case r.DurableCeiling:
		target = "null server syncing a commitlog per core (durable ceiling)"
	case r.Ceiling:
		target = "null server (ceiling)"
	}
	lat := func(l Latency) string {
		return fmt.Sprintf("p50 %.3fms  p90 %.3fms  p99 %.3fms  p99.9 %.3fms  max %.3fms", l.P50, l.P90, l.P99, l.P999, l.Max)
	}
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	p("workload  %s, %s keys, %d B rows, concurrency %d, %d connections per host, against the %s\n",
		r.Workload, r.Distribution, r.RowSize, r.Concurrency, r.Connections, target)
	p("elapsed   %.2fs\n", r.Elapsed)
	p("ops       %d (%.0f ops/s), %d errors, %d misses\n", r.Ops, r.OpsPerSec, r.Errors, r.Misses)
	p("latency   %s\n", lat(r.Latency))
	if len(r.ByOp) > 1 || len(r.ByOp) == 1 && r.ByOp[0].Op == kindNames[opScan] {
		for _, o := range r.ByOp {
			reads := ""
			if o.Op == kindNames[opRead] || o.Op == kindNames[opScan] {
				reads = fmt.Sprintf(", %d misses, %d rows", o.Misses, o.Rows)
			}
			p("%-9s %d ops, %d errors%s; %s\n", o.Op, o.Ops, o.Errors, reads, lat(o.Latency))
		}
	}
	if r.FirstError != "" {
		p("first error: %s\n", r.FirstError)
	}
	return err
}
