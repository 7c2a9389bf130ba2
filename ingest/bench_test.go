package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sedimentdb/sediment/commitlog"
	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/memtable"
	"github.com/sedimentdb/sediment/model"
	"github.com/sedimentdb/sediment/objectstore"
	"github.com/sedimentdb/sediment/vfs"
)

// benchWriters is the number of concurrent writers of the shard benchmarks.
const benchWriters = 64

// benchRows returns mutations of one row each with values of about size bytes.
func benchRows(size int) []*Mutation {
	rows := make([]*Mutation, 1<<14)
	val := string(make([]byte, size))
	for i := range rows {
		rows[i] = rowMutation(1, "p"+strconv.Itoa(i/8), int64(i%8), 1, val)
	}
	return rows
}

// openBenchShard opens a shard on the OS file system in a temporary directory.
func openBenchShard(b *testing.B) *Shard {
	dir := b.TempDir()
	store, err := objectstore.NewFile(vfs.Default, filepath.Join(dir, "bucket"), nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Shards = 1
	cfg.Commitlog.Dir = filepath.Join(dir, "commitlog")
	c := NewMemCommitter(store)
	s, err := Open(context.Background(), cfg, 0, Deps{Store: store, Committer: c, Reader: c})
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
