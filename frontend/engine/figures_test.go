package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/objectstore"
)

// minioStore returns a store of the minio backend on m's bucket whose
// metrics, which count every request by operation, are registered in reg.
func minioStore(b *testing.B, m *testserver.MinIOServer, reg prometheus.Registerer) objectstore.Store {
	cfg := objectstore.DefaultConfig()
	cfg.Backend = objectstore.BackendMinIO
	cfg.Endpoint = m.Endpoint
	cfg.Insecure = true
	cfg.PathStyle = true
	cfg.Region = "us-east-1"
	cfg.AccessKeyID = m.AccessKey
	cfg.SecretAccessKey = m.SecretKey
	cfg.Bucket = m.Bucket
	s, err := objectstore.New(b.Context(), cfg, reg, nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// uploadRequests sums the requests that write objects (single PUTs and
// every step of a multipart upload) counted in reg.
func uploadRequests(b *testing.B, reg *prometheus.Registry) int {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != "sediment_objectstore_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" && (l.GetValue() == "put" || strings.HasPrefix(l.GetValue(), "multipart_")) {
					n += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return n
}

// benchMutations returns the entries of parts partitions of rows rows
// each, with 100-byte values written at ts, in mutations of 100 partitions:
// Node.Apply splits them by shard, and fewer larger records keep the rows'
// setup short.
func benchMutations(te *testEnv, parts, rows int, ts int64) []*Mutation {
	now := time.Now().Unix()
	v := fmt.Sprintf("%0100d", ts)
	var ms []*Mutation
	for p := range parts {
		if p%100 == 0 {
			ms = append(ms, &Mutation{Table: te.table, Entries: make([]Entry, 0, 100*rows)})
		}
		m := ms[len(ms)-1]
		for ck := range rows {
			m.Entries = append(m.Entries, insert("p"+strconv.Itoa(p), int64(ck), ts, v, 0, now))
		}
	}
	return ms
}

// applyAll applies ms in batches, which Local.Apply runs concurrently.
func (te *testEnv) applyAll(ms []*Mutation) {
	te.t.Helper()
	for batch := range slices.Chunk(ms, 8) {
		if err := te.e.Apply(te.ctx, batch...); err != nil {
			te.t.Fatal(err)
		}
	}
}

// countingDiscard counts and drops what is written to it.
type countingDiscard struct{ n int64 }

func (d *countingDiscard) Write(p []byte) (int, error) {
	d.n += int64(len(p))
	return len(p), nil
}

const flushParts, flushPartRows = 10_000, 10

// figureRounds is how many rounds the benchmarks below alternate their
// sides over, fewer than benchfig.Rounds: each flush round writes its rows
// first, which costs more than the timed part.
const figureRounds = 3

// BenchmarkFlush flushes 100,000 rows (10,000 partitions of 10 rows of 100
// bytes) from the ingest node's memtables to MinIO and commits them in the
// manifest, and encodes the same rows with a bare sstable.Writer into a
// writer that drops them. The ratio flush/bare is the cost of everything a
// flush adds to encoding: iterating the memtables, cutting SSTables at range
// boundaries, uploading and committing. The rows are written before each
// timed flush, with the timer stopped.
func BenchmarkFlush(b *testing.B) {
	m := testserver.MinIO(b)
	te := newEnvWith(b, envOptions{memtableSize: 64 << 20, store: minioStore(b, m, prometheus.NewRegistry())})
	rows := flushParts * flushPartRows

	var entries []Entry
	for _, mu := range benchMutations(te, flushParts, flushPartRows, 1) {
		entries = append(entries, mu.Entries...)
	}
	slices.SortFunc(entries, func(a, b Entry) int { return bytes.Compare(a.Key, b.Key) })
	var raw int64
	for _, e := range entries {
		raw += int64(len(e.Key) + len(e.Value))
	}

	bare := func(b *testing.B) {
		b.SetBytes(raw)
		var size int64
		for b.Loop() {
			var d countingDiscard
			w := tablestore.NewWriter(&d, sstable.WriterOptions{WriterID: "bench", CreatedAt: time.Now()})
			for _, e := range entries {
				if err := w.Add(e.Key, e.Value); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := w.Close(); err != nil {
				b.Fatal(err)
			}
			size = d.n
		}
		b.ReportMetric(float64(size), "sstable-bytes")
	}
	ts := int64(1)
	flush := func(b *testing.B) {
		b.SetBytes(raw)
		for range b.N {
			b.StopTimer()
			ts++
			te.applyAll(benchMutations(te, flushParts, flushPartRows, ts))
			b.StartTimer()
			if err := te.node.Flush(te.ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		// Every row is now in SSTables: the memtables hold none.
		it := te.node.NewIter(storage.TableIDOf(te.table), nil, nil)
		defer it.Close()
		if it.First() {
			b.Fatal("rows left in the memtables after Flush")
		}
	}
	var best benchfig.Best
	for round := range figureRounds {
		best.Observe(
			benchfig.Measure(b, fmt.Sprintf("bare-sstable-writer/round=%d", round), bare),
			benchfig.Measure(b, fmt.Sprintf("flush-minio/round=%d", round), flush),
		)
	}
	bareTime, flushTime := best[0], best[1]
	if flushTime > 0 {
		benchfig.Report("flush.rows_s", float64(rows)/flushTime.Seconds(), "rows/s")
	}
	if bareTime > 0 && flushTime > 0 {
		benchfig.Report("flush.vs_sstable_writer", float64(flushTime)/float64(bareTime), "x")
	}
}

const pointParts = 10_000

// pointEnv holds pointParts one-row partitions, flushed to SSTables if
// flush is set, with every reader opened and every block read once.
func pointEnv(b *testing.B, flush bool, tier cache.Tier) *testEnv {
	te := newEnvWith(b, envOptions{memtableSize: 64 << 20, tier: tier})
	te.applyAll(benchMutations(te, pointParts, 1, 1))
	if flush {
		if err := te.node.Flush(te.ctx); err != nil {
			b.Fatal(err)
		}
	}
	for p := range pointParts {
		te.pointRead(b, p)
	}
	return te
}

// pointRead reads the one-row partition p.
func (te *testEnv) pointRead(tb testing.TB, p int) {
	part, err := te.e.Read(te.ctx, Slice{Table: te.table, Key: []byte("p" + strconv.Itoa(p)), Now: time.Now().Unix()})
	if err != nil {
		tb.Fatal(err)
	}
	if len(part.Rows) != 1 {
		tb.Fatalf("partition p%d has %d rows", p, len(part.Rows))
	}
}

// BenchmarkPointRead reads one-row partitions at random through
// Local.Read: from the memtables; from SSTables whose blocks are in the
// memory cache (warm); and from SSTables with no block cache but their
// readers (footer, index, filter) open (cold), counting the object store's
// GETs per read.
func BenchmarkPointRead(b *testing.B) {
	memtable := pointEnv(b, false, nil)
	warm := pointEnv(b, true, cache.NewMemory(256<<20, cache.Options{}))
	cold := pointEnv(b, true, nil)
	if len(warm.view.SSTables(warm.table)) == 0 || len(cold.view.SSTables(cold.table)) == 0 {
		b.Fatal("no SSTables after Flush")
	}
	side := func(te *testEnv) func(b *testing.B) {
		return func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				te.pointRead(b, rng.IntN(pointParts))
			}
		}
	}
	var (
		gets, reads int64
		best        benchfig.Best
	)
	for round := range figureRounds {
		g := cold.store.gets.Load()
		n := 0
		coldRead := side(cold)
		best.Observe(
			benchfig.Measure(b, fmt.Sprintf("memtable/round=%d", round), side(memtable)),
			benchfig.Measure(b, fmt.Sprintf("sstable-warm/round=%d", round), side(warm)),
			benchfig.Measure(b, fmt.Sprintf("sstable-cold/round=%d", round), func(b *testing.B) {
				coldRead(b)
				n += b.N
			}),
		)
		gets += cold.store.gets.Load() - g
		reads += int64(n)
	}
	if best[0] > 0 {
		benchfig.Report("read.point_ops_s.memtable", 1/best[0].Seconds(), "ops/s")
	}
	if best[1] > 0 {
		benchfig.Report("read.point_ops_s.warm", 1/best[1].Seconds(), "ops/s")
	}
	if reads > 0 {
		benchfig.Report("read.gets_per_cold_read", float64(gets)/float64(reads), "GETs")
	}
}

// ingestMemtable is the memtable size of BenchmarkIngestPuts: 8 MiB per
// shard, 2 shards, 4 token ranges (one SSTable per range and flush).
const ingestMemtable = 8 << 20

// BenchmarkIngestPuts writes rows of 100 bytes in partitions of 10 through
// the engine into MinIO, flushing as memtables fill and once at the end, and
// reports the object store's upload requests (PUTs and multipart steps,
// manifest archives included) per million rows written. Each SSTable below
// the part size costs one PUT, and its commit one more: the manifest
// archives the new version of its (table, range) record.
func BenchmarkIngestPuts(b *testing.B) {
	m := testserver.MinIO(b)
	reg := prometheus.NewRegistry()
	te := newEnvWith(b, envOptions{memtableSize: ingestMemtable, store: minioStore(b, m, reg)})
	const parts, partRows = 10_000, 10
	var puts, rows int
	ts := int64(1)
	tables := len(te.view.SSTables(te.table))
	for b.Loop() {
		before := uploadRequests(b, reg)
		for range 4 {
			ts++
			te.applyAll(benchMutations(te, parts, partRows, ts))
			rows += parts * partRows
		}
		if err := te.node.Flush(te.ctx); err != nil {
			b.Fatal(err)
		}
		puts += uploadRequests(b, reg) - before
	}
	tables = len(te.view.SSTables(te.table)) - tables
	if tables == 0 || puts < tables {
		b.Fatalf("%d upload requests for %d SSTables", puts, tables)
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(tables)/float64(rows)*1e6, "SSTables/Mrows")
	b.ReportMetric(float64(puts)/float64(tables), "requests/SSTable")
	perMillion := float64(puts) / float64(rows) * 1e6
	b.ReportMetric(perMillion, "PUTs/Mrows")
	benchfig.Report("ingest.puts_per_million_writes", perMillion, fmt.Sprintf("requests(memtable=%dMiB)", ingestMemtable>>20))
}

// TestColdPointReadOneGet checks what read.gets_per_cold_read measures:
// with the readers open and no block cache, a point read of a one-row
// partition costs exactly one GET, of its data block.
func TestColdPointReadOneGet(t *testing.T) {
	te := newEnvWith(t, envOptions{memtableSize: 16 << 20})
	const parts = 500
	te.applyAll(benchMutations(te, parts, 1, 1))
	if err := te.node.Flush(te.ctx); err != nil {
		t.Fatal(err)
	}
	if len(te.view.SSTables(te.table)) < 2 {
		t.Fatalf("%d SSTables, want one per shard and range", len(te.view.SSTables(te.table)))
	}
	for p := range parts {
		te.pointRead(t, p) // opens the readers
	}
	for p := range parts {
		before := te.store.gets.Load()
		te.pointRead(t, p)
		if n := te.store.gets.Load() - before; n != 1 {
			t.Fatalf("read of p%d made %d GETs, want 1", p, n)
		}
	}
}
