package cache

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestClockSecondChance(t *testing.T) {
	var evicted []string
	c := newClock(12, func(k string, _ int) { evicted = append(evicted, k) })
	c.add("a", 1, 4)
	c.add("b", 2, 4)
	c.add("c", 3, 4)
	c.get("a") // a gets a second chance; b is the first unreferenced
	c.add("d", 4, 4)
	if !slices.Equal(evicted, []string{"b"}) {
		t.Fatalf("evicted %v, want [b]", evicted)
	}
	if _, ok := c.peek("b"); ok {
		t.Fatal("b still held")
	}
	if c.size != 12 || c.len() != 3 {
		t.Fatalf("size %d len %d, want 12 and 3", c.size, c.len())
	}
	if c.add("huge", 5, 13) {
		t.Fatal("added an entry heavier than the limit")
	}
	if c.size != 12 {
		t.Fatalf("a rejected add changed size to %d", c.size)
	}
	// Replacing an entry with a heavier one evicts others, not itself.
	c.add("c", 6, 12)
	if v, ok := c.peek("c"); !ok || v != 6 || c.size != 12 || c.len() != 1 {
		t.Fatalf("after replace: c=%v,%v size %d len %d", v, ok, c.size, c.len())
	}
	if !c.remove("c") || c.remove("c") || c.size != 0 || c.hand != nil {
		t.Fatalf("remove: size %d", c.size)
	}
	c.add("e", 7, 1) // the ring works again after emptying
	if v, _ := c.get("e"); v != 7 {
		t.Fatalf("e = %d", v)
	}
}

// TestClockModel checks random operations against a slice that keeps the
// ring in order from the hand.
func TestClockModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type ent struct {
		k   int
		w   int64
		v   int
		ref bool
	}
	var ring []ent // ring[0] is under the hand
	const limit = 100
	var evicted []int
	c := newClock(limit, func(k int, _ int) { evicted = append(evicted, k) })
	find := func(k int) int {
		return slices.IndexFunc(ring, func(e ent) bool { return e.k == k })
	}
	size := func() (s int64) {
		for _, e := range ring {
			s += e.w
		}
		return s
	}
	for i := range 20000 {
		k := rng.IntN(40)
		switch rng.IntN(3) {
		case 0:
			v, ok := c.get(k)
			j := find(k)
			if ok != (j >= 0) || ok && v != ring[j].v {
				t.Fatalf("op %d: get(%d) = %v,%v; model index %d", i, k, v, ok, j)
			}
			if j >= 0 {
				ring[j].ref = true
			}
		case 1:
			w := int64(rng.IntN(30) + 1)
			evicted = evicted[:0]
			c.add(k, i, w)
			if j := find(k); j >= 0 {
				ring = slices.Delete(ring, j, j+1)
			}
			var want []int
			for size()+w > limit {
				if ring[0].ref {
					ring[0].ref = false
					ring = append(ring[1:], ring[0])
					continue
				}
				want = append(want, ring[0].k)
				ring = ring[1:]
			}
			ring = append(ring, ent{k, w, i, false}) // just behind the hand
			if !slices.Equal(evicted, want) {
				t.Fatalf("op %d: evicted %v, want %v", i, evicted, want)
			}
		case 2:
			j := find(k)
			if c.remove(k) != (j >= 0) {
				t.Fatalf("op %d: remove(%d) disagrees with model", i, k)
			}
			if j >= 0 {
				ring = slices.Delete(ring, j, j+1)
			}
		}
		if c.size != size() || c.len() != len(ring) || c.size > limit {
			t.Fatalf("op %d: size %d len %d, model %d %d", i, c.size, c.len(), size(), len(ring))
		}
		if len(ring) > 0 && c.hand.key != ring[0].k {
			t.Fatalf("op %d: hand at %d, model at %d", i, c.hand.key, ring[0].k)
		}
	}
}
