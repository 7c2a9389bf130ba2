// Package sstablebench compares Sediment's SSTable writer and reader with
// Pebble's on the same rows.
//
// Both sides write the same 100k flush-like rows (32-byte keys, 100-200 byte
// semi-compressible values) with 32 KiB data blocks, restart interval 16, a
// 10 bits/key Bloom filter over every key, and snappy-family compression:
// s2 for Sediment, snappy for Pebble (Pebble's row format offers no s2, and
// minlz only from its v6 format). Output goes to io.Discard so the figures
// measure encoding, not I/O. Pebble writes TableFormatPebblev4, its newest
// row-block format, the layout closest to ours; its columnar v5 is measured
// too, reported only as a sub-benchmark.
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
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	pebblesst "github.com/cockroachdb/pebble/v2/sstable"
	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/sstable"
)

type row struct{ key, value []byte }

// rows reproduces the flush-like load of the sstable package's benchmarks.
var rows = sync.OnceValue(func() []row {
	const n = 100_000
	rng := rand.New(rand.NewPCG(42, 42))
	words := []string{"sediment", "bucket", "tombstone", "partition", "cell", "row", "token", "flush"}
	var out []row
	for p := 0; len(out) < n; p++ {
		pk := binary.BigEndian.AppendUint64(nil, rng.Uint64())
		pk = fmt.Appendf(pk, "user%08d", p)
		for c := range 1 + rng.IntN(4) {
			key := fmt.Appendf(slices.Clone(pk), "ev%010d", c)
			size := 100 + rng.IntN(101)
			v := make([]byte, 0, size+16)
			for len(v) < size {
				if rng.IntN(2) == 0 {
					v = append(v, words[rng.IntN(len(words))]...)
				} else {
					v = binary.BigEndian.AppendUint32(v, rng.Uint32())
				}
			}
			out = append(out, row{key, v[:size]})
		}
	}
	out = out[:n]
	slices.SortFunc(out, func(a, b row) int { return bytes.Compare(a.key, b.key) })
	return out
})

func rawBytes(rs []row) int64 {
	var n int64
	for _, r := range rs {
		n += int64(len(r.key) + len(r.value))
	}
	return n
}

const blockSize = 32 << 10

var ourOptions = sstable.WriterOptions{BlockSize: blockSize, RestartInterval: 16, Compression: sstable.S2, BloomBitsPerKey: 10}

