package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/benchfig"
)

// BenchmarkCeiling runs the write and read workloads with the defaults of
// `sediment bench` (64 in flight, 2 connections, 100-byte rows) against the
// null server: b.N operations each. The ops/s metric and figure count the
// workload alone; ns/op also includes connecting.
func BenchmarkCeiling(b *testing.B) {
	for _, w := range []string{Write, Read} {
		var opsPerSec float64
		b.Run("workload="+w, func(b *testing.B) {
			c := DefaultConfig()
			c.Workload, c.Ceiling, c.Duration, c.Count = w, true, 0, int64(b.N)
			rep, err := Run(context.Background(), c, nil)
			if err != nil {
				b.Fatal(err)
			}
			if rep.Errors > 0 {
				b.Fatalf("%d errors: %s", rep.Errors, rep.FirstError)
			}
			opsPerSec = rep.OpsPerSec
			b.ReportMetric(rep.OpsPerSec, "ops/s")
			b.ReportMetric(rep.Latency.P99, "p99-ms")
		})
		if opsPerSec > 0 {
			benchfig.Report("loadgen.ceiling."+w+"_ops_s", opsPerSec, "ops/s")
		}
	}
}

// BenchmarkRecord measures the recorder that every worker shares, from as
// many goroutines as GOMAXPROCS: its lock must cost little next to a round
// trip.
func BenchmarkRecord(b *testing.B) {
	r := newRecorder()
	b.RunParallel(func(pb *testing.PB) {
		d := 100 * time.Microsecond
		for pb.Next() {
			r.record(opRead, d, nil, 1)
			d += time.Microsecond
		}
	})
}
