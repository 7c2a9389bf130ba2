package compactor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

// fleet is a manifest over an embedded NATS, a file bucket and the work
// queue, as compactor processes share them.
type fleet struct {
	t     *testing.T
	ctx   context.Context
	m     *manifest.Manifest
	store objectstore.Store
	q     *Queue
	reg   *prometheus.Registry
	mets  *Metrics
}

func newFleet(t *testing.T, ranges int, ackWait time.Duration) *fleet {
	t.Helper()
	ctx := context.Background()
	js, _ := manifesttest.JetStream(t)
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Open(ctx, js, store, "c1", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, ranges); err != nil {
		t.Fatal(err)
	}
	q, err := OpenQueue(ctx, js, "c1", QueueOptions{AckWait: ackWait})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := RegisterQueueMetrics(reg, q); err != nil {
		t.Fatal(err)
	}
	return &fleet{t: t, ctx: ctx, m: m, store: store, q: q, reg: reg, mets: NewMetrics(reg)}
}

func (f *fleet) worker(store objectstore.Store) *Worker {
	f.t.Helper()
	if store == nil {
		store = f.store
	}
	w, err := NewWorker(f.q, f.m, WorkerOptions{
		Store: store, Metrics: f.mets, Poll: 50 * time.Millisecond,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Run: Options{Writer: sstable.WriterOptions{BlockSize: 1 << 10}},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return w
}

// flushes writes n random L0 SSTables of range r, each within the range's
// tokens, commits them and returns them with their entries merged.
func (f *fleet) flushes(seed uint64, table uuid.UUID, r, n int) ([]manifest.SSTable, []entry) {
	f.t.Helper()
	rc, err := f.m.RangeCount(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	lo, hi := manifest.RangeBounds(r, rc)
	g := newGen(seed)
	var ssts []manifest.SSTable
	var tables [][]entry
	for i := range n {
		es := slices.DeleteFunc(g.table(60), func(e entry) bool {
			tok, err := keys.Token(e.key)
			if err != nil {
				f.t.Fatal(err)
			}
			return tok < lo || tok > hi
		})
		es = append(es, rangeEntries(f.t, g, lo, hi, seed, i)...)
		es = mergeEntries(f.t, es)
		sst := writeTable(f.t, f.store, fmt.Sprintf("flush/%s/%d/%d-%d.sst", table, r, seed, i), es, sstable.WriterOptions{BlockSize: 1 << 10})
		sst.MinToken = mustToken(f.t, sst.FirstKey)
		sst.MaxToken = mustToken(f.t, sst.LastKey)
		sst.Covers = []manifest.LogPosition{{Node: "n1", Shard: r, Segment: uint64(seed), Offset: int64(i), Parts: 1}}
		if _, err := f.m.CommitSSTables(f.ctx, manifest.Commit{Table: table, Range: r, Add: []manifest.SSTable{sst}}); err != nil {
			f.t.Fatal(err)
		}
		ssts = append(ssts, sst)
		tables = append(tables, es)
	}
	return ssts, mergeEntries(f.t, tables...)
}

// rangeEntries returns rows of partitions whose tokens lie in [lo, hi],
// so that every range has data whatever the generator's tokens.
func rangeEntries(t *testing.T, g *gen, lo, hi int64, seed uint64, i int) []entry {
	var es []entry
	for p := range 4 {
		tok := lo + (hi-lo)/8*int64(p+1)
		prefix := keys.AppendPartitionPrefix(nil, tok, fmt.Appendf(nil, "r%d-%d", seed, p))
		for ck := range 5 {
			r := g.row()
			es = append(es, entry{rowKey(prefix, int64(ck+i)), model.AppendRow(nil, &r)})
		}
	}
	return mergeEntries(t, es)
}

func mustToken(t testing.TB, key []byte) int64 {
	t.Helper()
	tok, err := keys.Token(key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (f *fleet) live(table uuid.UUID, r int) []manifest.SSTable {
	f.t.Helper()
	ts, err := f.m.SSTablesInRange(f.ctx, table, r)
	if err != nil {
		f.t.Fatal(err)
	}
	return ts
}

// garbage returns the garbage of table's range r by key.
func (f *fleet) garbage(table uuid.UUID, r int) map[string]manifest.Garbage {
	f.t.Helper()
	gs, err := f.m.Garbage(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]manifest.Garbage{}
	for _, g := range gs {
		if g.Table == table && g.Range == r {
			if _, dup := out[g.Key]; dup {
				f.t.Fatalf("%s listed twice as garbage", g.Key)
			}
			out[g.Key] = g.Garbage
		}
	}
	return out
}

func (f *fleet) queued() QueueStats {
	f.t.Helper()
	s, err := f.q.Stats(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// checkCompacted checks that table's range r holds exactly the outputs of
// one committed attempt, which read as want, that every input is on the
// garbage list once, as removed, and every other object of the job's
// attempts as discarded.
func (f *fleet) checkCompacted(table uuid.UUID, r int, inputs []manifest.SSTable, want []entry) {
	f.t.Helper()
	live := f.live(table, r)
	if len(live) == 0 {
		f.t.Fatal("no live sstables")
	}
	attempt := ""
	for _, s := range live {
		if slices.ContainsFunc(inputs, func(in manifest.SSTable) bool { return in.Key == s.Key }) {
			f.t.Fatalf("input %s still live", s.Key)
		}
		if s.Level != 1 {
			f.t.Fatalf("output %s at level %d", s.Key, s.Level)
		}
		dir := s.Key[:strings.LastIndexByte(s.Key, '/')]
		if attempt != "" && dir != attempt {
			f.t.Fatalf("outputs of two attempts live: %s and %s", attempt, dir)
		}
		attempt = dir
	}
	// Expiry is judged at the worker's clock.
	now := time.Now().Unix() + 1
	if got, w := view(f.t, readTables(f.t, f.store, live), now), view(f.t, want, now); got != w {
		f.t.Fatalf("outputs read\n%s\nwant\n%s", got, w)
	}
	gs := f.garbage(table, r)
	for _, in := range inputs {
		if g, ok := gs[in.Key]; !ok || g.Reason != manifest.ReasonRemoved {
			f.t.Fatalf("input %s: garbage %+v, %v", in.Key, g, ok)
		}
	}
	job := JobID(Plan{Table: table, Range: r, Inputs: inputs, OutputLevel: 1})
	objs, err := leftovers(f.ctx, f.store, "compaction", &QueuedJob{ID: job, Table: table}, "")
	if err != nil {
		f.t.Fatal(err)
	}
	for _, k := range objs {
		if strings.HasPrefix(k, attempt+"/") {
			continue
		}
		if g, ok := gs[k]; !ok || g.Reason != manifest.ReasonDiscarded {
			f.t.Fatalf("object %s of a failed attempt: garbage %+v, %v", k, g, ok)
		}
	}
}

func plan(table uuid.UUID, r int, inputs []manifest.SSTable) Plan {
	return Plan{Table: table, Range: r, Inputs: inputs, OutputLevel: 1}
}

// TestWorkerCommitsJob queues a job twice (one copy is kept), runs it and
// finds the inputs replaced by the outputs, which read the same, the
// inputs on the garbage list and the queue empty.
func TestWorkerCommitsJob(t *testing.T) {
	f := newFleet(t, 1, 5*time.Second)
	table := uuid.New()
	inputs, want := f.flushes(1, table, 0, 4)
	p := plan(table, 0, inputs)
	for range 2 {
		if err := f.q.Submit(f.ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	s := f.queued()
	if s.Jobs != 1 || s.Bytes != p.Bytes() || s.Oldest.IsZero() {
		t.Fatalf("queue after two submits of one plan: %+v", s)
	}
	running, err := f.q.Running(f.ctx)
	if err != nil || len(running) != 1 || JobID(running[0]) != JobID(p) {
		t.Fatalf("Running: %+v, %v", running, err)
	}
	if got := value(collectorGauge(t, f.reg, "sediment_compaction_queued_jobs")); got != 1 {
		t.Fatalf("queued_jobs %v", got)
	}
	w := f.worker(nil)
	if ok, err := w.RunOne(f.ctx, time.Second); !ok || err != nil {
		t.Fatalf("RunOne: %v, %v", ok, err)
	}
	f.checkCompacted(table, 0, inputs, want)
	if s := f.queued(); s.Jobs != 0 {
		t.Fatalf("queue after the commit: %+v", s)
	}
	if ok, err := w.RunOne(f.ctx, 100*time.Millisecond); ok || err != nil {
		t.Fatalf("RunOne on an empty queue: %v, %v", ok, err)
	}
	if got := value(f.mets.committed); got != 1 {
		t.Fatalf("committed %v", got)
	}
	if got := value(f.mets.read); got != float64(p.Bytes()) {
		t.Fatalf("read %v, want %d", got, p.Bytes())
	}
	if value(f.mets.written) <= 0 || value(f.mets.running) != 0 {
		t.Fatal("written or running figures wrong")
	}
	if _, err := f.m.Lease(f.ctx, JobLeasePrefix+JobID(p)); !errors.Is(err, manifest.ErrNotFound) {
		t.Fatalf("job lease left behind: %v", err)
	}
}

// value returns the value of a one-metric counter or gauge.
func value(c prometheus.Collector) float64 {
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		panic(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// collectorGauge returns the gauge name as a scrape of reg shows it.
func collectorGauge(t *testing.T, reg *prometheus.Registry, name string) prometheus.Gauge {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
			g.Set(mf.GetMetric()[0].GetGauge().GetValue())
			return g
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// killingStore cancels a worker's context at its first ranged read, as a
// worker dying in the middle of a merge.
type killingStore struct {
	objectstore.Store
	kill context.CancelFunc
	once sync.Once
}

func (s *killingStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if strings.HasPrefix(key, "flush/") {
		s.once.Do(s.kill)
		return nil, context.Canceled
	}
	return s.Store.GetRange(ctx, key, off, length)
}

// TestWorkerKilled kills a worker during the merge and one after it, before
// the commit: neither acks, the job is delivered again after the ack wait
// and completed by another worker, and the dead attempts' outputs end on
// the garbage list.
func TestWorkerKilled(t *testing.T) {
	for _, when := range []string{"merge", "commit"} {
		t.Run(when, func(t *testing.T) {
			f := newFleet(t, 1, time.Second)
			table := uuid.New()
			inputs, want := f.flushes(2, table, 0, 3)
			if err := f.q.Submit(f.ctx, plan(table, 0, inputs)); err != nil {
				t.Fatal(err)
			}
			ctx, kill := context.WithCancel(f.ctx)
			var dead *Worker
			if when == "merge" {
				dead = f.worker(&killingStore{Store: f.store, kill: kill})
			} else {
				dead = f.worker(nil)
				dead.beforeCommit = func(context.Context, string) { kill() }
			}
			if ok, err := dead.RunOne(ctx, time.Second); !ok || err != nil {
				t.Fatalf("dead worker: %v, %v", ok, err)
			}
			if len(f.live(table, 0)) != len(inputs) {
				t.Fatal("the dead worker committed")
			}
			if s := f.queued(); s.Jobs != 1 {
				t.Fatalf("queue after the death: %+v", s)
			}
			w := f.worker(nil)
			deadline := time.Now().Add(20 * time.Second)
			for value(f.mets.committed) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("job not redelivered and committed")
				}
				if _, err := w.RunOne(f.ctx, 200*time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			f.checkCompacted(table, 0, inputs, want)
			if s := f.queued(); s.Jobs != 0 {
				t.Fatalf("queue after the commit: %+v", s)
			}
			if when == "commit" && value(f.mets.discarded) == 0 {
				t.Fatal("the dead attempt's outputs were not discarded")
			}
		})
	}
}

// TestWorkerInputRemoved truncates the table while its job runs: the commit
// fails, the outputs go on the garbage list and the job is acked.
func TestWorkerInputRemoved(t *testing.T) {
	f := newFleet(t, 1, 5*time.Second)
	table := uuid.New()
	inputs, _ := f.flushes(3, table, 0, 3)
	if err := f.q.Submit(f.ctx, plan(table, 0, inputs)); err != nil {
		t.Fatal(err)
	}
	w := f.worker(nil)
	var attempt string
	w.beforeCommit = func(ctx context.Context, a string) {
		attempt = a
		if _, err := f.m.DropSSTables(ctx, table); err != nil {
			t.Error(err)
		}
	}
	if ok, err := w.RunOne(f.ctx, time.Second); !ok || err != nil {
		t.Fatalf("RunOne: %v, %v", ok, err)
	}
	if live := f.live(table, 0); len(live) != 0 {
		t.Fatalf("live after the truncation: %+v", live)
	}
	gs := f.garbage(table, 0)
	outputs := 0
	for k, g := range gs {
		if strings.Contains(k, attempt+"/") {
			outputs++
			if g.Reason != manifest.ReasonDiscarded {
				t.Fatalf("output %s: %+v", k, g)
			}
		} else if g.Reason != manifest.ReasonTruncated {
			t.Fatalf("input %s: %+v", k, g)
		}
	}
	if outputs == 0 || len(gs) != outputs+len(inputs) {
		t.Fatalf("garbage %+v", gs)
	}
	if s := f.queued(); s.Jobs != 0 {
		t.Fatalf("queue: %+v", s)
	}
	if value(f.mets.obsolete) != 1 || value(f.mets.committed) != 0 {
		t.Fatal("job not counted obsolete")
	}
}

// TestWorkersDrainQueue runs three workers side by side on jobs of several
// ranges and tables: every job is committed once.
func TestWorkersDrainQueue(t *testing.T) {
	const ranges, tables = 4, 2
	f := newFleet(t, ranges, 5*time.Second)
	type job struct {
		table  uuid.UUID
		r      int
		inputs []manifest.SSTable
		want   []entry
	}
	var jobs []job
	for i := range tables {
		table := uuid.New()
		for r := range ranges {
			inputs, want := f.flushes(uint64(10+i*ranges+r), table, r, 3)
			jobs = append(jobs, job{table, r, inputs, want})
			if err := f.q.Submit(f.ctx, plan(table, r, inputs)); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctx, cancel := context.WithCancel(f.ctx)
	var wg sync.WaitGroup
	var ran [3]atomic.Int64
	for i := range ran {
		w := f.worker(nil)
		w.beforeCommit = func(context.Context, string) { ran[i].Add(1) }
		wg.Go(func() { _ = w.Run(ctx) })
	}
	deadline := time.Now().Add(30 * time.Second)
	for value(f.mets.committed) < float64(len(jobs)) {
		if time.Now().After(deadline) {
			t.Fatalf("%v of %d jobs committed", value(f.mets.committed), len(jobs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	testwait.Wait(t, "the workers to stop", &wg)
	total := int64(0)
	for i := range ran {
		total += ran[i].Load()
	}
	if total != int64(len(jobs)) || value(f.mets.failed) != 0 || value(f.mets.obsolete) != 0 {
		t.Fatalf("%d merges for %d jobs, %v failed, %v obsolete", total, len(jobs), value(f.mets.failed), value(f.mets.obsolete))
	}
	for _, j := range jobs {
		f.checkCompacted(j.table, j.r, j.inputs, j.want)
	}
	if s := f.queued(); s.Jobs != 0 {
		t.Fatalf("queue: %+v", s)
	}
}

// TestStaleWorker makes a worker miss its heartbeats until its job is
// delivered to another: if the other holds the job's lease when the stale
// one would commit, the lease check rejects it; if the other committed
// already, the check of the inputs does. Either way one attempt commits,
// and the stale one's outputs end on the garbage list.
func TestStaleWorker(t *testing.T) {
	for _, other := range []string{"running", "committed"} {
		t.Run(other, func(t *testing.T) {
			f := newFleet(t, 1, time.Second)
			table := uuid.New()
			inputs, want := f.flushes(4, table, 0, 3)
			if err := f.q.Submit(f.ctx, plan(table, 0, inputs)); err != nil {
				t.Fatal(err)
			}
			lease := JobLeasePrefix + JobID(plan(table, 0, inputs))
			stale := f.worker(nil)
			stale.beat = time.Hour // misses its heartbeats
			staleAt := make(chan struct{})
			resume := make(chan struct{})
			stale.beforeCommit = func(context.Context, string) {
				close(staleAt)
				<-resume
			}
			staleDone := make(chan error, 1)
			go func() {
				_, err := stale.RunOne(f.ctx, time.Second)
				staleDone <- err
			}()
			<-staleAt

			fresh := f.worker(nil)
			freshAt := make(chan string, 1)
			proceed := make(chan struct{})
			fresh.beforeCommit = func(_ context.Context, a string) {
				freshAt <- a
				<-proceed
			}
			freshDone := make(chan error, 1)
			go func() {
				deadline := time.Now().Add(20 * time.Second)
				for time.Now().Before(deadline) {
					ok, err := fresh.RunOne(f.ctx, 200*time.Millisecond)
					if err != nil || (ok && value(f.mets.committed) > 0) {
						freshDone <- err
						return
					}
				}
				freshDone <- errors.New("no redelivery")
			}()
			var a string
			select {
			case a = <-freshAt:
			case err := <-freshDone:
				t.Fatalf("fresh worker: %v", err)
			}
			if l, err := f.m.Lease(f.ctx, lease); err != nil || l.Holder != a {
				t.Fatalf("lease %+v, %v; want held by %s", l, err, a)
			}
			if other == "running" {
				close(resume)
				if err := <-staleDone; err != nil {
					t.Fatal(err)
				}
				if value(f.mets.committed) != 0 || len(f.live(table, 0)) != len(inputs) {
					t.Fatal("the stale worker committed")
				}
				close(proceed)
				if err := <-freshDone; err != nil {
					t.Fatal(err)
				}
			} else {
				close(proceed)
				if err := <-freshDone; err != nil {
					t.Fatal(err)
				}
				close(resume)
				if err := <-staleDone; err != nil {
					t.Fatal(err)
				}
			}
			if value(f.mets.committed) != 1 || value(f.mets.obsolete) != 1 {
				t.Fatalf("committed %v, obsolete %v", value(f.mets.committed), value(f.mets.obsolete))
			}
			f.checkCompacted(table, 0, inputs, want)
			if s := f.queued(); s.Jobs != 0 {
				t.Fatalf("queue: %+v", s)
			}
		})
	}
}

// TestWorkerPurgeBounds checks the purge bounds an attempt runs with: none
// without the oldest unflushed write or the table's gc_grace_seconds; with
// both, GCBefore is now minus the grace and OldestOutside the smaller of
// the unflushed write and the SSTables outside the job.
func TestWorkerPurgeBounds(t *testing.T) {
	f := newFleet(t, 1, 5*time.Second)
	table := uuid.New()
	inputs, _ := f.flushes(6, table, 0, 3)
	j := &QueuedJob{ID: JobID(plan(table, 0, inputs[:2])), Table: table, Range: 0, Inputs: inputs[:2], OutputLevel: 1, GCGraceSeconds: 100}
	now := time.Unix(1_000_000, 0)
	w := f.worker(nil)
	w.opts.Now = func() time.Time { return now }
	job, err := w.job(f.ctx, j, "a")
	if err != nil || job.GCBefore != 0 || job.Now != now.Unix() || job.ID != "a" {
		t.Fatalf("without Unflushed: %+v, %v", job, err)
	}
	for _, unflushed := range []int64{math.MaxInt64, inputs[2].MinTimestamp - 1} {
		w.opts.Unflushed = func(_ context.Context, tb uuid.UUID, r int) (int64, error) {
			if tb != table || r != 0 {
				t.Errorf("Unflushed(%s, %d)", tb, r)
			}
			return unflushed, nil
		}
		job, err = w.job(f.ctx, j, "a")
		if err != nil || job.GCBefore != now.Unix()-100 || job.OldestOutside != min(unflushed, inputs[2].MinTimestamp) {
			t.Fatalf("unflushed %d: %+v, %v (outside %d)", unflushed, job, err, inputs[2].MinTimestamp)
		}
	}
	j.GCGraceSeconds = -1
	if job, err := w.job(f.ctx, j, "a"); err != nil || job.GCBefore != 0 {
		t.Fatalf("unknown grace: %+v, %v", job, err)
	}
	w.opts.Unflushed = func(context.Context, uuid.UUID, int) (int64, error) { return 0, errors.New("down") }
	j.GCGraceSeconds = 100
	if _, err := w.job(f.ctx, j, "a"); err == nil {
		t.Fatal("an Unflushed failure is ignored")
	}
}

// archiveFailing fails the manifest's archive writes (PutIf) while on.
type archiveFailing struct {
	objectstore.Store
	on atomic.Bool
}

func (s *archiveFailing) PutIf(ctx context.Context, key string, data []byte, cond objectstore.Condition) (string, error) {
	if s.on.Swap(false) {
		return "", errors.New("archive down")
	}
	return s.Store.PutIf(ctx, key, data, cond)
}

// TestWorkerCommitNotArchived fails the archive copy of the commit once:
// the worker commits again, which writes it, and the job completes.
func TestWorkerCommitNotArchived(t *testing.T) {
	f := newFleet(t, 1, 5*time.Second)
	store := &archiveFailing{Store: f.store}
	var err error
	if f.m, err = manifest.Open(f.ctx, f.q.js, store, "c1", manifest.Options{}); err != nil {
		t.Fatal(err)
	}
	table := uuid.New()
	inputs, want := f.flushes(7, table, 0, 3)
	if err := f.q.Submit(f.ctx, plan(table, 0, inputs)); err != nil {
		t.Fatal(err)
	}
	w := f.worker(nil)
	w.beforeCommit = func(context.Context, string) { store.on.Store(true) }
	if ok, err := w.RunOne(f.ctx, time.Second); !ok || err != nil {
		t.Fatalf("RunOne: %v, %v", ok, err)
	}
	if store.on.Load() {
		t.Fatal("the commit wrote no archive copy")
	}
	if value(f.mets.committed) != 1 {
		t.Fatal("job not committed")
	}
	f.checkCompacted(table, 0, inputs, want)
}

// TestWorkerCommitsAllDeadJob runs a job whose data is all dead: it
// commits with no output, its inputs go on the garbage list, and the ingest
// node's view of its flushes (Flushed, Partial) is the same before and
// after, thanks to the range's watermark. A job whose inputs name a flush
// past the shard's newest complete one waits until that flush is complete.
func TestWorkerCommitsAllDeadJob(t *testing.T) {
	f := newFleet(t, 2, 5*time.Second)
	ctx := f.ctx
	if err := f.m.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, true); err != nil {
		t.Fatal(err)
	}
	tbl, err := f.m.CreateTable(ctx, manifest.TableSpec{
		Keyspace: "ks", Name: "t",
		Columns:      []manifest.ColumnSpec{{Name: "pk", Type: "text"}, {Name: "ck", Type: "bigint"}, {Name: "v", Type: "text"}},
		PartitionKey: []string{"pk"},
		Clustering:   []manifest.ClusteringSpec{{Name: "ck"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	table := tbl.ID
	at := func(off int64, parts int) []manifest.LogPosition {
		return []manifest.LogPosition{{Node: "n1", Shard: 0, Segment: 1, Offset: off, Parts: parts}}
	}
	// Range 0: a row and, in a later flush, the deletion of its
	// partition, long past gc_grace_seconds.
	p := partitionPrefix(1)
	dead := func(name string, covers, delCovers []manifest.LogPosition) []manifest.SSTable {
		rows := writeTable(t, f.store, "flush/"+name+"-rows.sst", []entry{rowEntry(p, 1, model.Row{Cells: []model.Cell{cell(1, 3, "a")}})}, sstable.WriterOptions{})
		del := writeTable(t, f.store, "flush/"+name+"-del.sst", []entry{headerEntry(p, model.Header{Deletion: model.Deletion{MarkedForDeleteAt: 4, LocalDeletionTime: 2}})}, sstable.WriterOptions{})
		rows.Covers, del.Covers = covers, delCovers
		out := []manifest.SSTable{rows, del}
		for i := range out {
			out[i].MinToken, out[i].MaxToken = mustToken(t, out[i].FirstKey), mustToken(t, out[i].LastKey)
		}
		return out
	}
	commit := func(r int, ssts ...manifest.SSTable) {
		t.Helper()
		if _, err := f.m.CommitSSTables(ctx, manifest.Commit{Table: table, Range: r, Add: ssts}); err != nil {
			t.Fatal(err)
		}
	}
	// Range 1 holds the flushes' other parts; no object is read there.
	part := func(key string, covers []manifest.LogPosition) manifest.SSTable {
		return manifest.SSTable{Key: key, Size: 1, MinToken: 1 << 62, MaxToken: 1 << 62, FirstKey: []byte("a"), LastKey: []byte("b"), Covers: covers}
	}
	inputs := dead("a", at(10, 2), at(20, 2))
	commit(0, inputs...)
	commit(1, part("r1-10", at(10, 2)), part("r1-20", at(20, 2)), part("r1-30", at(30, 2)))

	mc := ingest.NewManifestCommitter(f.m, f.store, "n1")
	state := func() string {
		t.Helper()
		done, err := mc.Flushed(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		partial, err := mc.Partial(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(done, partial)
	}
	if got := state(); got != "1:20 [1:30]" {
		t.Fatalf("before: %s", got)
	}

	f.q.opts.GCGrace = func(uuid.UUID) (int32, bool) { return 0, true }
	w := f.worker(nil)
	w.opts.Unflushed = func(context.Context, uuid.UUID, int) (int64, error) { return math.MaxInt64, nil }
	if err := f.q.Submit(ctx, plan(table, 0, inputs)); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.RunOne(ctx, time.Second); !ok || err != nil {
		t.Fatalf("RunOne: %v, %v", ok, err)
	}
	if live := f.live(table, 0); len(live) != 0 {
		t.Fatalf("live after an all-dead job: %+v", live)
	}
	gs := f.garbage(table, 0)
	for _, in := range inputs {
		if g, ok := gs[in.Key]; !ok || g.Reason != manifest.ReasonRemoved {
			t.Fatalf("input %s: garbage %+v, %v", in.Key, g, ok)
		}
	}
	if value(f.mets.committed) != 1 || value(f.mets.obsolete) != 0 || f.queued().Jobs != 0 {
		t.Fatalf("committed %v, obsolete %v, queued %+v", value(f.mets.committed), value(f.mets.obsolete), f.queued())
	}
	if got := state(); got != "1:20 [1:30]" {
		t.Fatalf("after: %s", got)
	}

	// Another all-dead pair whose rows came in a flush (1:40) that is
	// still partial: not committed, inputs kept, nothing changed.
	more := dead("b", at(40, 2), nil)
	commit(0, more...)
	if got := state(); got != "1:20 [1:30 1:40]" {
		t.Fatalf("with a partial flush: %s", got)
	}
	j := &QueuedJob{ID: JobID(plan(table, 0, more)), Table: table, Range: 0, Inputs: more, OutputLevel: 1}
	if err := commitJob(ctx, f.m, j, nil); !errors.Is(err, errKeepInputs) {
		t.Fatalf("commit past a partial flush: %v", err)
	}
	if live := f.live(table, 0); len(live) != 2 {
		t.Fatalf("live after a refused commit: %+v", live)
	}
	// Once the flush's other part is in, it is complete and the job
	// commits; a retry of the commit finds it obsolete.
	commit(1, part("r1-40", at(40, 2)))
	if got := state(); got != "1:40 []" {
		t.Fatalf("with the flush complete: %s", got)
	}
	if err := commitJob(ctx, f.m, j, nil); err != nil {
		t.Fatal(err)
	}
	if live := f.live(table, 0); len(live) != 0 {
		t.Fatalf("live after an all-dead job: %+v", live)
	}
	if got := state(); got != "1:40 []" {
		t.Fatalf("after the second job: %s", got)
	}
	if err := commitJob(ctx, f.m, j, nil); !errors.Is(err, errObsolete) {
		t.Fatalf("retry: %v", err)
	}
}

// TestWorkerTooOldToCommit checks that an attempt running past
// MaxCommitAge does not commit, discards its outputs, and that the retry
// commits.
func TestWorkerTooOldToCommit(t *testing.T) {
	f := newFleet(t, 1, 5*time.Second)
	table := uuid.New()
	inputs, want := f.flushes(7, table, 0, 3)
	if err := f.q.Submit(f.ctx, plan(table, 0, inputs)); err != nil {
		t.Fatal(err)
	}
	w := f.worker(nil)
	w.opts.MaxCommitAge = 50 * time.Millisecond
	var first string
	w.beforeCommit = func(_ context.Context, a string) {
		if first == "" {
			first = a
			time.Sleep(2 * w.opts.MaxCommitAge)
		}
	}
	if ok, err := w.RunOne(f.ctx, time.Second); !ok || !errors.Is(err, errTooOld) {
		t.Fatalf("first RunOne: %v, %v; want %v", ok, err, errTooOld)
	}
	discarded := 0
	for k, g := range f.garbage(table, 0) {
		if !strings.Contains(k, first+"/") || g.Reason != manifest.ReasonDiscarded {
			t.Fatalf("garbage after the stale attempt: %s %+v", k, g)
		}
		discarded++
	}
	if discarded == 0 {
		t.Fatal("the stale attempt's outputs were not discarded")
	}
	deadline := time.Now().Add(10 * time.Second)
	for value(f.mets.committed) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the retry did not commit")
		}
		if _, err := w.RunOne(f.ctx, time.Second); err != nil {
			t.Fatalf("retry: %v", err)
		}
	}
	f.checkCompacted(table, 0, inputs, want)
	if value(f.mets.failed) != 1 {
		t.Fatalf("failed %v, want 1", value(f.mets.failed))
	}
}
