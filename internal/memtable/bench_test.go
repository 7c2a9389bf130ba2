package memtable

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchKeys returns n keys of a random 8-byte token and 24 more bytes.
func benchKeys(n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, n)
	buf := make([]byte, n*32)
	for i := range keys {
		k := buf[i*32 : (i+1)*32 : (i+1)*32]
		for j := range k {
			k[j] = byte(rng.Uint32())
		}
		keys[i] = k
	}
	return keys
}

func BenchmarkSet(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			keys := benchKeys(n)
			value := make([]byte, 100)
			b.SetBytes(int64(n * (32 + len(value))))
			for range b.N {
				m := New(Options{})
				for i, k := range keys {
					if err := m.Set(k, value); err != nil {
						b.Fatal(err)
					}
					if i%128 == 127 {
						m.Commit()
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/set")
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			keys := benchKeys(n)
			m := New(Options{})
			for _, k := range keys {
				if err := m.Set(k, make([]byte, 100)); err != nil {
					b.Fatal(err)
				}
			}
			m.Commit()
			s := m.Snapshot()
			rng := rand.New(rand.NewPCG(3, 4))
			b.ResetTimer()
			for range b.N {
				if _, ok := s.Get(keys[rng.IntN(n)]); !ok {
					b.Fatal("missing key")
				}
			}
		})
	}
}

// BenchmarkScan walks a snapshot of n entries forwards or backwards; the
// reported ns/entry is the cost of one step.
func BenchmarkScan(b *testing.B) {
	const n = 100_000
	m := New(Options{})
	for _, k := range benchKeys(n) {
		if err := m.Set(k, make([]byte, 100)); err != nil {
			b.Fatal(err)
		}
	}
	m.Commit()
	s := m.Snapshot()
	for _, dir := range []string{"forward", "reverse"} {
		b.Run(dir, func(b *testing.B) {
			it := s.NewIter(nil, nil)
			for range b.N {
				count := 0
				if dir == "forward" {
					for ok := it.First(); ok; ok = it.Next() {
						count++
					}
				} else {
					for ok := it.Last(); ok; ok = it.Prev() {
						count++
					}
				}
				if count != n {
					b.Fatalf("scanned %d entries, want %d", count, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
		})
	}
}
