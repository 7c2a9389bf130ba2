package cache

import (
	"context"
	"hash/maphash"
	"sync"
)

// entryOverhead approximates the memory an entry costs beyond its value and
// object name: the clock node, the map slot and the slice header.
const entryOverhead = 128

// minShardBytes keeps shards large enough that a typical block fits in one
// with plenty of room: a value heavier than its shard's share is not cached.
const minShardBytes = 1 << 20

// Memory is a byte-bounded in-memory tier with CLOCK eviction, an
// approximation of least recently used. Keys are spread over shards, each
// with its own lock and an equal share of the bound, so the bytes held never
// exceed the bound, not even transiently.
type Memory struct {
	seed   maphash.Seed
	shards []memShard
	mask   uint64
	flight flight[Key]
}

var _ Tier = (*Memory)(nil)

type memShard struct {
	mu    sync.Mutex
	clock *clock[Key, []byte]
	stats Stats // Bytes and Entries are read from the clock
	_     [64]byte
}

// NewMemory returns a memory tier holding at most maxBytes.
func NewMemory(maxBytes int64, o Options) *Memory {
	n := 16
	for n > 1 && maxBytes/int64(n) < minShardBytes {
		n /= 2
	}
	m := &Memory{seed: maphash.MakeSeed(), shards: make([]memShard, n), mask: uint64(n - 1)}
	for i := range m.shards {
		s := &m.shards[i]
		s.clock = newClock(maxBytes/int64(n), func(Key, []byte) { s.stats.Evictions++ })
	}
	registerMetrics(o.Registerer, "memory", o, m.Stats)
	return m
}

// weigh counts the capacity of a value, not its length: a short value cut
// from a larger buffer keeps all of it alive.
func weigh(key Key, v []byte) int64 {
	return int64(cap(v)) + int64(len(key.Object)) + entryOverhead
}

func (m *Memory) shard(key Key) *memShard {
	h := maphash.String(m.seed, key.Object) ^ uint64(key.Offset)*0x9e3779b97f4a7c15
	h ^= h >> 29
	return &m.shards[h&m.mask]
}

// Get implements Tier.
func (m *Memory) Get(ctx context.Context, key Key, load LoadFunc) ([]byte, error) {
	s := m.shard(key)
	s.mu.Lock()
	v, ok := s.clock.get(key)
	if ok {
		s.stats.Hits++
	} else {
		s.stats.Misses++
	}
	s.mu.Unlock()
	if ok {
		return v, nil
	}
	return m.flight.do(ctx, key, func(ctx context.Context) ([]byte, error) {
		s.mu.Lock()
		v, ok := s.clock.peek(key) // filled by a load that finished after our lookup
		s.mu.Unlock()
		if ok {
			return v, nil
		}
		v, err := load(ctx)
		s.mu.Lock()
		if err != nil {
			if ctx.Err() == nil { // not abandoned by every caller
				s.stats.LoadErrors++
			}
		} else {
			s.clock.add(key, v, weigh(key, v))
		}
		s.mu.Unlock()
		return v, err
	})
}

// Stats returns the tier's counters.
func (m *Memory) Stats() Stats {
	var total Stats
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		st := s.stats
		st.Bytes, st.Entries = s.clock.size, int64(s.clock.len())
		s.mu.Unlock()
		total.add(st)
	}
	return total
}

// MaxBytes returns the bound on the bytes the tier holds.
func (m *Memory) MaxBytes() int64 { return m.shards[0].clock.limit * int64(len(m.shards)) }
