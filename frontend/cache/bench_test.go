package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/vfs"
)

var sink []byte

// benchKeys returns n block keys and a random order in which to read them.
func benchKeys(n, blockSize int) ([]Key, []int) {
	keys := make([]Key, n)
	for i := range keys {
		keys[i] = Key{Object: fmt.Sprintf("tables/ks/t/%06d.sst", i/64), Offset: int64(i%64) * int64(blockSize), Length: int64(blockSize)}
	}
	order := make([]int, 1<<16)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range order {
		order[i] = rng.IntN(n)
	}
	return keys, order
}

func failLoad(context.Context) ([]byte, error) { panic("cache: benchmark missed") }

// measureLatency times every operation of a sub-benchmark and returns the
// 50th and 99th percentiles. Each sample includes the cost of reading the
// clock, reported as timer-ns.
func measureLatency(b *testing.B, op func(i int)) (p50, p99 time.Duration) {
	b.Run("latency", func(b *testing.B) {
		samples := make([]time.Duration, b.N)
		b.ResetTimer()
		for i := range b.N {
			start := time.Now()
			op(i)
			samples[i] = time.Since(start)
		}
		slices.Sort(samples)
		p50, p99 = samples[len(samples)/2], samples[len(samples)*99/100]
		b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
		var timer time.Duration
		for range 1000 {
			start := time.Now()
			timer += time.Since(start)
		}
		b.ReportMetric(float64(timer.Nanoseconds())/1000, "timer-ns")
	})
	return p50, p99
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// BenchmarkMemoryHit reads blocks that are all held, in random order, from
// the memory tier and, as the anchor, from a plain map of the same bytes.
func BenchmarkMemoryHit(b *testing.B) {
	for _, kib := range []int{4, 32, 128} {
		b.Run(fmt.Sprintf("block=%dKiB", kib), func(b *testing.B) {
			keys, order := benchKeys(1024, kib<<10)
			m := NewMemory(int64(len(keys))*int64(kib<<10)*2, Options{})
			plain := make(map[Key][]byte, len(keys))
			for _, k := range keys {
				v := make([]byte, k.Length)
				plain[k] = v
				m.Get(context.Background(), k, func(context.Context) ([]byte, error) { return v, nil })
			}
			if s := m.Stats(); s.Entries != int64(len(keys)) {
				b.Fatalf("prefill kept %d of %d blocks", s.Entries, len(keys))
			}
			ctx := context.Background()
			mapTime := benchfig.Measure(b, "map", func(b *testing.B) {
				b.SetBytes(int64(kib << 10))
				for i := 0; b.Loop(); i++ {
					sink = plain[keys[order[i&(len(order)-1)]]]
				}
			})
			cacheTime := benchfig.Measure(b, "cache", func(b *testing.B) {
				b.SetBytes(int64(kib << 10))
				for i := 0; b.Loop(); i++ {
					sink, _ = m.Get(ctx, keys[order[i&(len(order)-1)]], failLoad)
				}
			})
			p50, p99 := measureLatency(b, func(i int) {
				sink, _ = m.Get(ctx, keys[order[i&(len(order)-1)]], failLoad)
			})
			if kib == 32 {
				if r := benchfig.Speedup(cacheTime, mapTime); r > 0 {
					benchfig.Report("cache.memory_hit.vs_map", r, "x")
				}
				if p50 > 0 {
					benchfig.Report("cache.memory_hit_p50_us", us(p50), "us")
					benchfig.Report("cache.memory_hit_p99_us", us(p99), "us")
				}
			}
		})
	}
}

// BenchmarkDiskHit reads blocks that are all held, in random order, from the
// disk tier: open, read, verify the checksum and the key, close. The files
// are fresh, so the operating system's page cache likely holds them.
func BenchmarkDiskHit(b *testing.B) {
	for _, kib := range []int{4, 32, 128} {
		b.Run(fmt.Sprintf("block=%dKiB", kib), func(b *testing.B) {
			keys, order := benchKeys(256, kib<<10)
			d, err := OpenDisk(vfs.Default, b.TempDir(), int64(len(keys))*int64(kib<<10)*2, Options{})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for _, k := range keys {
				v := make([]byte, k.Length)
				d.Get(ctx, k, func(context.Context) ([]byte, error) { return v, nil })
			}
			if s := d.Stats(); s.Entries != int64(len(keys)) {
				b.Fatalf("prefill kept %d of %d blocks", s.Entries, len(keys))
			}
			b.Run("get", func(b *testing.B) {
				b.SetBytes(int64(kib << 10))
				for i := 0; b.Loop(); i++ {
					sink, _ = d.Get(ctx, keys[order[i&(len(order)-1)]], failLoad)
				}
			})
			p50, p99 := measureLatency(b, func(i int) {
				sink, _ = d.Get(ctx, keys[order[i&(len(order)-1)]], failLoad)
			})
			if kib == 32 && p50 > 0 {
				benchfig.Report("cache.disk_hit_p50_us", us(p50), "us")
				benchfig.Report("cache.disk_hit_p99_us", us(p99), "us")
			}
		})
	}
}

// BenchmarkReaderAtHit reads 32 KiB blocks through the ReadAt adapter over a
// memory tier: a hit plus the copy into the caller's buffer.
func BenchmarkReaderAtHit(b *testing.B) {
	const size = 32 << 10
	src := &object{data: make([]byte, 64*size)}
	r := NewReaderAt(NewMemory(8*int64(len(src.data)), Options{}), "sst", src)
	p := make([]byte, size)
	ctx := context.Background()
	for i := range 64 {
		r.ReadAt(ctx, p, int64(i*size))
	}
	b.SetBytes(size)
	for i := 0; b.Loop(); i++ {
		if _, err := r.ReadAt(ctx, p, int64(i%64*size)); err != nil {
			b.Fatal(err)
		}
	}
	if src.reads.Load() != 64 {
		b.Fatalf("%d source reads, want 64", src.reads.Load())
	}
}
