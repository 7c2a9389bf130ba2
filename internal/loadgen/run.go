package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend/transport"
)

// Run runs the workload of cfg and reports it. With a progress writer, it
// writes one line there each second: the operations per second, errors and
// 99th percentile latency of that second. Cancelling ctx ends the run early;
// the operations in flight finish and the report covers what ran.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	hosts := cfg.Hosts
	if cfg.Ceiling {
		null := NewNullHandler(cfg.Keyspace, cfg.Table, cfg.RowSize, netip.AddrFrom4([4]byte{127, 0, 0, 1}))
		var h transport.Handler = null
		if cfg.CeilingCommitlog != "" {
			dir, err := os.MkdirTemp(cfg.CeilingCommitlog, "sediment-bench-commitlog-")
			if err != nil {
				return nil, fmt.Errorf("loadgen: %w", err)
			}
			defer os.RemoveAll(dir)
			d, stop, err := openDurable(null, dir)
			if err != nil {
				return nil, fmt.Errorf("loadgen: opening the ceiling's commitlogs: %w", err)
			}
			defer stop()
			h = d
		}
		srv, err := StartNullServer(h)
		if err != nil {
			return nil, fmt.Errorf("loadgen: starting the null server: %w", err)
		}
		defer srv.Close()
		hosts = []string{srv.Addr()}
	}
	stmts := newWorkloadStatements(cfg.Keyspace, cfg.Table)
	if cfg.Setup {
		if err := setup(cluster(&cfg, hosts, ""), stmts.setup); err != nil {
			return nil, err
		}
	}
	sess, err := cluster(&cfg, hosts, cfg.Keyspace).CreateSession()
	if err != nil {
		return nil, fmt.Errorf("loadgen: connecting to %v: %w", hosts, err)
	}
	defer sess.Close()

	rec := newRecorder()
	var seq, issued atomic.Int64
	workers := make([]*worker, cfg.Concurrency)
	for i := range workers {
		workers[i] = newWorker(&cfg, sess, &stmts, rec, uint64(i), &seq)
	}

	// The driver prepares a statement when it first routes it; routing them
	// now keeps that round trip out of the measured latencies. An error
	// here shows again in the operations.
	for _, q := range workers[0].queries() {
		_, _ = q.Bind(int64(0), int64(0)).GetRoutingKey()
	}

	start := time.Now()
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	var sched *schedule
	if cfg.Rate > 0 {
		sched = &schedule{start: start, interval: float64(time.Second) / cfg.Rate}
	}
	stopProgress := startProgress(progress, rec, start)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if cfg.Count > 0 && issued.Add(1) > cfg.Count {
					return
				}
				due := time.Now()
				if sched != nil {
					var ok bool
					if due, ok = sched.wait(ctx); !ok {
						return
					}
				}
				w.op(due)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	return rec.report(&cfg, elapsed), nil
}

// cluster returns the driver's configuration for hosts, with the session in
// keyspace ks.
func cluster(cfg *Config, hosts []string, ks string) *gocql.ClusterConfig {
	c := gocql.NewCluster(hosts...)
	c.Keyspace = ks
	c.NumConns = cfg.Connections
	c.Consistency = gocql.LocalOne
	c.Timeout = cfg.Timeout
	c.ConnectTimeout = cfg.Timeout
	c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	return c
}

// setup runs the statements that create the keyspace and tables.
func setup(c *gocql.ClusterConfig, stmts []string) error {
	c.NumConns = 1
	sess, err := c.CreateSession()
	if err != nil {
		return fmt.Errorf("loadgen: connecting to %v: %w", c.Hosts, err)
	}
	defer sess.Close()
	for _, s := range stmts {
		if err := sess.Query(s).Exec(); err != nil {
			return fmt.Errorf("loadgen: setup: %s: %w", s, err)
		}
	}
	return nil
}

