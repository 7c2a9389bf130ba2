package compactor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

// The amplification benchmark's load. Rows are one per partition with a
// value of ampValueSize random (incompressible) bytes; the uniform phase
// draws ampUniformBytes/rowSize keys uniformly, with replacement, from a
// key space of as many keys (so about 63% of them end up written, the
// rest are overwrites, as db_bench's fillrandom); the zipfian phase then
// overwrites keys of the same space drawn with a Zipf law of exponent
// ampZipfS, for ampZipfBytes more. -short divides both by 16.
const (
	ampUniformBytes = 2 << 30
	ampZipfBytes    = 1 << 30
	ampZipfS        = 1.1
	ampValueSize    = 1 << 10
	ampRanges       = 16    // the binary's -ingest.ranges default
	ampBatch        = 64    // rows per mutation
	ampWriters      = 8     // mutations in flight, sharing the commitlog's fsyncs
	ampWorkers      = 2     // compaction workers, one per core of this machine
	ampReadSamples  = 20000 // point reads whose SSTables are counted
)

// BenchmarkCompactionAmplification measures write and read amplification on
// real data: an ingest node (commitlog on the local disk, real flushes)
// writes SSTables to a file bucket, the manifest lives on an embedded NATS,
// and the planner, the work queue and ampWorkers workers compact alongside
// the load, as in a cluster. After each load phase it flushes, waits until
// compaction has caught up (no job queued or running, none due) and
// reports:
//
//   - compaction.write_amp.<phase>: SSTable bytes written to the bucket in
//     the phase (flushes plus compaction outputs) over the logical bytes
//     written (storage keys plus encoded rows handed to the engine);
//   - compaction.read_amp.<phase>: SSTables a point read of a written key
//     consults, mean over sampled keys: those of the key's range whose
//     (token, key) span covers the key, as the read path selects them
//     before bloom filters; compaction.read_amp_max.<phase> is the max,
//     and the metric sstables_past_bloom/<phase> the mean of those whose
//     bloom filter admits the key's partition.
func BenchmarkCompactionAmplification(b *testing.B) {
	uniformBytes, zipfBytes := int64(ampUniformBytes), int64(ampZipfBytes)
	if testing.Short() {
		uniformBytes, zipfBytes = uniformBytes/16, zipfBytes/16
	}
	for b.Loop() {
		env := newAmpEnv(b)
		space := int(uniformBytes) / ampRowSize()
		written := make([]atomic.Bool, space)

		uniform := func(rng *rand.Rand) func() int { return func() int { return rng.IntN(space) } }
		env.phase(b, "uniform", uniformBytes, written, uniform)

		zipf := func(rng *rand.Rand) func() int {
			z := rand.NewZipf(rng, ampZipfS, 1, uint64(space-1))
			return func() int { return int(z.Uint64()) }
		}
		env.phase(b, "zipfian", zipfBytes, written, zipf)
		env.close()
	}
}

// ampRowSize approximates the logical bytes of one row, to size the key
// space; the figures count the exact bytes.
func ampRowSize() int { return ampValueSize + 64 }

