package compactor

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sedimentdb/sediment/manifest"
)

// BenchmarkPlan plans a table of 16 ranges whose levels hold n SSTables
// each, with L0 at its threshold: the planner's cost per pass and table.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("sstables_per_level=%d", n), func(b *testing.B) {
			s := DefaultStrategy()
			s.BaseLevelSize = s.TargetSize
			rng := rand.New(rand.NewPCG(1, 1))
			snap := Snapshot{Table: planTable, Ranges: map[int][]manifest.SSTable{}}
			for r := range 16 {
				var ts []manifest.SSTable
				for i := range s.L0Threshold {
					ts = append(ts, tsst(fmt.Sprintf("%d-0-%d", r, i), 0, 0, 1<<40, s.TargetSize/8, i))
				}
				for l := 1; l < NumLevels; l++ {
					// Each level 10% over its target (the last 10 times
					// the one above): a table some flushes behind.
					size := s.LevelTarget(min(l, NumLevels-2)) / 10 * 11
					if l == NumLevels-1 {
						size *= int64(s.Fanout)
					}
					for i := range n {
						w := int64(1<<40) / int64(n)
						ts = append(ts, tsst(fmt.Sprintf("%d-%d-%d", r, l, i), l, int64(i)*w, int64(i+1)*w-1, size/int64(n)/2+rng.Int64N(size/int64(n)), 0))
					}
				}
				snap.Ranges[r] = ts
			}
			b.ReportAllocs()
			plans := 0
			for b.Loop() {
				plans = len(s.Plan(snap, nil))
			}
			b.ReportMetric(float64(plans), "plans/op")
		})
	}
}

// BenchmarkSimulatedAmplification runs the convergence simulation at the
// default ratios (sizes scaled down) and reports its amplification: a
// model, not a measurement of data in a bucket.
func BenchmarkSimulatedAmplification(b *testing.B) {
	s := Strategy{TargetSize: 256, Fanout: 10, L0Threshold: 4, L0Limit: 20, BaseLevelSize: 64, MaxInputBytes: 2048}
	var wa float64
	var ra int
	for b.Loop() {
		m := &lsm{s: s, rng: rand.New(rand.NewPCG(7, 7))}
		for range 2000 {
			m.flush(4)
			for _, p := range s.Plan(m.snapshot(), nil) {
				m.run(b, p)
			}
			m.maxReadAmp = max(m.maxReadAmp, readAmp(m.tables))
		}
		wa, ra = 1+float64(m.written)/float64(m.flushed), m.maxReadAmp
	}
	b.ReportMetric(wa, "write_amp")
	b.ReportMetric(float64(ra), "max_read_amp")
}