// startProgress writes a line to w each second until the returned function
// is called.
func startProgress(w io.Writer, rec *recorder, start time.Time) (stop func()) {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := start
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				ops, errs, p99 := rec.tick()
				fmt.Fprintf(w, "%5.0fs %10.0f ops/s %8d errors  p99 %8.3fms\n",
					now.Sub(start).Seconds(), float64(ops)/now.Sub(last).Seconds(), errs, float64(p99.Microseconds())/1e3)
				last = now
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// worker issues one operation at a time with its own prepared queries and
// random source.
type worker struct {
	cfg   *Config
	rec   *recorder
	r     *rand.Rand
	rows  keyGen // over the rows of the key space
	parts keyGen // over its partitions
	value []byte

	insert, read, scan, counter *gocql.Query
}

func newWorker(cfg *Config, sess *gocql.Session, s *workloadStatements, rec *recorder, id uint64, seq *atomic.Int64) *worker {
	r := rand.New(rand.NewPCG(cfg.Seed, id))
	w := &worker{
		cfg: cfg, rec: rec, r: r,
		rows:    newKeyGen(cfg.Distribution, cfg.rows(), cfg.ZipfS, r, seq),
		parts:   newKeyGen(cfg.Distribution, cfg.Partitions, cfg.ZipfS, r, seq),
		value:   make([]byte, cfg.RowSize),
		insert:  sess.Query(s.insert.text),
		read:    sess.Query(s.read.text),
		scan:    sess.Query(s.scan.text),
		counter: sess.Query(s.counter.text),
	}
	// Random bytes, so that compression does not flatter the transfer.
	for i := range w.value {
		w.value[i] = byte(r.Uint32())
	}
	return w
}

// queries returns the queries of the workload.
func (w *worker) queries() []*gocql.Query {
	switch w.cfg.Workload {
	case Write:
		return []*gocql.Query{w.insert}
	case Read:
		return []*gocql.Query{w.read}
	case Mixed:
		return []*gocql.Query{w.insert, w.read}
	case Scan:
		return []*gocql.Query{w.scan}
	default:
		return []*gocql.Query{w.counter}
	}
}

// op runs one operation of the workload, due at start: its latency counts
// from then.
func (w *worker) op(start time.Time) {
	switch w.cfg.Workload {
	case Write:
		w.write(start)
	case Read:
		w.get(start)
	case Mixed:
		if w.r.Float64() < w.cfg.ReadRatio {
			w.get(start)
		} else {
			w.write(start)
		}
	case Scan:
		w.scanPartition(start)
	case Counter:
		w.increment(start)
	}
}

// row returns the partition and clustering keys of the next row.
func (w *worker) row() (pk, ck int64) {
	n := w.rows.next()
	cr := int64(w.cfg.ClusteringRows)
	return n / cr, n % cr
}

func (w *worker) write(start time.Time) {
	pk, ck := w.row()
	err := w.insert.Bind(pk, ck, w.value).Exec()
	w.rec.record(opWrite, time.Since(start), err, 0)
}

func (w *worker) get(start time.Time) {
	pk, ck := w.row()
	var v []byte
	err := w.read.Bind(pk, ck).Scan(&v)
	d := time.Since(start)
	rows := 1
	if errors.Is(err, gocql.ErrNotFound) {
		rows, err = 0, nil
	}
	w.rec.record(opRead, d, err, rows)
}

func (w *worker) scanPartition(start time.Time) {
	pk := w.parts.next()
	var (
		ck   int64
		v    []byte
		rows int
	)
	it := w.scan.Bind(pk).Iter()
	for it.Scan(&ck, &v) {
		rows++
	}
	err := it.Close()
	w.rec.record(opScan, time.Since(start), err, rows)
}

func (w *worker) increment(start time.Time) {
	pk, ck := w.row()
	err := w.counter.Bind(pk, ck).Exec()
	w.rec.record(opCounter, time.Since(start), err, 0)
}

// schedule paces a run at a fixed rate: operation i is due at start +
// i*interval, whenever a worker gets to it. Latency counts from when an
// operation was due, so that a server falling behind is charged for the
// queue it causes, as a client sending at that rate would see it, rather
// than the workers politely waiting for it (coordinated omission).
type schedule struct {
	start    time.Time
	interval float64 // nanoseconds
	next     atomic.Int64
}

// wait waits until the next operation is due and returns when that was, or
// false if ctx ended first.
func (s *schedule) wait(ctx context.Context) (time.Time, bool) {
	due := s.start.Add(time.Duration(float64(s.next.Add(1)-1) * s.interval))
	d := time.Until(due)
	if d <= 0 {
		return due, ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return due, true
	case <-ctx.Done():
		return due, false
	}
}
