package kv

import (
	"bytes"
	"errors"
)

// Merging returns an iterator over the union of its sources. Entries that
// share a key across sources are reconciled with merge into one entry, so a
// reader sees each key once, whatever mix of memtables and SSTables holds it.
// Closing the merging iterator closes every source.
func Merging(merge MergeFunc, sources ...Iterator) Iterator {
	return &mergingIter{
		merge:   merge,
		sources: sources,
		cur:     make([]Iterator, 0, len(sources)),
		heap:    iterHeap{items: make([]Iterator, 0, len(sources))},
	}
}

type mergingIter struct {
	merge   MergeFunc
	sources []Iterator
	// cur holds the sources positioned at the current key; heap holds the
	// other positioned sources.
	cur     []Iterator
	heap    iterHeap
	value   []byte
	scratch []byte
	err     error
}

func (m *mergingIter) SeekGE(key []byte) bool {
	return m.position(false, func(it Iterator) bool { return it.SeekGE(key) })
}

func (m *mergingIter) SeekLT(key []byte) bool {
	return m.position(true, func(it Iterator) bool { return it.SeekLT(key) })
}

func (m *mergingIter) First() bool { return m.position(false, Iterator.First) }

func (m *mergingIter) Last() bool { return m.position(true, Iterator.Last) }

func (m *mergingIter) Next() bool {
	if len(m.cur) == 0 {
		return false
	}
	if m.heap.reverse {
		// Switch direction: every source moves to its first key after the
		// current one. Copy the key first: repositioning invalidates it.
		key := append([]byte(nil), m.Key()...)
		return m.position(false, func(it Iterator) bool {
			if !it.SeekGE(key) {
				return false
			}
			if bytes.Equal(it.Key(), key) {
				return it.Next()
			}
			return true
		})
	}
	return m.step(Iterator.Next)
}

func (m *mergingIter) Prev() bool {
	if len(m.cur) == 0 {
		return false
	}
	if !m.heap.reverse {
		key := append([]byte(nil), m.Key()...)
		return m.position(true, func(it Iterator) bool { return it.SeekLT(key) })
	}
	return m.step(Iterator.Prev)
}

// Key returns the current key. It stays valid until the next positioning call.
func (m *mergingIter) Key() []byte { return m.cur[0].Key() }

// Value returns the reconciled value of the current key.
func (m *mergingIter) Value() []byte {
	if len(m.cur) == 1 {
		return m.cur[0].Value()
	}
	return m.value
}

func (m *mergingIter) Error() error { return m.err }

func (m *mergingIter) Close() error {
	errs := []error{m.err}
	for _, it := range m.sources {
		errs = append(errs, it.Close())
	}
	m.cur, m.heap.items = m.cur[:0], m.heap.items[:0]
	return errors.Join(errs...)
}

// position moves every source with move and orders them for the direction.
func (m *mergingIter) position(reverse bool, move func(Iterator) bool) bool {
	m.err = nil
	m.cur = m.cur[:0]
	m.heap.reverse = reverse
	m.heap.items = m.heap.items[:0]
	for _, it := range m.sources {
		if move(it) {
			m.heap.items = append(m.heap.items, it)
		} else if err := it.Error(); err != nil {
			return m.fail(err)
		}
	}
	m.heap.init()
	return m.gather()
}

// step moves the sources at the current key one entry in the current
// direction and returns them to the heap.
func (m *mergingIter) step(move func(Iterator) bool) bool {
	for _, it := range m.cur {
		if move(it) {
			m.heap.push(it)
		} else if err := it.Error(); err != nil {
			return m.fail(err)
		}
	}
	m.cur = m.cur[:0]
	return m.gather()
}

// gather takes every source positioned at the next key in the direction off
// the heap and reconciles their values.
func (m *mergingIter) gather() bool {
	if len(m.heap.items) == 0 {
		return false
	}
	m.cur = append(m.cur, m.heap.pop())
	key := m.cur[0].Key()
	for len(m.heap.items) > 0 && bytes.Equal(m.heap.items[0].Key(), key) {
		m.cur = append(m.cur, m.heap.pop())
	}
	if len(m.cur) == 1 {
		return true
	}
	var err error
	m.value = append(m.value[:0], m.cur[0].Value()...)
	for _, it := range m.cur[1:] {
		// merge appends to dst, which must not alias its inputs: alternate
		// between two buffers.
		if m.scratch, err = m.merge(m.scratch[:0], m.value, it.Value()); err != nil {
			return m.fail(err)
		}
		m.value, m.scratch = m.scratch, m.value
	}
	return true
}

func (m *mergingIter) fail(err error) bool {
	m.err = err
	m.cur, m.heap.items = m.cur[:0], m.heap.items[:0]
	return false
}

// iterHeap is a binary heap of positioned sources ordered by key, smallest
// first (largest first when reverse).
type iterHeap struct {
	items   []Iterator
	reverse bool
}

func (h *iterHeap) less(i, j int) bool {
	c := bytes.Compare(h.items[i].Key(), h.items[j].Key())
	if h.reverse {
		return c > 0
	}
	return c < 0
}

func (h *iterHeap) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *iterHeap) push(it Iterator) {
	h.items = append(h.items, it)
	for j := len(h.items) - 1; j > 0; {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.items[i], h.items[j] = h.items[j], h.items[i]
		j = i
	}
}

func (h *iterHeap) pop() Iterator {
	top := h.items[0]
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	h.down(0)
	return top
}

func (h *iterHeap) down(i int) {
	n := len(h.items)
	for {
		j := 2*i + 1
		if j >= n {
			return
		}
		if r := j + 1; r < n && h.less(r, j) {
			j = r
		}
		if !h.less(j, i) {
			return
		}
		h.items[i], h.items[j] = h.items[j], h.items[i]
		i = j
	}
}
