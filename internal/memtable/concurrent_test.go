package memtable

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sedimentdb/sediment/internal/testwait"
)

// TestConcurrentSnapshots runs the writer against readers that check every
// snapshot they take against the model of the commit it pinned, and check
// older snapshots again later: a snapshot must never change.
func TestConcurrentSnapshots(t *testing.T) {
	batches, readers := 300, 3
	if testing.Short() {
		batches = 100
	}
	rng := rand.New(rand.NewPCG(7, 8))
	gen := newKeyGen(rng)
	pool := make([][]byte, 400)
	for i := range pool {
		pool[i] = gen.key()
	}
	type set struct{ k, v []byte }
	work := make([][]set, batches)
	// states[c] is the model after c commits.
	states := []*model{{values: map[string]string{}}}
	for c := range work {
		md := states[c].clone()
		for range 1 + rng.IntN(16) {
			k := pool[rng.IntN(len(pool))]
			v := gen.value()
			if md.set(string(k), string(v)) != nil {
				continue // a failing merge; TestModel covers it
			}
			work[c] = append(work[c], set{k, v})
		}
		if len(work[c]) == 0 {
			work[c] = append(work[c], set{pool[0], []byte{1}})
			md.set(string(pool[0]), "\x01")
		}
		states = append(states, md)
	}

	m := New(Options{Merge: maxMerge, ChunkSize: 4096})
	// commits maps each published horizon to its commit number. The writer
	// records a horizon before publishing it.
	var commits sync.Map
	commits.Store(m.published.Load(), 0)
	var done atomic.Bool
	var checked atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		defer done.Store(true)
		for c, b := range work {
			for _, s := range b {
				if err := m.Set(s.k, s.v); err != nil {
					t.Error(err)
					return
				}
			}
			commits.Store(uint32(m.pos), c+1)
			m.Commit()
			runtime.Gosched() // let readers in between commits
		}
	})
	for r := range readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 9))
			type pinned struct {
				s  Snapshot
				md *model
			}
			var old []pinned
			check := func(p pinned) bool {
				checked.Add(1)
				if err := verify(p.s, p.md, rng, pool); err != nil {
					t.Errorf("reader %d: %v", r, err)
					return false
				}
				return true
			}
			// Bounded, so that -race stays quick if the writer is starved.
			for i := 0; i < 150 && !done.Load(); i++ {
				s := m.Snapshot()
				c, ok := commits.Load(s.horizon)
				if !ok {
					t.Errorf("reader %d: horizon %d was never committed", r, s.horizon)
					return
				}
				p := pinned{s, states[c.(int)]}
				if !check(p) {
					return
				}
				old = append(old, p)
				if !check(old[rng.IntN(len(old))]) {
					return
				}
			}
			for _, p := range old {
				if !check(p) {
					return
				}
			}
		})
	}
	testwait.Wait(t, "the readers", &wg)
	t.Logf("%d snapshot checks", checked.Load())
}

// verify compares a snapshot with its model: a scan forwards, one backwards,
// and point gets. It reports the first difference.
func verify(s Snapshot, md *model, rng *rand.Rand, pool [][]byte) error {
	it := s.NewIter(nil, nil)
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(md.keys) || string(it.Key()) != md.keys[i] || string(it.Value()) != md.values[md.keys[i]] {
			return fmt.Errorf("forward scan: entry %d is %q=%q", i, it.Key(), it.Value())
		}
		i++
	}
	if i != len(md.keys) {
		return fmt.Errorf("forward scan: %d keys, want %d", i, len(md.keys))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		if i < 0 || string(it.Key()) != md.keys[i] {
			return fmt.Errorf("reverse scan: entry %d is %q", i, it.Key())
		}
	}
	if i != 0 {
		return fmt.Errorf("reverse scan stopped %d keys short", i)
	}
	for range 20 {
		k := pool[rng.IntN(len(pool))]
		v, ok := s.Get(k)
		want, wantOK := md.values[string(k)]
		if ok != wantOK || string(v) != want {
			return fmt.Errorf("Get(%q) = %q, %v; want %q, %v", k, v, ok, want, wantOK)
		}
	}
	return nil
}
