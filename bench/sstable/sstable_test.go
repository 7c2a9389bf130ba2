// Package sstablebench compares Sediment's SSTable writer and reader with
// Pebble's on the same rows.
//
// Both sides write the same 100k flush-like rows (32-byte keys, 100-200 byte
// semi-compressible values) with 32 KiB data blocks, restart interval 16 and
// a 10 bits/key Bloom filter over every key, with the same compression: zstd
// from github.com/klauspost/compress at its default level on both sides (the
// bench module is built with the pebblegozstd tag, which makes Pebble use
// that library rather than cgo zstd), and, as a second figure, none at all,
// which compares the formats alone. Output goes to a counting io.Writer so
// the figures measure encoding, not I/O. Pebble writes TableFormatPebblev4,
// its newest row-block format, the layout closest to ours.
//
// Point reads: a table in memory, random present keys. Sediment keeps the
// index in memory and fetches, checks and decompresses one block per Get.
// Pebble runs without a block cache and reuses one iterator, which holds
// its index block, so each SeekGE also fetches, checks and decompresses one
// data block.
package sstablebench

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	pebblesst "github.com/cockroachdb/pebble/v2/sstable"
	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/workload"
)

// rows is the flush-like load of the sstable package's own benchmarks.
var rows = sync.OnceValue(func() []workload.KV { return workload.FlushRows(100_000) })

const blockSize = 32 << 10

// codec is one compression, as each side names it.
type codec struct {
	name   string
	ours   sstable.Compression
	pebble *pebblesst.CompressionProfile
}

var codecs = []codec{
	{"zstd", sstable.Zstd, pebblesst.ZstdCompression},
	{"none", sstable.NoCompression, pebblesst.NoCompression},
}

