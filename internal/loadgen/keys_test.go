package loadgen

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// TestZipfian checks the frequency of the hottest keys against the
// distribution P(k) = (1+k)^-s / H, H = sum over the key space of (1+k)^-s.
func TestZipfian(t *testing.T) {
	const n, draws = 1000, 200_000
	for _, s := range []float64{1.1, 1.5} {
		g := newKeyGen(Zipfian, n, s, rand.New(rand.NewPCG(7, 9)), nil)
		counts := make([]int, n)
		for range draws {
			k := g.next()
			if k < 0 || k >= n {
				t.Fatalf("key %d out of [0, %d)", k, n)
			}
			counts[k]++
		}
		var h float64
		for k := range n {
			h += math.Pow(1+float64(k), -s)
		}
		for k := range 3 {
			p := math.Pow(1+float64(k), -s) / h
			// Five standard deviations of a binomial count.
			sigma := math.Sqrt(draws * p * (1 - p))
			if d := math.Abs(float64(counts[k]) - draws*p); d > 5*sigma {
				t.Errorf("s=%g: key %d drawn %d times, want %.0f ± %.0f", s, k, counts[k], draws*p, 5*sigma)
			}
		}
		if counts[0] <= counts[1] || counts[1] <= counts[2] {
			t.Errorf("s=%g: the hottest keys are not in order: %v", s, counts[:3])
		}
	}
}

func TestUniform(t *testing.T) {
	const n, draws = 10, 100_000
	g := newKeyGen(Uniform, n, 0, rand.New(rand.NewPCG(1, 2)), nil)
	counts := make([]int, n)
	for range draws {
		counts[g.next()]++
	}
	sigma := math.Sqrt(draws * 0.1 * 0.9)
	for k, c := range counts {
		if math.Abs(float64(c)-draws/n) > 5*sigma {
			t.Errorf("key %d drawn %d times, want %d ± %.0f", k, c, draws/n, 5*sigma)
		}
	}
}

// TestSequential: generators of one run share the counter and wrap around.
func TestSequential(t *testing.T) {
	var seq atomic.Int64
	a := newKeyGen(Sequential, 3, 0, nil, &seq)
	b := newKeyGen(Sequential, 3, 0, nil, &seq)
	var got []int64
	for range 4 {
		got = append(got, a.next(), b.next())
	}
	want := []int64{0, 1, 2, 0, 1, 2, 0, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sequential keys %v, want %v", got, want)
		}
	}
}
