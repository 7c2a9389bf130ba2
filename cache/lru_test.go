package cache

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	var evicted []string
	l := newLRU(10, func(k string, _ int) { evicted = append(evicted, k) })
	l.add("a", 1, 4)
	l.add("b", 2, 4)
	l.get("a") // b is now the least recently used
	l.add("c", 3, 4)
	if !slices.Equal(evicted, []string{"b"}) {
		t.Fatalf("evicted %v, want [b]", evicted)
	}
	if _, ok := l.peek("b"); ok {
		t.Fatal("b still held")
	}
	if l.size != 8 || l.len() != 2 {
		t.Fatalf("size %d len %d, want 8 and 2", l.size, l.len())
	}
	if l.add("huge", 4, 11) {
		t.Fatal("added an entry heavier than the limit")
	}
	if l.size != 8 {
		t.Fatalf("a rejected add changed size to %d", l.size)
	}
	// Replacing an entry with a heavier one evicts others, not itself.
	l.add("c", 5, 9)
	if v, ok := l.peek("c"); !ok || v != 5 || l.size != 9 || l.len() != 1 {
		t.Fatalf("after replace: c=%v,%v size %d len %d", v, ok, l.size, l.len())
	}
	if !l.remove("c") || l.remove("c") || l.size != 0 {
		t.Fatalf("remove: size %d", l.size)
	}
}

// TestLRUModel checks random operations against a plain recency list.
func TestLRUModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type ent struct {
		k int
		w int64
		v int
	}
	var model []ent // most recent first
	const limit = 100
	var evicted []int
	l := newLRU(limit, func(k int, _ int) { evicted = append(evicted, k) })
	find := func(k int) int {
		return slices.IndexFunc(model, func(e ent) bool { return e.k == k })
	}
	for i := range 20000 {
		k := rng.IntN(40)
		switch rng.IntN(3) {
		case 0:
			v, ok := l.get(k)
			j := find(k)
			if ok != (j >= 0) || ok && v != model[j].v {
				t.Fatalf("op %d: get(%d) = %v,%v; model index %d", i, k, v, ok, j)
			}
			if j >= 0 {
				e := model[j]
				model = slices.Insert(slices.Delete(model, j, j+1), 0, e)
			}
		case 1:
			w := int64(rng.IntN(30) + 1)
			evicted = evicted[:0]
			l.add(k, i, w)
			if j := find(k); j >= 0 {
				model = slices.Delete(model, j, j+1)
			}
			var want []int
			var size int64
			for _, e := range model {
				size += e.w
			}
			for size+w > limit {
				e := model[len(model)-1]
				model = model[:len(model)-1]
				size -= e.w
				want = append(want, e.k)
			}
			model = slices.Insert(model, 0, ent{k, w, i})
			if !slices.Equal(evicted, want) {
				t.Fatalf("op %d: evicted %v, want %v", i, evicted, want)
			}
		case 2:
			j := find(k)
			if l.remove(k) != (j >= 0) {
				t.Fatalf("op %d: remove(%d) disagrees with model", i, k)
			}
			if j >= 0 {
				model = slices.Delete(model, j, j+1)
			}
		}
		var size int64
		for _, e := range model {
			size += e.w
		}
		if l.size != size || l.len() != len(model) || l.size > limit {
			t.Fatalf("op %d: size %d len %d, model %d %d", i, l.size, l.len(), size, len(model))
		}
	}
}
