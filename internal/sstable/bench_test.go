package sstable

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/internal/workload"
)

// flushRows is the flush-like load shared with the comparison against Pebble
// in the bench module.
var flushRows = sync.OnceValue(func() []entry {
	var es []entry
	for _, r := range workload.FlushRows(100_000) {
		es = append(es, entry{r.Key, r.Value})
	}
	return es
})

func rawSize(es []entry) int64 {
	var n int64
	for _, e := range es {
		n += int64(len(e.key) + len(e.value))
	}
	return n
}

// splitPartition is the partition prefix of flushRows keys.
func splitPartition(k []byte) int { return min(len(k), 20) }

func writeRows(b *testing.B, w io.Writer, es []entry, opts WriterOptions) *Properties {
	tw := NewWriter(w, opts)
	for _, e := range es {
		if err := tw.Add(e.key, e.value); err != nil {
			b.Fatal(err)
		}
	}
	p, err := tw.Close()
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkWriterSweep flushes flushRows to a local file for each block
// size and write buffer size (s2 compression).
func BenchmarkWriterSweep(b *testing.B) {
	es := flushRows()
	dir := b.TempDir()
	for _, block := range []int{4, 8, 16, 32, 64, 128} {
		for _, buffer := range []int{8, 16, 32, 64, 128, 256} {
			b.Run(fmt.Sprintf("block=%dKiB/buffer=%dKiB", block, buffer), func(b *testing.B) {
				opts := WriterOptions{BlockSize: block << 10, BufferSize: buffer << 10, Compression: S2, Split: splitPartition}
				benchmarkFlush(b, es, opts, filepath.Join(dir, "t.sst"))
			})
		}
	}
}

// BenchmarkWriterCompression flushes flushRows with each codec at the
// default block and buffer sizes.
func BenchmarkWriterCompression(b *testing.B) {
	es := flushRows()
	dir := b.TempDir()
	for _, c := range compressions {
		b.Run(c.String(), func(b *testing.B) {
			benchmarkFlush(b, es, WriterOptions{Compression: c, Split: splitPartition}, filepath.Join(dir, "t.sst"))
		})
	}
}

func benchmarkFlush(b *testing.B, es []entry, opts WriterOptions, path string) {
	b.SetBytes(rawSize(es))
	b.ReportAllocs()
	var p *Properties
	cpu := cpuTime()
	for b.Loop() {
		f, err := vfs.Default.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		p = writeRows(b, f, es, opts)
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	cpu = cpuTime() - cpu
	b.ReportMetric(float64(len(es))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(len(es))*float64(b.N)/cpu.Seconds(), "rows/cpu-s")
	b.ReportMetric(float64(p.DataSize)/float64(rawSize(es)), "ratio")
}

// cpuTime is the process's user and system CPU time. On a shared machine it
// measures a benchmark's own work better than elapsed time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGet measures point reads of present keys from a table held in
// memory, per block size: the cost of fetching, checking, decompressing and
// searching one block.
func BenchmarkGet(b *testing.B) {
	es := flushRows()
	for _, block := range []int{4, 8, 16, 32, 64, 128} {
		b.Run(fmt.Sprintf("block=%dKiB", block), func(b *testing.B) {
			var buf bytes.Buffer
			writeRows(b, &buf, es, WriterOptions{BlockSize: block << 10, Compression: S2, Split: splitPartition})
			r, err := Open(context.Background(), FromReaderAt(bytes.NewReader(buf.Bytes())), int64(buf.Len()), ReaderOptions{Split: splitPartition})
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			ctx := context.Background()
			before := r.Stats()
			cpu := cpuTime()
			for b.Loop() {
				e := es[rng.IntN(len(es))]
				if _, ok, err := r.Get(ctx, e.key); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			st := r.Stats()
			b.ReportMetric(float64(st.BlockReads-before.BlockReads)/float64(b.N), "blocks/op")
			b.ReportMetric(float64(st.BlockBytes-before.BlockBytes)/float64(b.N), "fetched-B/op")
		})
	}
}

// BenchmarkCRCFraction compares the time of a flush (defaults, s2, to
// io.Discard so I/O does not dilute the fraction) with the time of
// computing CRC-32C over every byte the flush checksums.
func BenchmarkCRCFraction(b *testing.B) {
	es := flushRows()
	opts := WriterOptions{Compression: S2, Split: splitPartition}
	var table bytes.Buffer
	writeRows(b, &table, es, opts)
	flush := benchfig.Measure(b, "flush", func(b *testing.B) {
		b.SetBytes(rawSize(es))
		for b.Loop() {
			writeRows(b, io.Discard, es, opts)
		}
	})
	crc := benchfig.Measure(b, "crc32c", func(b *testing.B) {
		b.SetBytes(int64(table.Len()))
		for b.Loop() {
			crc32.Checksum(table.Bytes(), crcTable)
		}
	})
	if flush > 0 && crc > 0 {
		benchfig.Report("sstable.crc_fraction", float64(crc)/float64(flush), "fraction")
	}
}