// ampEnv is the pipeline the benchmark drives.
type ampEnv struct {
	store    *ampStore
	m        *manifest.Manifest
	view     *manifest.View
	node     *ingest.Node
	e        *engine.Local
	q        *Queue
	mets     *Metrics
	table    uuid.UUID
	colV     uint32
	strategy Strategy
	ts       atomic.Int64
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

func newAmpEnv(b *testing.B) *ampEnv {
	b.Helper()
	ctx := context.Background()
	js, _ := manifesttest.JetStream(b)
	dir := b.TempDir()
	bucket, err := objectstore.NewFile(vfs.Default, filepath.Join(dir, "bucket"), nil)
	if err != nil {
		b.Fatal(err)
	}
	store := &ampStore{Store: bucket}
	m, err := manifest.Open(ctx, js, store, "c1", manifest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := m.InitRanges(ctx, ampRanges); err != nil {
		b.Fatal(err)
	}
	if err := m.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, true); err != nil {
		b.Fatal(err)
	}
	tbl, err := m.CreateTable(ctx, manifest.TableSpec{
		Keyspace: "ks", Name: "amp",
		Columns:      []manifest.ColumnSpec{{Name: "pk", Type: "text"}, {Name: "ck", Type: "bigint"}, {Name: "v", Type: "blob"}},
		PartitionKey: []string{"pk"},
		Clustering:   []manifest.ClusteringSpec{{Name: "ck"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	env := &ampEnv{store: store, m: m, table: tbl.ID, strategy: DefaultStrategy(), mets: NewMetrics(nil)}
	for _, c := range tbl.Columns {
		if c.Name == "v" {
			env.colV = c.ID
		}
	}
	env.ts.Store(time.Now().UnixMicro())
	if env.view, err = m.Watch(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(env.view.Close)
	mc := ingest.NewManifestCommitter(m, store, "n1")
	if err := mc.ClaimAll(ctx); err != nil {
		b.Fatal(err)
	}
	// The binary's defaults (64 MiB memtables, one shard per core, batch
	// fsyncs), but writes that wait for memory time out later: the
	// writers retry them anyway, as clients would.
	cfg := ingest.DefaultConfig()
	cfg.WriteTimeout = time.Minute
	cfg.Commitlog.Dir = filepath.Join(dir, "commitlog")
	env.node, err = ingest.OpenNode(ctx, cfg, ingest.NodeDeps{
		FS: vfs.Default, Store: store,
		Committer:  ingest.NewViewCommitter(mc, env.view),
		Reader:     ingest.NewViewReader(env.view, tablestore.NewReaderCache(store, nil, 0)),
		Registerer: prometheus.NewRegistry(),
		Ranges:     ampRanges,
		L0:         ampL0Gauge{env},
	})
	if err != nil {
		b.Fatal(err)
	}
	if env.e, err = engine.NewLocal(engine.LocalConfig{Node: env.node, View: env.view, Store: store}); err != nil {
		b.Fatal(err)
	}
	if env.q, err = OpenQueue(ctx, js, "c1", QueueOptions{AckWait: 30 * time.Second}); err != nil {
		b.Fatal(err)
	}
	planner, err := NewPlanner(env.view, PlannerConfig{Interval: time.Second, JobTimeout: time.Hour},
		PlannerOptions{Holder: "c-1", Submit: env.q.Submit, Running: env.q.Running})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	env.stop = stop
	env.wg.Go(func() { _ = planner.Run(runCtx) })
	for range ampWorkers {
		// The default poll, as BenchmarkWorkers explains.
		w, err := NewWorker(env.q, m, WorkerOptions{Store: store, Metrics: env.mets})
		if err != nil {
			b.Fatal(err)
		}
		env.wg.Go(func() { _ = w.Run(runCtx) })
	}
	return env
}

func (env *ampEnv) close() {
	env.stop()
	env.wg.Wait()
	env.node.Close()
}

// phase writes logical bytes with keys drawn by the functions keyGen makes
// (one per writer), waits for compaction to catch up and reports the
// phase's figures. written marks the keys written so far.
func (env *ampEnv) phase(b *testing.B, name string, logical int64, written []atomic.Bool, keyGen func(*rand.Rand) func() int) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	flushed0, compacted0 := env.store.flushed.Load(), env.store.compacted.Load()
	var done, retries atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, ampWriters)
	for w := range ampWriters {
		wg.Go(func() {
			src := rand.NewChaCha8([32]byte{byte(w), name[0]})
			rng := rand.New(src)
			next := keyGen(rng)
			value := make([]byte, ampValueSize)
			for done.Load() < logical {
				mu := &engine.Mutation{Table: env.table, Entries: make([]engine.Entry, 0, ampBatch)}
				var n int64
				for range ampBatch {
					k := next()
					_, _ = src.Read(value) // ChaCha8's Read never fails
					e := env.entry(k, value)
					n += int64(len(e.Key) + len(e.Value))
					mu.Entries = append(mu.Entries, e)
					written[k].Store(true)
				}
				for {
					err := env.e.Apply(ctx, mu)
					if errors.Is(err, storage.ErrOverloaded) {
						retries.Add(1)
						continue
					}
					if err != nil {
						errs[w] = err
						return
					}
					break
				}
				done.Add(n)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	loaded := time.Since(start)
	if err := env.node.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	env.settle(b)
	caughtUp := time.Since(start)

	flushed := env.store.flushed.Load() - flushed0
	compacted := env.store.compacted.Load() - compacted0
	logicalBytes := done.Load()
	wa := float64(flushed+compacted) / float64(logicalBytes)
	mean, bloomMean, maxRA := env.readAmp(b, written)
	b.Logf("%s: %.0f MiB logical in %v (caught up after %v, %d overloaded retries); flushed %.0f MiB, compaction wrote %.0f MiB; jobs committed %v, failed %v; levels %s",
		name, float64(logicalBytes)/(1<<20), loaded.Round(time.Second), caughtUp.Round(time.Second), retries.Load(),
		float64(flushed)/(1<<20), float64(compacted)/(1<<20), value(env.mets.committed), value(env.mets.failed), env.levels())
	b.ReportMetric(float64(flushed+compacted)/float64(flushed), "write_amp_per_flushed_byte/"+name)
	b.ReportMetric(caughtUp.Seconds(), "s/"+name)
	b.ReportMetric(bloomMean, "sstables_past_bloom/"+name)
	benchfig.Report("compaction.write_amp."+name, wa, "x")
	benchfig.Report("compaction.read_amp."+name, mean, "sstables")
	benchfig.Report("compaction.read_amp_max."+name, float64(maxRA), "sstables")
}

// ampKey returns the partition key, token and row key of key k:
// partition "k<k>", clustering 0.
func ampKey(k int) (pk []byte, tok int64, key []byte) {
	pk = fmt.Appendf(nil, "k%010d", k)
	tok = token.Murmur3(pk)
	key, err := keys.RowKey(nil, tok, pk, [][]byte{binary.BigEndian.AppendUint64(nil, 0)},
		[]*cqltype.Type{cqltype.BigintType}, []bool{false})
	if err != nil {
		panic(err) // a bigint clustering value always encodes
	}
	return pk, tok, key
}

// entry is the row of key k with v = value, at the next timestamp.
func (env *ampEnv) entry(k int, value []byte) engine.Entry {
	_, _, key := ampKey(k)
	ts := env.ts.Add(1)
	r := model.Row{
		Liveness: model.Liveness{Present: true, Timestamp: ts},
		Cells:    []model.Cell{{Column: env.colV, Timestamp: ts, Value: value}},
	}
	return engine.Entry{Key: key, Value: model.AppendRow(nil, &r)}
}

// settle waits until compaction has caught up: no job queued or running,
// and the strategy plans nothing more (so every range's L0 is under the
// threshold and every level within its target).
func (env *ampEnv) settle(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Minute)
	quiet := 0
	for quiet < 3 { // three quiet looks in a row: the view has caught up too
		st, err := env.q.Stats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.Jobs == 0 && len(env.strategy.Plan(SnapshotOf(env.view, env.table), nil)) == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			b.Fatalf("compaction did not catch up in 30 minutes: %d jobs queued; levels %s", st.Jobs, env.levels())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// readAmp counts, for ampReadSamples written keys, the SSTables the read
// path would open for a point read: those of the key's range whose span
// covers the key (most), and of those the ones whose bloom filter admits
// the key's partition (the ones whose blocks the read then reads).
func (env *ampEnv) readAmp(b *testing.B, written []atomic.Bool) (mean, bloomMean float64, most int) {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 3))
	byRange := map[int][]manifest.SSTable{}
	readers := map[string]*sstable.Reader{}
	for r := range ampRanges {
		byRange[r] = env.view.SSTablesInRange(env.table, r)
		for _, t := range byRange[r] {
			rd, err := tablestore.Open(ctx, env.store, t.Key, nil)
			if err != nil {
				b.Fatal(err)
			}
			readers[t.Key] = rd
		}
	}
	total, passed := 0, 0
	for n := 0; n < ampReadSamples; {
		k := rng.IntN(len(written))
		if !written[k].Load() {
			continue
		}
		n++
		pk, tok, key := ampKey(k)
		prefix := keys.AppendPartitionPrefix(nil, tok, pk)
		at := bound{token: tok, key: key}
		c := 0
		for _, t := range byRange[manifest.RangeOf(tok, ampRanges)] {
			if lowerOf(t).compare(at) <= 0 && at.compare(upperOf(t)) <= 0 {
				c++
				if readers[t.Key].MayContain(prefix) {
					passed++
				}
			}
		}
		if c == 0 {
			b.Fatalf("no SSTable covers written key %d", k)
		}
		total += c
		most = max(most, c)
	}
	return float64(total) / ampReadSamples, float64(passed) / ampReadSamples, most
}

// levels describes the table's levels: SSTables and MiB per level.
func (env *ampEnv) levels() string {
	var count [NumLevels]int
	var size [NumLevels]int64
	for _, t := range env.view.SSTables(env.table) {
		count[t.Level]++
		size[t.Level] += t.Size
	}
	var s strings.Builder
	for l := range NumLevels {
		if count[l] > 0 {
			fmt.Fprintf(&s, " L%d=%d/%.0fMiB", l, count[l], float64(size[l])/(1<<20))
		}
	}
	return s.String()
}

// ampL0Gauge slows flushes as the binary's does: the default strategy's
// L0Pressure of the range.
type ampL0Gauge struct{ env *ampEnv }

var _ ingest.L0Gauge = ampL0Gauge{}

func (g ampL0Gauge) L0Pressure(_ storage.TableID, r int) float64 {
	snap := SnapshotOf(g.env.view, g.env.table)
	return g.env.strategy.L0Pressure(Snapshot{Table: snap.Table, Ranges: map[int][]manifest.SSTable{r: snap.Ranges[r]}})
}

// ampStore counts the bytes of the objects it stores, flushes'
// (under ingest's "sst/" prefix) and compactions' (under "compaction/")
// apart; the manifest's own objects are neither. Only objects that became
// visible count.
type ampStore struct {
	objectstore.Store
	flushed, compacted atomic.Int64
}

var _ objectstore.Store = (*ampStore)(nil)

func (s *ampStore) counter(key string) *atomic.Int64 {
	switch {
	case strings.HasPrefix(key, "sst/"):
		return &s.flushed
	case strings.HasPrefix(key, "compaction/"):
		return &s.compacted
	}
	return nil
}

func (s *ampStore) Put(ctx context.Context, key string, data []byte) (string, error) {
	etag, err := s.Store.Put(ctx, key, data)
	if c := s.counter(key); c != nil && err == nil {
		c.Add(int64(len(data)))
	}
	return etag, err
}

func (s *ampStore) PutIf(ctx context.Context, key string, data []byte, cond objectstore.Condition) (string, error) {
	etag, err := s.Store.PutIf(ctx, key, data, cond)
	if c := s.counter(key); c != nil && err == nil {
		c.Add(int64(len(data)))
	}
	return etag, err
}

func (s *ampStore) NewWriter(ctx context.Context, key string) (objectstore.Writer, error) {
	w, err := s.Store.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	return &ampWriter{Writer: w, c: s.counter(key)}, nil
}

type ampWriter struct {
	objectstore.Writer
	c *atomic.Int64
	n int64
}

func (w *ampWriter) Write(p []byte) (int, error) {
	n, err := w.Writer.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *ampWriter) Close() error {
	err := w.Writer.Close()
	if err == nil && w.c != nil {
		w.c.Add(w.n)
	}
	return err
}
