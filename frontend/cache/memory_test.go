package cache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// valueOf is the content the tests' backing store holds for a key: bytes
// that differ between keys, cheap to generate under -race.
func valueOf(key Key) []byte {
	b := make([]byte, key.Length)
	x := uint64(key.Offset)*0x9e3779b97f4a7c15 ^ uint64(key.Length)<<32 ^ uint64(len(key.Object))
	for _, c := range []byte(key.Object) {
		x = x*31 + uint64(c)
	}
	var pattern [64]byte
	for i := 0; i < len(pattern); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(pattern[i:], x)
	}
	// Repeat the pattern by doubling: few, large copies.
	for n := copy(b, pattern[:]); n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
	return b
}

// counting is a backing store that counts its loads.
type counting struct{ loads atomic.Int64 }

func (c *counting) load(key Key) LoadFunc {
	return func(context.Context) ([]byte, error) {
		c.loads.Add(1)
		return valueOf(key), nil
	}
}

func checkValue(t *testing.T, key Key, v []byte, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("get %v: %v", key, err)
	}
	if want := valueOf(key); string(v) != string(want) {
		t.Fatalf("get %v: wrong bytes (len %d, want %d)", key, len(v), len(want))
	}
}

func TestMemoryHitMiss(t *testing.T) {
	m := NewMemory(1<<20, Options{})
	var src counting
	k := Key{Object: "obj", Offset: 4096, Length: 1000}
	for range 3 {
		v, err := m.Get(t.Context(), k, src.load(k))
		checkValue(t, k, v, err)
	}
	if n := src.loads.Load(); n != 1 {
		t.Fatalf("%d loads, want 1", n)
	}
	s := m.Stats()
	if s.Hits != 2 || s.Misses != 1 || s.Entries != 1 || s.Bytes != weigh(k, valueOf(k)) {
		t.Fatalf("stats %+v", s)
	}
}

func TestMemoryLoadErrorNotCached(t *testing.T) {
	m := NewMemory(1<<20, Options{})
	k := Key{Object: "obj", Length: 10}
	boom := errors.New("boom")
	_, err := m.Get(t.Context(), k, func(context.Context) ([]byte, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	var src counting
	v, err := m.Get(t.Context(), k, src.load(k))
	checkValue(t, k, v, err)
	if s := m.Stats(); s.LoadErrors != 1 || s.Misses != 2 || src.loads.Load() != 1 {
		t.Fatalf("stats %+v, loads %d", s, src.loads.Load())
	}
}

func TestMemoryTooLargeIsNotKept(t *testing.T) {
	m := NewMemory(64<<10, Options{})
	k := Key{Object: "obj", Length: 64 << 10}
	var src counting
	for range 2 {
		v, err := m.Get(t.Context(), k, src.load(k))
		checkValue(t, k, v, err)
	}
	if src.loads.Load() != 2 || m.Stats().Bytes != 0 {
		t.Fatalf("loads %d, stats %+v", src.loads.Load(), m.Stats())
	}
}

func TestMemorySingleFlight(t *testing.T) {
	m := NewMemory(1<<20, Options{})
	k := Key{Object: "obj", Length: 100}
	var loads atomic.Int32
	release := make(chan struct{})
	const n = 32
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			v, err := m.Get(t.Context(), k, func(context.Context) ([]byte, error) {
				loads.Add(1)
				<-release
				return valueOf(k), nil
			})
			checkValue(t, k, v, err)
		})
	}
	// Release the load once every goroutine has missed.
	testwait.For(t, "every reader to miss", func() bool { return m.Stats().Misses >= n })
	close(release)
	testwait.Wait(t, "the readers", &wg)
	if loads.Load() != 1 {
		t.Fatalf("%d loads, want 1", loads.Load())
	}
}

// TestMemoryBound runs a random concurrent workload and checks after every
// Get that the bytes held never exceed the bound, and that every value is
// the right one.
func TestMemoryBound(t *testing.T) {
	// One shard, four shards of 1 MiB, and sixteen that hold the whole key
	// space of about 13 MiB.
	for _, limit := range []int64{100 << 10, 4 << 20, 32 << 20} {
		t.Run(fmt.Sprintf("limit=%dKiB", limit>>10), func(t *testing.T) {
			m := NewMemory(limit, Options{})
			var wg sync.WaitGroup
			ops := 1500
			if testing.Short() {
				ops = 300
			}
			var src counting
			for g := range 4 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(g), uint64(limit)))
					for range ops {
						off := rng.IntN(1600)
						k := Key{Object: fmt.Sprintf("obj-%d", off%8), Offset: int64(off) << 14, Length: int64(off*263%(16<<10) + 1)}
						v, err := m.Get(t.Context(), k, src.load(k))
						checkValue(t, k, v, err)
						if s := m.Stats(); s.Bytes > m.MaxBytes() {
							t.Errorf("holding %d bytes, bound %d", s.Bytes, m.MaxBytes())
							return
						}
					}
				})
			}
			wg.Wait()
			s := m.Stats()
			if s.Hits+s.Misses != uint64(4*ops) || (s.Evictions == 0) != (limit == 32<<20) {
				t.Fatalf("stats %+v", s)
			}
			for i := range m.shards {
				sh := &m.shards[i]
				if sh.clock.size > sh.clock.limit {
					t.Fatalf("shard %d holds %d of %d", i, sh.clock.size, sh.clock.limit)
				}
			}
		})
	}
}

func TestMetricsTwoCachesOneRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	a := NewMemory(1<<20, Options{Name: "a", Registerer: reg})
	b := NewMemory(1<<20, Options{Name: "b", Registerer: reg})
	d, err := OpenDisk(vfs.Default, t.TempDir(), 1<<20, Options{Name: "a", Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Object: "o", Length: 10}
	var src counting
	for range 3 {
		a.Get(t.Context(), k, src.load(k))
	}
	b.Get(t.Context(), k, src.load(k))
	d.Get(t.Context(), k, func(context.Context) ([]byte, error) { return nil, errors.New("boom") })
	want := map[string]float64{
		"sediment_cache_hits_total{cache=a,tier=memory}":        2,
		"sediment_cache_misses_total{cache=a,tier=memory}":      1,
		"sediment_cache_misses_total{cache=b,tier=memory}":      1,
		"sediment_cache_entries{cache=b,tier=memory}":           1,
		"sediment_cache_bytes{cache=a,tier=memory}":             float64(weigh(k, valueOf(k))),
		"sediment_cache_load_errors_total{cache=a,tier=disk}":   1,
		"sediment_cache_corrupt_total{cache=a,tier=disk}":       0,
		"sediment_cache_evictions_total{cache=a,tier=disk}":     0,
		"sediment_cache_load_errors_total{cache=b,tier=memory}": 0,
	}
	got := gather(t, reg)
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, v)
		}
	}
}

// gather returns every sample of reg as "name{label=value,...}" -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					name += ","
				}
				name += l.GetName() + "=" + l.GetValue()
			}
			name += "}"
			switch {
			case m.GetCounter() != nil:
				out[name] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[name] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
