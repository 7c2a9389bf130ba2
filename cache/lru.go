package cache

// lru is a weight-bounded map that evicts the least recently used entries. It
// is not safe for concurrent use; its owner holds a lock.
type lru[K comparable, V any] struct {
	items   map[K]*lruNode[K, V]
	root    lruNode[K, V] // sentinel: root.next is the most recently used
	size    int64         // sum of the weights of the entries
	limit   int64
	onEvict func(K, V) // called for each entry add pushes out
}

type lruNode[K comparable, V any] struct {
	key        K
	value      V
	weight     int64
	prev, next *lruNode[K, V]
}

func newLRU[K comparable, V any](limit int64, onEvict func(K, V)) *lru[K, V] {
	l := &lru[K, V]{items: make(map[K]*lruNode[K, V]), limit: limit, onEvict: onEvict}
	l.root.prev, l.root.next = &l.root, &l.root
	return l
}

// get returns the value of k and marks it most recently used.
func (l *lru[K, V]) get(k K) (V, bool) {
	n, ok := l.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	if l.root.next != n {
		l.unlink(n)
		l.pushFront(n)
	}
	return n.value, true
}

// peek returns the value of k without changing its recency.
func (l *lru[K, V]) peek(k K) (V, bool) {
	n, ok := l.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	return n.value, true
}

// add inserts or replaces k as the most recently used entry, first evicting
// the least recently used entries until it fits, so size never exceeds limit.
// An entry heavier than the whole limit is not added; add reports whether it
// was.
func (l *lru[K, V]) add(k K, v V, weight int64) bool {
	if weight > l.limit {
		return false
	}
	if old, ok := l.items[k]; ok {
		// Replacing: the old weight must not push out other entries.
		l.unlink(old)
		delete(l.items, k)
		l.size -= old.weight
	}
	for l.size+weight > l.limit {
		victim := l.root.prev
		l.unlink(victim)
		delete(l.items, victim.key)
		l.size -= victim.weight
		if l.onEvict != nil {
			l.onEvict(victim.key, victim.value)
		}
	}
	n := &lruNode[K, V]{key: k, value: v, weight: weight}
	l.items[k] = n
	l.pushFront(n)
	l.size += weight
	return true
}

// remove deletes k without calling onEvict and reports whether it was held.
func (l *lru[K, V]) remove(k K) bool {
	n, ok := l.items[k]
	if !ok {
		return false
	}
	l.unlink(n)
	delete(l.items, k)
	l.size -= n.weight
	return true
}

func (l *lru[K, V]) len() int { return len(l.items) }

func (l *lru[K, V]) unlink(n *lruNode[K, V]) {
	n.prev.next = n.next
	n.next.prev = n.prev
	n.prev, n.next = nil, nil
}

func (l *lru[K, V]) pushFront(n *lruNode[K, V]) {
	n.prev = &l.root
	n.next = l.root.next
	l.root.next.prev = n
	l.root.next = n
}