func writeOurs(tb testing.TB, w io.Writer, rs []row) {
	tw := sstable.NewWriter(w, ourOptions)
	for _, r := range rs {
		if err := tw.Add(r.key, r.value); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
}

func pebbleOptions(format pebblesst.TableFormat) pebblesst.WriterOptions {
	return pebblesst.WriterOptions{
		BlockSize:            blockSize,
		BlockRestartInterval: 16,
		IndexBlockSize:       1 << 30, // one index block, as ours
		Compression:          pebblesst.SnappyCompression,
		FilterPolicy:         bloom.FilterPolicy(10),
		FilterType:           pebblesst.TableFilter,
		TableFormat:          format,
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func writePebble(tb testing.TB, w io.Writer, rs []row, format pebblesst.TableFormat) {
	tw := pebblesst.NewWriter(objstorageprovider.NewRemoteWritable(nopCloser{w}), pebbleOptions(format))
	for _, r := range rs {
		if err := tw.Set(r.key, r.value); err != nil {
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
func measureWrite(b *testing.B, name string, rs []row, write func(testing.TB, io.Writer, []row)) (elapsed, cpu time.Duration) {
	elapsed = benchfig.Measure(b, name, func(b *testing.B) {
		b.SetBytes(rawBytes(rs))
		var w countingWriter
		runtime.GC() // do not charge one side for the garbage of the last
		start := cpuTime()
		for b.Loop() {
			w.n = 0
			write(b, &w, rs)
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

func BenchmarkWrite(b *testing.B) {
	rs := rows()
	raw := rawBytes(rs)
	ours, oursCPU := measureWrite(b, "sediment", rs, writeOurs)
	pebble, pebbleCPU := measureWrite(b, "pebble-v4", rs, func(tb testing.TB, w io.Writer, rs []row) {
		writePebble(tb, w, rs, pebblesst.TableFormatPebblev4)
	})
	measureWrite(b, "pebble-v5", rs, func(tb testing.TB, w io.Writer, rs []row) {
		writePebble(tb, w, rs, pebblesst.TableFormatPebblev5)
	})
	if ours > 0 {
		benchfig.Report("sstable.write_rows_per_s", float64(len(rs))/ours.Seconds(), "rows/s")
		benchfig.Report("sstable.write_mb_s", float64(raw)/1e6/ours.Seconds(), "MB/s")
	}
	if s := benchfig.Speedup(ours, pebble); s > 0 {
		benchfig.Report("sstable.write_rows_per_s.vs_pebble", s, "x")
	}
	// CPU time per table is steadier than elapsed time on a busy machine.
	if s := benchfig.Speedup(oursCPU, pebbleCPU); s > 0 {
		benchfig.Report("sstable.write_cpu.vs_pebble", s, "x")
	}
}

func BenchmarkPointGet(b *testing.B) {
	rs := rows()
	ctx := context.Background()

	var ourTable bytes.Buffer
	writeOurs(b, &ourTable, rs)
	r, err := sstable.Open(ctx, sstable.FromReaderAt(bytes.NewReader(ourTable.Bytes())), int64(ourTable.Len()), sstable.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var pebbleTable bytes.Buffer
	writePebble(b, &pebbleTable, rs, pebblesst.TableFormatPebblev4)
	pr, err := pebblesst.NewMemReader(pebbleTable.Bytes(), pebblesst.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer pr.Close()

	var oursCPU, pebbleCPU time.Duration
	ours := benchfig.Measure(b, "sediment", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 1))
		runtime.GC()
		start := cpuTime()
		defer func() { oursCPU = (cpuTime() - start) / time.Duration(b.N) }()
		for b.Loop() {
			k := rs[rng.IntN(len(rs))].key
			if _, ok, err := r.Get(ctx, k); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	pebble := benchfig.Measure(b, "pebble-v4", func(b *testing.B) {
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
			k := rs[rng.IntN(len(rs))].key
			kv := it.SeekGE(k, 0)
			if kv == nil || !bytes.Equal(kv.K.UserKey, k) {
				b.Fatalf("pebble lost %x", k)
			}
			if _, _, err := kv.Value(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	if s := benchfig.Speedup(ours, pebble); s > 0 {
		benchfig.Report("sstable.point_get.vs_pebble", s, "x")
	}
	if s := benchfig.Speedup(oursCPU, pebbleCPU); s > 0 {
		benchfig.Report("sstable.point_get_cpu.vs_pebble", s, "x")
	}
}

// TestSameRows checks that both writers accept the rows and both readers
// return them, so the benchmarks compare equal work.
func TestSameRows(t *testing.T) {
	rs := rows()[:5000]
	var ours, theirs bytes.Buffer
	writeOurs(t, &ours, rs)
	writePebble(t, &theirs, rs, pebblesst.TableFormatPebblev4)
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
		v, ok, err := r.Get(context.Background(), row.key)
		if !ok || err != nil || !bytes.Equal(v, row.value) {
			t.Fatalf("sediment Get(%x): %v %v", row.key, ok, err)
		}
		kv := it.SeekGE(row.key, 0)
		if kv == nil || !bytes.Equal(kv.K.UserKey, row.key) {
			t.Fatalf("pebble SeekGE(%x) missed", row.key)
		}
		pv, _, err := kv.Value(nil)
		if err != nil || !bytes.Equal(pv, row.value) {
			t.Fatalf("pebble value of %x: %v", row.key, err)
		}
	}
	t.Logf("sizes: sediment %d bytes, pebble %d bytes", ours.Len(), theirs.Len())
}
