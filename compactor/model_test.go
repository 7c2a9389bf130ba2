package compactor

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// modelSeed, if set, replays a failed run of TestCompactionAgainstModel.
const modelSeed = 0

// modelEnv is one ingest node writing a table with gc_grace_seconds = 0
// (so that compactions purge tombstones) and a fleet of compaction
// workers, reading through engine.Local.
type modelEnv struct {
	t       *testing.T
	ctx     context.Context
	m       *manifest.Manifest
	view    *manifest.View
	store   objectstore.Store
	node    *ingest.Node
	e       *engine.Local
	table   uuid.UUID
	q       *Queue
	planner *Planner
	mets    *Metrics

	// flushes reads what the node's restart would see of its flushes;
	// flushed is the newest complete one seen so far, emptied counts the
	// ranges compaction left without an SSTable.
	flushes *ingest.ManifestCommitter
	flushed commitlog.Position
	emptied int
}

const modelRanges = 2

func newModelEnv(t *testing.T) *modelEnv {
	t.Helper()
	ctx := context.Background()
	opts := manifest.DefaultTableOptions()
	opts.GCGraceSeconds = 0
	ne := newNodeEnv(t, modelRanges, &opts)
	js, store, m, view, node, e := ne.js, ne.store, ne.m, ne.view, ne.node, ne.e
	q, err := OpenQueue(ctx, js, "c1", QueueOptions{AckWait: time.Second,
		GCGrace: func(uuid.UUID) (int32, bool) { return opts.GCGraceSeconds, true }})
	if err != nil {
		t.Fatal(err)
	}
	planner, err := NewPlanner(view, PlannerConfig{Interval: time.Second, JobTimeout: time.Minute},
		PlannerOptions{Holder: "c-1", Submit: q.Submit, Running: q.Running})
	if err != nil {
		t.Fatal(err)
	}
	return &modelEnv{t: t, ctx: ctx, m: m, view: view, store: store, node: node, e: e, table: ne.table,
		q: q, planner: planner, mets: NewMetrics(nil), flushes: ingest.NewManifestCommitter(m, store, "n1")}
}

