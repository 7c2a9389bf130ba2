// Package benchfig reports the figures that `make bench` prints: named values,
// usually ratios of two implementations measured side by side in one run.
//
// A comparative benchmark runs each side as a sub-benchmark through Measure,
// then reports the ratio with Report. `make bench` collects the lines Report
// prints and lists them, one per figure, after the usual benchmark output.
package benchfig

import (
	"fmt"
	"testing"
	"time"
)

// Prefix starts every figure line in benchmark output.
const Prefix = "figure: "

// Report prints one figure as "figure: <name> <value> <unit>".
func Report(name string, value float64, unit string) {
	fmt.Printf("%s%s %.4g %s\n", Prefix, name, value, unit)
}

// Measure runs f as the sub-benchmark name of b and returns the time per
// operation of its final (largest) run. It returns 0 if the sub-benchmark was
// filtered out by -bench or failed.
func Measure(b *testing.B, name string, f func(b *testing.B)) time.Duration {
	var perOp time.Duration
	b.Run(name, func(b *testing.B) {
		f(b)
		if b.N > 0 {
			perOp = b.Elapsed() / time.Duration(b.N)
		}
	})
	return perOp
}

// Speedup returns how many times faster ours is than anchor (anchor/ours),
// or 0 when either side did not run.
func Speedup(ours, anchor time.Duration) float64 {
	if ours <= 0 || anchor <= 0 {
		return 0
	}
	return float64(anchor) / float64(ours)
}

// Rounds is how many times a comparison runs each of its sides, taking turns,
// before it reports; see Best.
const Rounds = 5

// Best keeps, for each quantity of a comparison, the smallest positive time
// observed over the rounds. Sides that take turns share a busy machine's
// disturbance, and the fastest of several runs is the least disturbed, so
// ratios of bests are steadier than ratios of single runs.
type Best []time.Duration

// Observe records one round's times, always in the same order.
func (b *Best) Observe(times ...time.Duration) {
	if *b == nil {
		*b = make(Best, len(times))
	}
	for i, t := range times {
		if t > 0 && ((*b)[i] == 0 || t < (*b)[i]) {
			(*b)[i] = t
		}
	}
}
