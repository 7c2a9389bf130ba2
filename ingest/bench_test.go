package ingest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/memtable"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/streamlog"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// benchWriters is the number of concurrent writers of the shard benchmarks.
const benchWriters = 64

// benchRows returns mutations of one row each with values of about size bytes.
func benchRows(size int) []*storage.Mutation {
	rows := make([]*storage.Mutation, 1<<14)
	val := string(make([]byte, size))
	for i := range rows {
		rows[i] = rowMutation(1, "p"+strconv.Itoa(i/8), int64(i%8), 1, val)
	}
	return rows
}

// openBenchShard opens a shard on the OS file system in a temporary directory.
func openBenchShard(b *testing.B) *Shard { return openBenchShardLog(b, nil) }

// openBenchShardLog opens a shard as openBenchShard does, with the log
// openLog opens (NodeDeps.OpenLog).
func openBenchShardLog(b *testing.B, openLog func(context.Context, uint32, *slog.Logger) (Log, error)) *Shard {
	dir := b.TempDir()
	store, err := objectstore.NewFile(vfs.Default, filepath.Join(dir, "bucket"), nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Shards = 1
	cfg.Commitlog.Dir = filepath.Join(dir, "commitlog")
	c := NewMemCommitter(store)
	s, err := Open(context.Background(), cfg, 0, NodeDeps{Store: store, Committer: c, Reader: c, OpenLog: openLog})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// runParallel runs b.N calls of op spread over benchWriters goroutines.
func runParallel(b *testing.B, op func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range benchWriters {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := op(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkApply measures durable writes of one row through a shard (batch
// sync mode, real disk) against bare memtable inserts of the same rows.
func BenchmarkApply(b *testing.B) {
	for _, size := range []int{100, 1 << 10} {
		name := fmt.Sprintf("row=%dB", size)
		b.Run(name, func(b *testing.B) {
			rows := benchRows(size)
			bytesPerRow := int64(len(rows[0].Entries[0].Key) + len(rows[0].Entries[0].Value))
			shard := benchfig.Measure(b, "shard", func(b *testing.B) {
				s := openBenchShard(b)
				b.SetBytes(bytesPerRow)
				syncs := s.log.Stats().Syncs
				runParallel(b, func(i int) error { return s.Apply(context.Background(), rows[i%len(rows)]) })
				b.ReportMetric(float64(b.N)/float64(s.log.Stats().Syncs-syncs), "writes/fsync")
			})
			mem := benchfig.Measure(b, "memtable", func(b *testing.B) {
				b.SetBytes(bytesPerRow)
				mt := memtable.New(memtable.Options{Merge: model.Merge})
				var key []byte
				b.ResetTimer()
				for i := range b.N {
					if i%(1<<16) == 0 && i > 0 {
						mt = memtable.New(memtable.Options{Merge: model.Merge})
					}
					e := rows[i%len(rows)].Entries[0]
					key = appendTableKey(key[:0], 1, e.Key)
					if err := mt.Set(key, e.Value); err != nil {
						b.Fatal(err)
					}
					mt.Commit()
				}
			})
			if shard > 0 {
				benchfig.Report("ingest.apply_ops_s."+name, 1e9/float64(shard.Nanoseconds()), "ops/s")
				benchfig.Report("ingest.apply.vs_memtable."+name, benchfig.Speedup(shard, mem), "x")
			}
		})
	}
}

// BenchmarkReplicatedLog measures one-row writes through a shard whose log
// is a stream of three replicas on a three-server NATS cluster (all on this
// machine, so the network is loopback), and through a shard on the local
// commitlog (batch sync, real disk), with the same writers in the same run:
// throughput, their ratio, and the acknowledgement latency of each write.
func BenchmarkReplicatedLog(b *testing.B) {
	rows := benchRows(100)
	c := testserver.NATSClusterOf(b, 3)
	js, err := jetstream.New(c.Connect(b))
	if err != nil {
		b.Fatal(err)
	}
	var run atomic.Int64
	sides := []struct {
		name    string
		openLog func(context.Context, uint32, *slog.Logger) (Log, error)
	}{
		{"replicated", func(ctx context.Context, shard uint32, logger *slog.Logger) (Log, error) {
			// A node per run, so that each starts on an empty subject.
			node := "bench" + strconv.FormatInt(run.Add(1), 10)
			return streamlog.Open(ctx, streamlog.Options{JetStream: js, Cluster: "bench", Node: node, Shard: shard, Replicas: 3})
		}},
		{"local", nil},
	}
	perOp := map[string]time.Duration{}
	latency := map[string][]time.Duration{}
	for _, side := range sides {
		perOp[side.name] = benchfig.Measure(b, side.name, func(b *testing.B) {
			s := openBenchShardLog(b, side.openLog)
			lat := make([]time.Duration, b.N)
			runParallel(b, func(i int) error {
				start := time.Now()
				err := s.Apply(context.Background(), rows[i%len(rows)])
				lat[i] = time.Since(start)
				return err
			})
			latency[side.name] = lat
		})
	}
	if perOp["replicated"] == 0 || perOp["local"] == 0 {
		return
	}
	benchfig.Report("ingest.replicated.write_ops_s", 1e9/float64(perOp["replicated"]), "ops/s")
	benchfig.Report("ingest.local.write_ops_s", 1e9/float64(perOp["local"]), "ops/s")
	benchfig.Report("ingest.replicated.vs_local", benchfig.Speedup(perOp["replicated"], perOp["local"]), "x")
	for _, side := range sides {
		lat := latency[side.name]
		slices.Sort(lat)
		for _, q := range []struct {
			name string
			at   float64
		}{{"p50", 0.50}, {"p99", 0.99}} {
			v := lat[int(q.at*float64(len(lat)-1))]
			benchfig.Report("ingest."+side.name+".ack_ms."+q.name, float64(v)/float64(time.Millisecond), "ms")
		}
	}
}

// BenchmarkBatching compares the shard's group commit with one fsync per
// write, at the same concurrency: the baseline appends each write alone to
// the commitlog and applies it under a lock.
func BenchmarkBatching(b *testing.B) {
	rows := benchRows(100)
	batched := benchfig.Measure(b, "group-commit", func(b *testing.B) {
		s := openBenchShard(b)
		runParallel(b, func(i int) error { return s.Apply(context.Background(), rows[i%len(rows)]) })
	})
	single := benchfig.Measure(b, "fsync-per-write", func(b *testing.B) {
		l, err := commitlog.Open(commitlog.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		mt := memtable.New(memtable.Options{Merge: model.Merge})
		var mu sync.Mutex
		var key, rec []byte
		runParallel(b, func(i int) error {
			mu.Lock()
			defer mu.Unlock()
			m := rows[i%len(rows)]
			rec = appendMutation(append(rec[:0], recordMutations), m)
			if _, err := l.Append(context.Background(), rec); err != nil {
				return err
			}
			key = appendTableKey(key[:0], m.Table, m.Entries[0].Key)
			if err := mt.Set(key, m.Entries[0].Value); err != nil {
				return err
			}
			mt.Commit()
			return nil
		})
	})
	benchfig.Report("ingest.batching.speedup", benchfig.Speedup(batched, single), "x")
}

// BenchmarkFlushMinIO flushes 100,000 rows of 100 bytes (10,000 partitions
// of 10 rows, in 4 token ranges: 4 SSTables) from a shard to MinIO, and
// encodes the same rows with a bare sstable.Writer into a writer that drops
// them. Unlike engine's BenchmarkFlush, the commit is in memory, not in the
// manifest: the ratio is the cost of iterating the memtable and uploading.
// The processor time of the benchmark process and of the MinIO server per
// flush tell, on a machine of few cores, how much of the wall time is
// MinIO's work rather than waiting.
func BenchmarkFlushMinIO(b *testing.B) {
	const parts, partRows, ranges = 10_000, 10, 4
	m := testserver.MinIO(b)
	cfg := objectstore.DefaultConfig()
	cfg.Backend, cfg.Endpoint, cfg.Bucket = objectstore.BackendMinIO, m.Endpoint, m.Bucket
	cfg.Insecure, cfg.PathStyle, cfg.Region = true, true, "us-east-1"
	cfg.AccessKeyID, cfg.SecretAccessKey = m.AccessKey, m.SecretKey
	store, err := objectstore.New(b.Context(), cfg, prometheus.NewRegistry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	scfg := DefaultConfig()
	scfg.Shards = 1
	scfg.MemtableSize = 64 << 20
	scfg.MemoryLimit = 256 << 20
	scfg.Commitlog.Dir = "commitlog"
	c := NewMemCommitter(store)
	s, err := Open(b.Context(), scfg, 0, NodeDeps{FS: vfs.NewMem(), Store: store, Committer: c, Reader: c, Ranges: ranges})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })

	mutations := func(ts int64) []*storage.Mutation {
		val := fmt.Sprintf("%0100d", ts)
		ms := make([]*storage.Mutation, 0, parts)
		for p := range parts {
			mu := &storage.Mutation{Table: 1}
			for ck := range partRows {
				mu.Entries = append(mu.Entries, rowMutation(1, "p"+strconv.Itoa(p), int64(ck), ts, val).Entries...)
			}
			ms = append(ms, mu)
		}
		return ms
	}
	var entries []storage.Entry
	var raw int64
	for _, mu := range mutations(1) {
		for _, e := range mu.Entries {
			entries = append(entries, e)
			raw += int64(len(e.Key) + len(e.Value))
		}
	}
	slices.SortFunc(entries, func(a, b storage.Entry) int { return bytes.Compare(a.Key, b.Key) })

	bare := func(b *testing.B) {
		b.SetBytes(raw)
		for b.Loop() {
			w := tablestore.NewWriter(discard{}, sstable.WriterOptions{WriterID: "bench", CreatedAt: time.Now()})
			for _, e := range entries {
				if err := w.Add(e.Key, e.Value); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	ts := int64(1)
	flush := func(b *testing.B) {
		b.SetBytes(raw)
		var self, server time.Duration
		for range b.N {
			b.StopTimer()
			ts++
			ms := mutations(ts)
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := w; i < len(ms); i += 8 {
						if err := s.Apply(b.Context(), ms[i]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			self0, server0 := processCPU(b), serverCPU(b, m)
			b.StartTimer()
			if err := s.Flush(b.Context()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			self += processCPU(b) - self0
			server += serverCPU(b, m) - server0
			b.StartTimer()
		}
		b.ReportMetric(float64(self.Milliseconds())/float64(b.N), "self-cpu-ms/op")
		b.ReportMetric(float64(server.Milliseconds())/float64(b.N), "minio-cpu-ms/op")
	}
	var best benchfig.Best
	for round := range 3 {
		best.Observe(
			benchfig.Measure(b, fmt.Sprintf("bare-sstable-writer/round=%d", round), bare),
			benchfig.Measure(b, fmt.Sprintf("flush-minio/round=%d", round), flush),
		)
	}
	if best[0] > 0 && best[1] > 0 {
		b.Logf("flush/bare = %.2f", float64(best[1])/float64(best[0]))
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// processCPU returns the processor time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func serverCPU(b *testing.B, m *testserver.MinIOServer) time.Duration {
	d, err := m.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	return d
}