func writeOurs(tb testing.TB, w io.Writer, rs []workload.KV, c codec) {
	tw := sstable.NewWriter(w, sstable.WriterOptions{BlockSize: blockSize, RestartInterval: 16, Compression: c.ours, BloomBitsPerKey: 10})
	for _, r := range rs {
		if err := tw.Add(r.Key, r.Value); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
}

func pebbleOptions(c codec) pebblesst.WriterOptions {
	return pebblesst.WriterOptions{
		BlockSize:            blockSize,
		BlockRestartInterval: 16,
		IndexBlockSize:       1 << 30, // one index block, as ours
		Compression:          c.pebble,
		FilterPolicy:         bloom.FilterPolicy(10),
		FilterType:           pebblesst.TableFilter,
		TableFormat:          pebblesst.TableFormatPebblev4,
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func writePebble(tb testing.TB, w io.Writer, rs []workload.KV, c codec) {
	tw := pebblesst.NewWriter(objstorageprovider.NewRemoteWritable(nopCloser{w}), pebbleOptions(c))
	for _, r := range rs {
		if err := tw.Set(r.Key, r.Value); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
}

// countingWriter discards what it is given and counts it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// measureWrite runs one writer as a sub-benchmark, reporting the table size
// and the CPU time per table next to the elapsed time. It returns the
// elapsed and CPU time per table.
func measureWrite(b *testing.B, name string, rs []workload.KV, c codec, write func(testing.TB, io.Writer, []workload.KV, codec)) (elapsed, cpu time.Duration) {
	elapsed = benchfig.Measure(b, name, func(b *testing.B) {
		b.SetBytes(workload.Size(rs))
		var w countingWriter
		runtime.GC() // do not charge one side for the garbage of the last
		start := cpuTime()
		for b.Loop() {
			w.n = 0
			write(b, &w, rs, c)
		}
		cpu = (cpuTime() - start) / time.Duration(b.N)
		b.ReportMetric(float64(cpu)/1e6, "cpu-ms/op")
		b.ReportMetric(float64(w.n), "table-bytes")
	})
	return elapsed, cpu
}

// cpuTime is the process's CPU time, which a shared machine disturbs less
// than elapsed time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWrite reports sstable.write_rows_per_s.vs_pebble (zstd on both
// sides) and sstable.write_rows_per_s.vs_pebble.none (no compression).
func BenchmarkWrite(b *testing.B) {
	rs := rows()
	raw := workload.Size(rs)
	for _, c := range codecs {
		var best benchfig.Best
		for range benchfig.Rounds {
			ours, oursCPU := measureWrite(b, "sediment/"+c.name, rs, c, writeOurs)
			pebble, pebbleCPU := measureWrite(b, "pebble/"+c.name, rs, c, writePebble)
			best.Observe(ours, pebble, oursCPU, pebbleCPU)
		}
		ours, pebble, oursCPU, pebbleCPU := best[0], best[1], best[2], best[3]
		suffix := ""
		if c.ours == sstable.Zstd {
			if ours > 0 {
				benchfig.Report("sstable.write_rows_per_s", float64(len(rs))/ours.Seconds(), "rows/s")
				benchfig.Report("sstable.write_mb_s", float64(raw)/1e6/ours.Seconds(), "MB/s")
			}
		} else {
			suffix = "." + c.name
		}
		if s := benchfig.Speedup(ours, pebble); s > 0 {
			benchfig.Report("sstable.write_rows_per_s.vs_pebble"+suffix, s, "x")
		}
		// CPU time per table is steadier than elapsed time on a busy machine.
		if s := benchfig.Speedup(oursCPU, pebbleCPU); s > 0 {
			benchfig.Report("sstable.write_cpu.vs_pebble"+suffix, s, "x")
		}
	}
}

// BenchmarkPointGet reports sstable.point_get.vs_pebble (zstd on both sides)
// and sstable.point_get.vs_pebble.none (no compression).
func BenchmarkPointGet(b *testing.B) {
	for _, c := range codecs {
		suffix := ""
		if c.ours != sstable.Zstd {
			suffix = "." + c.name
		}
		pointGet(b, c, suffix)
	}
}

func pointGet(b *testing.B, c codec, suffix string) {
	rs := rows()
	ctx := context.Background()

	var ourTable bytes.Buffer
	writeOurs(b, &ourTable, rs, c)
	r, err := sstable.Open(ctx, sstable.FromReaderAt(bytes.NewReader(ourTable.Bytes())), int64(ourTable.Len()), sstable.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var pebbleTable bytes.Buffer
	writePebble(b, &pebbleTable, rs, c)
	pr, err := pebblesst.NewMemReader(pebbleTable.Bytes(), pebblesst.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer pr.Close()

	var best benchfig.Best
	for range benchfig.Rounds {
		var oursCPU, pebbleCPU time.Duration
		ours := benchfig.Measure(b, "sediment/"+c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			runtime.GC()
			start := cpuTime()
			defer func() { oursCPU = (cpuTime() - start) / time.Duration(b.N) }()
			for b.Loop() {
				k := rs[rng.IntN(len(rs))].Key
				if _, ok, err := r.Get(ctx, k); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
		pebble := benchfig.Measure(b, "pebble/"+c.name, func(b *testing.B) {
			it, err := pr.NewIter(pebblesst.NoTransforms, nil, nil, pebblesst.AssertNoBlobHandles)
			if err != nil {
				b.Fatal(err)
			}
			defer it.Close()
			rng := rand.New(rand.NewPCG(1, 1))
			runtime.GC()
			start := cpuTime()
			defer func() { pebbleCPU = (cpuTime() - start) / time.Duration(b.N) }()
			for b.Loop() {
				k := rs[rng.IntN(len(rs))].Key
				kv := it.SeekGE(k, 0)
				if kv == nil || !bytes.Equal(kv.K.UserKey, k) {
					b.Fatalf("pebble lost %x", k)
				}
				if _, _, err := kv.Value(nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		best.Observe(ours, pebble, oursCPU, pebbleCPU)
	}
	ours, pebble, oursCPU, pebbleCPU := best[0], best[1], best[2], best[3]
	if s := benchfig.Speedup(ours, pebble); s > 0 {
		benchfig.Report("sstable.point_get.vs_pebble"+suffix, s, "x")
	}
	if s := benchfig.Speedup(oursCPU, pebbleCPU); s > 0 {
		benchfig.Report("sstable.point_get_cpu.vs_pebble"+suffix, s, "x")
	}
}

// TestSameRows checks that both writers accept the rows and both readers
// return them, so the benchmarks compare equal work.
func TestSameRows(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			rs := rows()[:5000]
			var ours, theirs bytes.Buffer
			writeOurs(t, &ours, rs, c)
			writePebble(t, &theirs, rs, c)
			r, err := sstable.Open(context.Background(), sstable.FromReaderAt(bytes.NewReader(ours.Bytes())), int64(ours.Len()), sstable.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pr, err := pebblesst.NewMemReader(theirs.Bytes(), pebblesst.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			it, err := pr.NewIter(pebblesst.NoTransforms, nil, nil, pebblesst.AssertNoBlobHandles)
			if err != nil {
				t.Fatal(err)
			}
			defer it.Close()
			for _, row := range rs {
				v, ok, err := r.Get(context.Background(), row.Key)
				if !ok || err != nil || !bytes.Equal(v, row.Value) {
					t.Fatalf("sediment Get(%x): %v %v", row.Key, ok, err)
				}
				kv := it.SeekGE(row.Key, 0)
				if kv == nil || !bytes.Equal(kv.K.UserKey, row.Key) {
					t.Fatalf("pebble SeekGE(%x) missed", row.Key)
				}
				pv, _, err := kv.Value(nil)
				if err != nil || !bytes.Equal(pv, row.Value) {
					t.Fatalf("pebble value of %x: %v", row.Key, err)
				}
			}
			t.Logf("sizes: sediment %d bytes, pebble %d bytes", ours.Len(), theirs.Len())
		})
	}
}
