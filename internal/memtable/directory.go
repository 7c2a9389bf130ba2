package memtable

import (
	"math/bits"
	"sync/atomic"
)

// A directory sends a search past the upper levels of the skiplist. Keys
// start with a uniformly random token, so the top bits of a key's prefix
// pick a bucket of the key space holding a near-equal share of the entries.
// Slot b holds an index record whose key is below every key of bucket b,
// ideally the last one: a search starts there on level 1, a few records
// from its key, and touches a handful of cache lines instead of walking
// down from the top. Keys without a random prefix only make the buckets
// uneven; an empty slot sends the search to the top.
//
// A slot may be stale (a record further back than the last one below its
// bucket); that costs speed, never correctness. The writer grows the
// directory as records accumulate, keeping between 1/2 and 1 level-1 record
// per bucket (4 to 8 bytes per record), and publishes each new one whole.
type directory struct {
	shift uint // bucket of a prefix: prefix >> shift
	slots []uint32
}

const (
	// minDirectory is the slot count of the first directory, built once a
	// memtable has that many index records.
	minDirectory = 16
	slotSize     = 4
)

// start returns where a search for a key with the given prefix begins: an
// index record below the key and the level to walk first.
func (m *Memtable) start(prefix uint64) (uint32, int) {
	if d := m.dir.Load(); d != nil {
		if r := atomic.LoadUint32(&d.slots[prefix>>d.shift]); r != 0 {
			return r, 1
		}
	}
	return m.top, int(m.height.Load()) - 1
}

// indexed records the writer's new index record r for the directory.
func (m *Memtable) indexed(r uint32, prefix uint64) {
	m.records++
	d := m.dir.Load()
	if m.records >= minDirectory && (d == nil || m.records > len(d.slots)) {
		// Rebuilding walks every record, but each rebuild at least doubles
		// the slots, so the cost per record stays constant.
		m.rebuildDirectory(m.records)
		return
	}
	if d == nil {
		return
	}
	// r is the last record of its bucket if no slot-holder beats it.
	b := prefix>>d.shift + 1
	if b == uint64(len(d.slots)) {
		return
	}
	if cur := d.slots[b]; cur == 0 || m.prefix(cur) < prefix {
		atomic.StoreUint32(&d.slots[b], r)
	}
}

// rebuildDirectory publishes a directory of at least n slots, each holding
// the last record below its bucket.
func (m *Memtable) rebuildDirectory(n int) {
	k := bits.Len(uint(n - 1))
	d := &directory{shift: uint(64 - k), slots: make([]uint32, 1<<k)}
	for r := m.nextIndex(m.top, 1); r != 0; r = m.nextIndex(r, 1) {
		if b := m.prefix(r)>>d.shift + 1; b < uint64(len(d.slots)) {
			d.slots[b] = r
		}
	}
	for b := 1; b < len(d.slots); b++ {
		if d.slots[b] == 0 {
			d.slots[b] = d.slots[b-1]
		}
	}
	m.dirSize.Store(int64(len(d.slots)) * slotSize)
	m.dir.Store(d)
}

// prefix returns the key prefix stored in index record r.
func (m *Memtable) prefix(r uint32) uint64 {
	return *(*uint64)(m.index.ptr(r, indexPrefix))
}