// checkFlushes checks that compactions never make the node's flushes look
// less complete: the newest complete one never goes back and none is
// partial (the node never crashes here), also when a job's data was all
// dead and it committed no output.
func (env *modelEnv) checkFlushes(op int) {
	t := env.t
	t.Helper()
	done, err := env.flushes.Flushed(env.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	partial, err := env.flushes.Partial(env.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if done.Compare(env.flushed) < 0 || len(partial) > 0 {
		t.Fatalf("op %d: flushed through %v (was %v), partial %v", op, done, env.flushed, partial)
	}
	env.flushed = done
}

// worker returns a worker of the fleet reading and writing through store
// (the bucket if nil), whose purge bound includes the node's memtables.
func (env *modelEnv) worker(store objectstore.Store) *Worker {
	env.t.Helper()
	if store == nil {
		store = env.store
	}
	w, err := NewWorker(env.q, env.m, WorkerOptions{
		Store: store, Metrics: env.mets, Poll: 50 * time.Millisecond,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Run: Options{Writer: sstable.WriterOptions{BlockSize: 512}},
		Unflushed: func(context.Context, uuid.UUID, int) (int64, error) {
			if ts, ok := env.node.Unflushed()[storage.TableIDOf(env.table)]; ok {
				return ts, nil
			}
			return math.MaxInt64, nil
		},
	})
	if err != nil {
		env.t.Fatal(err)
	}
	return w
}

// compact plans the strategy's jobs, or one job merging all of a random
// range's SSTables if the strategy has none, and runs them on three
// workers side by side until the queue is empty. With kill set, one of the
// workers dies during its merge, during an upload or just before its
// commit; its job is delivered again after the ack wait. It reports how
// many jobs it queued and whether a worker died.
func (env *modelEnv) compact(rng *rand.Rand, kill bool) (planned int, killed bool) {
	t := env.t
	t.Helper()
	n, err := env.planner.Tick(env.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		r := rng.IntN(modelRanges)
		in := env.view.SSTablesInRange(env.table, r)
		if len(in) < 2 {
			return 0, false
		}
		if err := env.q.Submit(env.ctx, Plan{Table: env.table, Range: r, Inputs: in, OutputLevel: 1}); err != nil {
			t.Fatal(err)
		}
		n = 1
	}
	before := map[int][]manifest.SSTable{}
	for r := range modelRanges {
		before[r] = env.view.SSTablesInRange(env.table, r)
	}
	ctx, stop := context.WithCancel(env.ctx)
	defer stop()
	var wg sync.WaitGroup
	var crash *crashStore
	for i := range 3 {
		wctx, die := context.WithCancel(ctx)
		defer die()
		w := env.worker(nil)
		if i == 0 && kill {
			when := []string{"merge", "upload", "commit"}[rng.IntN(3)]
			crash = &crashStore{Store: env.store, kill: die, when: when, n: 1 + rng.Int64N(3)}
			w = env.worker(crash)
			if when == "commit" {
				w.beforeCommit = func(context.Context, string) { crash.fire() }
			}
		}
		wg.Go(func() {
			for wctx.Err() == nil {
				if _, err := w.RunOne(wctx, 100*time.Millisecond); err != nil && wctx.Err() == nil {
					t.Logf("worker %d: %v", i, err)
				}
			}
		})
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := env.q.Stats(env.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Jobs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue not drained: %+v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()
	for r := range modelRanges {
		if len(env.view.SSTablesInRange(env.table, r)) == 0 && len(before[r]) > 0 {
			env.emptied++
		}
	}
	return n, crash != nil && crash.fired.Load()
}

// TestCompactionAgainstModel writes random inserts, TTL inserts, row,
// range and partition deletes through an ingest node, flushes at random
// and interleaves compactions run by a fleet of workers, some of them
// killed mid-job. Some writes are late: their timestamps are older than
// some written before them, as a client's may be, so that a memtable or an
// SSTable outside a job holds data older than tombstones it could purge. After every
// compaction, and at random in between, reads through engine.Local equal
// an in-memory model of the rows: no row is lost and none resurrected.
func TestCompactionAgainstModel(t *testing.T) {
	seed := uint64(modelSeed)
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (set modelSeed to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ops := 500
	if testing.Short() {
		ops = 150
	}
	env := newModelEnv(t)
	const parts, cks = 4, 8
	tables := map[string]*modelPartition{}
	for p := range parts {
		tables[modelPK(p)] = &modelPartition{rows: map[int64]modelCell{}, rowDel: map[int64]int64{}}
	}
	apply := func(op int, what string, entries ...engine.Entry) {
		t.Helper()
		if err := env.e.Apply(env.ctx, &engine.Mutation{Table: env.table, Entries: entries}); err != nil {
			t.Fatalf("op %d: %s: %v", op, what, err)
		}
	}
	var flushes, compactions, jobs, kills int
	// Timestamps are unique: in order, even ones count up from base; late
	// ones are odd and older than some written before them, yet newer than
	// the start of the last compaction. A write older than a tombstone a
	// compaction already purged would be resurrected by design (it came
	// later than gc_grace_seconds allows), so it is not written.
	base := time.Now().UnixMicro()
	floor, used := base, map[int64]bool{}
	for op := range ops {
		ts := base + 2*int64(op)
		if span := (ts - floor) / 2; span > 1 && rng.IntN(3) == 0 {
			late := floor + 2*rng.Int64N(span) + 1
			if !used[late] {
				used[late], ts = true, late
			}
		}
		now := time.Now().Unix()
		// Deletions happened a few seconds ago by the coordinator's clock,
		// so that with no grace compactions purge them from the start.
		deleted := now - 5
		pk := modelPK(rng.IntN(parts))
		mp := tables[pk]
		switch x := rng.IntN(100); {
		case x < 40:
			ck := rng.Int64N(cks)
			if ts%2 != 0 {
				// Aim most late inserts at rows deleted after them: the
				// deletion must shadow them however compactions go.
				if under := mp.deletedAfter(ts); len(under) > 0 && rng.IntN(4) != 0 {
					ck = under[rng.IntN(len(under))]
				}
			}
			v := fmt.Sprintf("v%d", op)
			apply(op, "insert", modelInsert(pk, ck, ts, v, 0, now))
			mp.insert(ck, ts, v)
		case x < 45:
			// A TTL that has long expired: the insert is a tombstone of
			// the row at ts, at compaction as at read.
			ck := rng.Int64N(cks)
			apply(op, "expired insert", modelInsert(pk, ck, ts, fmt.Sprintf("x%d", op), 1, now-100))
			mp.rowDel[ck] = max(mp.rowDel[ck], ts)
		case x < 50:
			ck := rng.Int64N(cks)
			v := fmt.Sprintf("t%d", op)
			apply(op, "ttl insert", modelInsert(pk, ck, ts, v, 3600, now))
			mp.insert(ck, ts, v)
		case x < 62:
			ck := rng.Int64N(cks)
			r := model.Row{Deletion: model.Deletion{MarkedForDeleteAt: ts, LocalDeletionTime: deleted}}
			apply(op, "delete row", engine.Entry{Key: modelRowKey(pk, ck), Value: model.AppendRow(nil, &r)})
			mp.rowDel[ck] = max(mp.rowDel[ck], ts)
		case x < 67:
			a := rng.Int64N(cks)
			b := a + rng.Int64N(cks-a)
			apply(op, "delete range", modelDeleteRange(t, pk, a, b, ts, deleted))
			for ck := a; ck <= b; ck++ {
				mp.rowDel[ck] = max(mp.rowDel[ck], ts)
			}
		case x < 69:
			h := model.Header{Deletion: model.Deletion{MarkedForDeleteAt: ts, LocalDeletionTime: deleted}}
			apply(op, "delete partition", engine.Entry{Key: modelHeaderKey(pk), Value: model.AppendHeader(nil, &h)})
			mp.del = max(mp.del, ts)
		case x < 77:
			flushNode(t, env.node, env.table)
			flushes++
		case x < 83:
			// Every write so far is at or before this op's in-order
			// timestamp (ts itself may be a late one, older than some).
			floor = base + 2*int64(op)
			n, killed := env.compact(rng, rng.IntN(3) == 0 && kills < 4)
			if n > 0 {
				compactions++
				jobs += n
			}
			if killed {
				kills++
			}
			env.checkAll(op, tables)
			env.checkFlushes(op)
		default:
			env.checkSlice(op, pk, mp.live())
		}
	}
	// Compact everything that is flushed, then compare every partition.
	flushNode(t, env.node, env.table)
	for r := range modelRanges {
		if in := env.view.SSTablesInRange(env.table, r); len(in) > 1 {
			if err := env.q.Submit(env.ctx, Plan{Table: env.table, Range: r, Inputs: in, OutputLevel: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	env.compact(rng, false)
	env.checkAll(ops, tables)
	env.checkFlushes(ops)
	if value(env.mets.committed) == 0 {
		t.Fatal("no compaction committed")
	}
	t.Logf("%d ops, %d flushes, %d compaction steps of %d jobs, %d workers killed; %v committed (%d emptied a range), %v obsolete, %v failed; %v bytes written",
		ops, flushes, compactions, jobs, kills, value(env.mets.committed), env.emptied, value(env.mets.obsolete), value(env.mets.failed), value(env.mets.written))
}

// modelPartition models a partition by timestamps, as Cassandra reconciles
// writes: a row reads as its newest insert unless a deletion at least as
// new covers it.
type modelPartition struct {
	rows   map[int64]modelCell
	rowDel map[int64]int64 // newest row, range or expiry deletion by ck
	del    int64           // newest partition deletion
}

type modelCell struct {
	ts int64
	v  string
}

func (p *modelPartition) insert(ck, ts int64, v string) {
	if c, ok := p.rows[ck]; !ok || ts > c.ts {
		p.rows[ck] = modelCell{ts, v}
	}
}

// deletedAfter returns the cks of rows deleted by a row, range or
// expiry deletion newer than ts, in order.
func (p *modelPartition) deletedAfter(ts int64) []int64 {
	var out []int64
	for ck, d := range p.rowDel {
		if d > ts {
			out = append(out, ck)
		}
	}
	slices.Sort(out)
	return out
}

// live returns the rows a read sees, ck → v.
func (p *modelPartition) live() map[int64]string {
	out := map[int64]string{}
	for ck, c := range p.rows {
		if c.ts > p.del && c.ts > p.rowDel[ck] {
			out[ck] = c.v
		}
	}
	return out
}

func modelPK(p int) string { return fmt.Sprintf("m%d", p) }

func modelRowKey(pk string, ck int64) []byte {
	return rowKey(keys.AppendPartitionPrefix(nil, token.Murmur3([]byte(pk)), []byte(pk)), ck)
}

func modelHeaderKey(pk string) []byte {
	return keys.HeaderKey(nil, token.Murmur3([]byte(pk)), []byte(pk))
}

func modelBound(pk string, ck int64, kind keys.BoundKind) []byte {
	prefix := keys.AppendPartitionPrefix(nil, token.Murmur3([]byte(pk)), []byte(pk))
	b, err := keys.AppendBound(nil, prefix, [][]byte{binary.BigEndian.AppendUint64(nil, uint64(ck))}, ckTypes, []bool{false}, kind)
	if err != nil {
		panic(err)
	}
	return b
}

// modelInsert is an INSERT of v at ts, written at now and expiring ttl
// seconds later if ttl > 0.
func modelInsert(pk string, ck, ts int64, v string, ttl int32, now int64) engine.Entry {
	r := model.Row{
		Liveness: model.Liveness{Present: true, Timestamp: ts},
		Cells:    []model.Cell{{Column: modelColV, Timestamp: ts, Value: []byte(v)}},
	}
	if ttl > 0 {
		r.Liveness.TTL, r.Liveness.Expires = ttl, now+int64(ttl)
		r.Cells[0].TTL, r.Cells[0].LocalDeletionTime = ttl, now+int64(ttl)
	}
	return engine.Entry{Key: modelRowKey(pk, ck), Value: model.AppendRow(nil, &r)}
}

const modelColV = 3

// modelDeleteRange deletes the rows with from <= ck <= to.
func modelDeleteRange(t *testing.T, pk string, from, to, ts, now int64) engine.Entry {
	start, err := engine.ClusteringOf(modelBound(pk, from, keys.Before))
	if err != nil {
		t.Fatal(err)
	}
	end, err := engine.ClusteringOf(modelBound(pk, to, keys.After))
	if err != nil {
		t.Fatal(err)
	}
	h := model.Header{RangeTombstones: []model.RangeTombstone{{
		Start: start, End: end, Deletion: model.Deletion{MarkedForDeleteAt: ts, LocalDeletionTime: now},
	}}}
	return engine.Entry{Key: modelHeaderKey(pk), Value: model.AppendHeader(nil, &h)}
}

// rowsOf returns the rows of a read partition as ck → v.
func (env *modelEnv) rowsOf(op int, p *engine.Partition) (cks []int64, got map[int64]string) {
	env.t.Helper()
	got = map[int64]string{}
	for _, r := range p.Rows {
		c, err := keys.DecodeClustering(r.Key, ckTypes, []bool{false})
		if err != nil {
			env.t.Fatalf("op %d: %v", op, err)
		}
		ck := int64(binary.BigEndian.Uint64(c[0]))
		v := ""
		for _, cell := range r.Row.Cells {
			if cell.Column == modelColV {
				v = string(cell.Value)
			}
		}
		cks = append(cks, ck)
		got[ck] = v
	}
	return cks, got
}

// checkSlice reads pk in full, forwards or backwards, and compares it with
// rows, its model.
func (env *modelEnv) checkSlice(op int, pk string, rows map[int64]string) {
	env.t.Helper()
	reverse := op%2 == 0
	p, err := env.e.Read(env.ctx, engine.Slice{Table: env.table, Key: []byte(pk), Reverse: reverse, Now: time.Now().Unix()})
	if err != nil {
		env.t.Fatalf("op %d: read %s: %v", op, pk, err)
	}
	cks, got := env.rowsOf(op, p)
	want := slices.Sorted(maps.Keys(rows))
	if reverse {
		slices.Reverse(want)
	}
	if !slices.Equal(cks, want) || !maps.Equal(got, rows) {
		env.t.Fatalf("op %d: read %s (reverse %v): %v %v, want %v %v", op, pk, reverse, cks, got, want, rows)
	}
}

// checkAll scans the whole ring and reads every partition: both equal the
// model.
func (env *modelEnv) checkAll(op int, tables map[string]*modelPartition) {
	env.t.Helper()
	page, err := env.e.Scan(env.ctx, engine.Scan{Table: env.table, First: math.MinInt64, Last: math.MaxInt64, Now: time.Now().Unix()})
	if err != nil {
		env.t.Fatalf("op %d: scan: %v", op, err)
	}
	if page.Next != nil {
		env.t.Fatalf("op %d: an unlimited scan returned a next page", op)
	}
	scanned := map[string]map[int64]string{}
	for i := range page.Partitions {
		p := &page.Partitions[i]
		_, got := env.rowsOf(op, p)
		if len(got) > 0 {
			scanned[string(p.Key)] = got
		}
	}
	for pk, mp := range tables {
		want := mp.live()
		if got := scanned[pk]; !maps.Equal(got, want) {
			env.t.Fatalf("op %d: scan of %s: %v, want %v", op, pk, got, want)
		}
		delete(scanned, pk)
		env.checkSlice(op, pk, want)
	}
	if len(scanned) > 0 {
		env.t.Fatalf("op %d: scan found unknown partitions %v", op, scanned)
	}
}
