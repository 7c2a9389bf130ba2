package memtable

import (
	"bytes"
	"sync/atomic"

	"github.com/sedimentdb/sediment/internal/kv"
)

// Snapshot is a consistent view of a memtable: the entries committed before
// it was taken, with the values they had then, however the writer goes on.
// It holds no resources; copy it freely and use it from any goroutine.
type Snapshot struct {
	m *Memtable
	// horizon is the published arena offset: exactly the nodes and versions
	// allocated below it are visible.
	horizon uint32
}

// Snapshot pins the state published by the last Commit.
func (m *Memtable) Snapshot() Snapshot {
	return Snapshot{m: m, horizon: m.published.Load()}
}

// Get returns the value of key, or false if the snapshot has no such key.
// The value is read-only and stays valid as long as the memtable.
func (s Snapshot) Get(key []byte) ([]byte, bool) {
	n, exact := s.m.seekGE(key)
	if !exact || n >= s.horizon {
		return nil, false
	}
	return s.value(n), true
}

// NewIter returns an iterator over the snapshot's keys in [lower, upper);
// a nil bound leaves that side open. The bounds must not be modified while
// the iterator is in use. Keys and values it returns are read-only and stay
// valid as long as the memtable.
func (s Snapshot) NewIter(lower, upper []byte) kv.Iterator {
	return &iter{Snapshot: s, lower: lower, upper: upper}
}

// value returns node n's newest version below the horizon.
func (s Snapshot) value(n uint32) []byte {
	v := atomic.LoadUint32(s.m.word(n, nodeHead))
	for v != 0 && v >= s.horizon {
		v = *s.m.word(v, versionPrev)
	}
	return s.m.versionValue(n, v)
}

// seekGE returns the first node whose key is >= key, and whether it equals
// key, or 0 if there is none. It ignores visibility.
func (m *Memtable) seekGE(key []byte) (uint32, bool) {
	prefix := keyPrefix(key)
	below, bound, found := m.descend(key, prefix, false)
	if found {
		return bound, true
	}
	next := atomic.LoadUint32(m.index.word(below, indexNext0))
	for ; next != 0 && next != bound; next = m.next(next) {
		if c := m.compare(key, prefix, next); c <= 0 {
			return next, c == 0
		}
	}
	return next, false
}

// seekLT returns the last node whose key is < key, or 0 if there is none.
// It ignores visibility.
func (m *Memtable) seekLT(key []byte) uint32 {
	prefix := keyPrefix(key)
	below, bound, _ := m.descend(key, prefix, true)
	n := *m.index.word(below, indexNode)
	for next := atomic.LoadUint32(m.index.word(below, indexNext0)); next != 0 && next != bound; next = m.next(next) {
		if m.compare(key, prefix, next) <= 0 {
			break
		}
		n = next
	}
	if n == m.head {
		return 0
	}
	return n
}

// descend searches the index levels for key. It returns the last index
// record whose key is < key, from which to walk level 0, and the node where
// that walk may stop, known to be > key (>= key when lt), or 0. Unless lt,
// it returns early with found and the node holding key when an index record
// leads to it.
func (m *Memtable) descend(key []byte, prefix uint64, lt bool) (below, bound uint32, found bool) {
	x, top := m.start(prefix)
	var rbound uint32 // an index record known to be > key, or >= key if lt
	for l := top; l >= 1; l-- {
		for {
			next := m.nextIndex(x, l)
			if next == 0 || next == rbound {
				break
			}
			c := m.compareIndex(key, prefix, next)
			if c == 0 && !lt {
				return 0, *m.index.word(next, indexNode), true
			}
			if c <= 0 {
				rbound = next
				break
			}
			x = next
		}
	}
	if rbound != 0 {
		bound = *m.index.word(rbound, indexNode)
	}
	return x, bound, false
}

// last returns the last node, or 0 if there is none. It ignores visibility.
func (m *Memtable) last() uint32 {
	x := m.top
	for l := int(m.height.Load()) - 1; l >= 1; l-- {
		for next := m.nextIndex(x, l); next != 0; next = m.nextIndex(x, l) {
			x = next
		}
	}
	n := *m.index.word(x, indexNode)
	for next := m.next(n); next != 0; next = m.next(n) {
		n = next
	}
	if n == m.head {
		return 0
	}
	return n
}

// iter walks the visible nodes of a snapshot within bounds.
type iter struct {
	Snapshot
	lower, upper []byte
	n            uint32 // current node; 0 when not positioned
}

var _ kv.Iterator = (*iter)(nil)

func (it *iter) SeekGE(key []byte) bool {
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	n, _ := it.m.seekGE(key)
	return it.forward(n)
}

func (it *iter) SeekLT(key []byte) bool {
	if it.upper != nil && bytes.Compare(key, it.upper) > 0 {
		key = it.upper
	}
	return it.backward(it.m.seekLT(key))
}

func (it *iter) First() bool {
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	return it.forward(it.m.next(it.m.head))
}

func (it *iter) Last() bool {
	if it.upper != nil {
		return it.SeekLT(it.upper)
	}
	return it.backward(it.m.last())
}

func (it *iter) Next() bool {
	if it.n == 0 {
		return false
	}
	return it.forward(it.m.next(it.n))
}

func (it *iter) Prev() bool {
	if it.n == 0 {
		return false
	}
	return it.backward(it.m.prev(it.n))
}

func (it *iter) Key() []byte {
	if it.n == 0 {
		return nil
	}
	return it.m.key(it.n)
}

func (it *iter) Value() []byte {
	if it.n == 0 {
		return nil
	}
	return it.value(it.n)
}
func (it *iter) Error() error { return nil }

func (it *iter) Close() error {
	it.n = 0
	return nil
}

// forward settles on the first visible node from n on, if below upper.
func (it *iter) forward(n uint32) bool {
	for n != 0 && n >= it.horizon {
		n = it.m.next(n)
	}
	if n != 0 && it.upper != nil && bytes.Compare(it.m.key(n), it.upper) >= 0 {
		n = 0
	}
	it.n = n
	return n != 0
}

// backward settles on the last visible node from n back, if not below lower.
func (it *iter) backward(n uint32) bool {
	for n != 0 && n >= it.horizon {
		n = it.m.prev(n)
	}
	if n == it.m.head {
		n = 0
	}
	if n != 0 && it.lower != nil && bytes.Compare(it.m.key(n), it.lower) < 0 {
		n = 0
	}
	it.n = n
	return n != 0
}
