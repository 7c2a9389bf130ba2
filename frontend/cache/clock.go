package cache

// clock is a weight-bounded map with CLOCK (second-chance) eviction, an
// approximation of least-recently-used eviction whose hits only set a bit:
// an LRU list would rewrite two neighbouring nodes on every hit, and on the
// memory tier those cache misses cost as much as the map lookup itself.
//
// The entries form a ring. The hand points at the next eviction candidate;
// an entry whose bit is set gets a second chance (the bit is cleared and the
// hand moves on), one whose bit is clear is evicted. New entries are placed
// just behind the hand, so a whole sweep passes before they are considered.
//
// A clock is not safe for concurrent use; its owner holds a lock.
type clock[K comparable, V any] struct {
	items   map[K]*clockNode[K, V]
	hand    *clockNode[K, V] // nil when empty
	size    int64            // sum of the weights of the entries
	limit   int64
	onEvict func(K, V) // called for each entry add pushes out
}

type clockNode[K comparable, V any] struct {
	key        K
	value      V
	weight     int64
	referenced bool
	prev, next *clockNode[K, V]
}

func newClock[K comparable, V any](limit int64, onEvict func(K, V)) *clock[K, V] {
	return &clock[K, V]{items: make(map[K]*clockNode[K, V]), limit: limit, onEvict: onEvict}
}

// get returns the value of k and marks it referenced.
func (c *clock[K, V]) get(k K) (V, bool) {
	n, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	n.referenced = true
	return n.value, true
}

// peek returns the value of k without marking it.
func (c *clock[K, V]) peek(k K) (V, bool) {
	n, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	return n.value, true
}

// add inserts or replaces k, first evicting entries until it fits, so size
// never exceeds limit. An entry heavier than the whole limit is not added;
// add reports whether it was.
func (c *clock[K, V]) add(k K, v V, weight int64) bool {
	if weight > c.limit {
		return false
	}
	c.remove(k)
	for c.size+weight > c.limit {
		victim := c.hand
		if victim.referenced {
			victim.referenced = false
			c.hand = victim.next
			continue
		}
		c.unlink(victim)
		if c.onEvict != nil {
			c.onEvict(victim.key, victim.value)
		}
	}
	n := &clockNode[K, V]{key: k, value: v, weight: weight}
	if c.hand == nil {
		n.prev, n.next = n, n
		c.hand = n
	} else {
		n.prev, n.next = c.hand.prev, c.hand
		n.prev.next = n
		c.hand.prev = n
	}
	c.items[k] = n
	c.size += weight
	return true
}

// remove deletes k without calling onEvict and reports whether it was held.
func (c *clock[K, V]) remove(k K) bool {
	n, ok := c.items[k]
	if ok {
		c.unlink(n)
	}
	return ok
}

func (c *clock[K, V]) unlink(n *clockNode[K, V]) {
	if n.next == n {
		c.hand = nil
	} else {
		if c.hand == n {
			c.hand = n.next
		}
		n.prev.next = n.next
		n.next.prev = n.prev
	}
	n.prev, n.next = nil, nil
	delete(c.items, n.key)
	c.size -= n.weight
}

func (c *clock[K, V]) len() int { return len(c.items) }
