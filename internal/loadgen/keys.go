package loadgen

import (
	"math/rand/v2"
	"sync/atomic"
)

// keyGen draws key indexes in [0, n). A keyGen belongs to one worker, except
// that sequential ones share their counter.
type keyGen interface {
	next() int64
}

// newKeyGen returns a generator of the distribution dist over [0, n) drawing
// from r; seq is the counter that sequential generators of a run share.
func newKeyGen(dist string, n int64, zipfS float64, r *rand.Rand, seq *atomic.Int64) keyGen {
	switch dist {
	case Sequential:
		return sequentialKeys{n: n, seq: seq}
	case Zipfian:
		return zipfKeys{z: rand.NewZipf(r, zipfS, 1, uint64(n-1))}
	default:
		return uniformKeys{n: n, r: r}
	}
}

type uniformKeys struct {
	n int64
	r *rand.Rand
}

func (g uniformKeys) next() int64 { return g.r.Int64N(g.n) }

// sequentialKeys hands out 0, 1, 2... across every worker of a run, wrapping
// around at n.
type sequentialKeys struct {
	n   int64
	seq *atomic.Int64
}

func (g sequentialKeys) next() int64 { return (g.seq.Add(1) - 1) % g.n }

// zipfKeys draws k with probability proportional to (1+k)^-s: key 0 is the
// hottest.
type zipfKeys struct{ z *rand.Zipf }

func (g zipfKeys) next() int64 { return int64(g.z.Uint64()) }
