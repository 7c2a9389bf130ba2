package commitlog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sedimentdb/sediment/internal/benchfig"
)

// benchAppends appends b.N records of size bytes from the given number of
// concurrent writers to a log on the operating system's file system, so
// fsync has its real cost.
func benchAppends(b *testing.B, mode SyncMode, writers, size int) {
	l, err := Open(Options{Dir: b.TempDir(), Sync: mode})
	if err != nil {
		b.Fatal(err)
	}
	rec := make([]byte, size)
	for i := range rec {
		rec[i] = byte(i)
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if _, err := l.Append(context.Background(), rec); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	s := l.Stats()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	if s.Syncs > 0 {
		b.ReportMetric(float64(s.Appends)/float64(s.Syncs), "records/sync")
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAppend sweeps record size and writer count in Batch mode, with
// Periodic mode for reference.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{100, 1024} {
		for _, writers := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("mode=batch/record=%dB/writers=%d", size, writers), func(b *testing.B) {
				benchAppends(b, Batch, writers, size)
			})
		}
		b.Run(fmt.Sprintf("mode=periodic/record=%dB/writers=1", size), func(b *testing.B) {
			benchAppends(b, Periodic, 1, size)
		})
	}
}

// BenchmarkGroupCommit reports how many times more appends per second 64
// writers achieve than one writer, whose every append waits for its own
// fsync: the gain from committing concurrent appends with one fsync. The
// figure is commitlog.group_commit_<size>B.speedup.
func BenchmarkGroupCommit(b *testing.B) {
	for _, size := range []int{100, 1024} {
		one := benchfig.Measure(b, fmt.Sprintf("record=%dB/writers=1", size), func(b *testing.B) {
			benchAppends(b, Batch, 1, size)
		})
		many := benchfig.Measure(b, fmt.Sprintf("record=%dB/writers=64", size), func(b *testing.B) {
			benchAppends(b, Batch, 64, size)
		})
		benchfig.Report(fmt.Sprintf("commitlog.group_commit_%dB.speedup", size), benchfig.Speedup(many, one), "x")
	}
}
