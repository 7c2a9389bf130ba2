package compactor

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/manifest"
)

// benchInputs writes n inputs of about size bytes of rows each, as L0
// flushes of a write load that overwrites half of its keys: each input
// holds rows of partitions drawn from one key space, so inputs overlap and
// the merge reconciles many keys.
func benchInputs(b *testing.B, s *memStore, n, size int, wo sstable.WriterOptions) []manifest.SSTable {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	rowsPerInput := size / 150
	space := rowsPerInput * n / 2
	var ins []manifest.SSTable
	for i := range n {
		m := map[string][]byte{}
		for len(m) < rowsPerInput {
			k := rng.IntN(space)
			p := partitionPrefix(k / 8)
			value := make([]byte, 96)
			for j := 0; j+8 <= len(value)/2; j += 8 {
				binary.LittleEndian.PutUint64(value[j:], rng.Uint64())
			}
			ts := int64(1_700_000_000_000_000 + i*1_000_000 + len(m))
			r := model.Row{
				Liveness: model.Liveness{Present: true, Timestamp: ts},
				Cells: []model.Cell{
					{Column: 1, Timestamp: ts, Value: value[:64]},
					{Column: 2, Timestamp: ts, Value: value[64:]},
				},
			}
			m[string(rowKey(p, int64(k%8)))] = model.AppendRow(nil, &r)
		}
		ins = append(ins, writeTable(b, s, fmt.Sprintf("bench/%d.sst", i), sortedEntries(m), wo))
	}
	return ins
}

// cpuTime is the CPU time the process has used, all threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchMergeJob writes four overlapping inputs of 8 MiB to s and returns
// the job merging them, with their total size: the merge the compaction
// benchmarks time.
func benchMergeJob(b *testing.B, s *memStore, wo sstable.WriterOptions) (Job, int64) {
	b.Helper()
	ins := benchInputs(b, s, 4, 8<<20, wo)
	var total int64
	for _, in := range ins {
		total += in.Size
	}
	return Job{Table: testTable, Inputs: ins, Now: 1_800_000_000, TargetSize: 64 << 20}, total
}

// BenchmarkCompaction merges four overlapping inputs and compares with the
// ceiling: the same input bytes decompressed, checksummed, recompressed and
// checksummed again, entry by entry, without merging. The sides take turns;
// compaction.mb_s_per_core is input bytes per CPU-second of the merge,
// compaction.vs_ceiling its speed over the ceiling's.
func BenchmarkCompaction(b *testing.B) {
	wo := sstable.WriterOptions{Compression: sstable.S2}
	s := newMemStore()
	job, total := benchMergeJob(b, s, wo)
	ins := job.Inputs
	var cpu, ceilingCPU time.Duration
	merge := func(b *testing.B) {
		b.SetBytes(total)
		start := cpuTime()
		for b.Loop() {
			job.ID = fmt.Sprintf("bench-%d", b.N)
			outs, _, err := Run(context.Background(), job, RunDeps{Store: s, Options: Options{Writer: wo}})
			if err != nil {
				b.Fatal(err)
			}
			for _, o := range outs {
				s.Delete(context.Background(), o.Key)
			}
		}
		cpu = (cpuTime() - start) / time.Duration(b.N)
	}
	s.discard = true
	data := make([][]byte, len(ins))
	for i, in := range ins {
		data[i] = s.objects[in.Key]
	}
	ceiling := func(b *testing.B) {
		b.SetBytes(total)
		start := cpuTime()
		for b.Loop() {
			for _, d := range data {
				if err := copyTable(d, wo); err != nil {
					b.Fatal(err)
				}
			}
		}
		ceilingCPU = (cpuTime() - start) / time.Duration(b.N)
	}
	var best benchfig.Best
	for round := range benchfig.Rounds {
		mergeWall := benchfig.Measure(b, fmt.Sprintf("merge/round=%d", round), merge)
		ceilingWall := benchfig.Measure(b, fmt.Sprintf("ceiling/round=%d", round), ceiling)
		best.Observe(mergeWall, cpu, ceilingWall, ceilingCPU)
		b.Logf("round %d: merge %v wall %v cpu, ceiling %v wall %v cpu", round, mergeWall, cpu, ceilingWall, ceilingCPU)
	}
	if best[1] > 0 {
		benchfig.Report("compaction.mb_s_per_core", float64(total)/1e6/best[1].Seconds(), "MB/s")
	}
	benchfig.Report("compaction.vs_ceiling", benchfig.Speedup(best[0], best[2]), "x")
}

// copyTable rewrites a table entry by entry, without merging or model
// statistics: the ceiling of any rewrite of its bytes.
func copyTable(data []byte, wo sstable.WriterOptions) error {
	ctx := context.Background()
	r, err := sstable.Open(ctx, sstable.FromReaderAt(bytes.NewReader(data)), int64(len(data)), sstable.ReaderOptions{})
	if err != nil {
		return err
	}
	it := r.NewIter(ctx, nil, nil)
	defer it.Close()
	w := sstable.NewWriter(io.Discard, wo)
	for ok := it.First(); ok; ok = it.Next() {
		if err := w.Add(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	_, err = w.Close()
	return err
}

// BenchmarkCompactionReadAhead sweeps the job's read-ahead: larger chunks mean
// fewer requests, the merge's CPU barely changes.
func BenchmarkCompactionReadAhead(b *testing.B) {
	wo := sstable.WriterOptions{Compression: sstable.S2}
	s := newMemStore()
	ins := benchInputs(b, s, 4, 4<<20, wo)
	s.discard = true
	for _, ra := range []int64{1 << 20, 8 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("readahead=%dKiB", ra>>10), func(b *testing.B) {
			var st Stats
			for b.Loop() {
				outs, stats, err := Run(context.Background(), Job{ID: "sweep", Table: testTable, Inputs: ins, Now: 1}, RunDeps{Store: s, Options: Options{ReadAhead: ra, Writer: wo}})
				if err != nil {
					b.Fatal(err)
				}
				st = stats
				for _, o := range outs {
					s.Delete(context.Background(), o.Key)
				}
			}
			b.SetBytes(st.InputBytes)
			b.ReportMetric(float64(st.Requests), "requests/op")
		})
	}
}
