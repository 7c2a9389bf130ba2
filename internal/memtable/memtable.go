// Package memtable is the in-memory, sorted write buffer of one ingest shard:
// one writer goroutine applies batches while any number of readers read
// consistent snapshots, without locks.
//
// It is a skiplist whose nodes, keys and values live in an arena of byte
// chunks addressed by uint32 offsets, so that a million entries cost the
// garbage collector a few hundred pointer-free allocations instead of
// millions of objects. Keys order by bytes.Compare.
//
// The level-0 list is made of nodes, which hold the entries:
//
//	+------+------+--------+---------+----------------+-----+-------+-----+
//	| prev | head | valLen | next[0] | keyLen<<8 | h  | key | value | pad |
//	+------+------+--------+---------+----------------+-----+-------+-----+
//	                                 ^ node offset
//
// prev links the level-0 list backwards so that reverse iteration steps in
// constant time rather than searching again (4 bytes an entry). h is the
// node's tower height: half the nodes reach level 1, and a quarter of those
// on each level reach the next. Level 1 is denser than p = 1/4 throughout
// would make it because level 0 is where a search meets cache misses: with
// an index record every other node, a search compares about one node on
// level 0 instead of two (measured: point gets 25% faster, for 6 bytes an
// entry).
//
// The upper levels (1 and above) are links between index records, one for
// each node of height 2 or more, kept in a second arena:
//
//	+------------+------+---------+---------+-----+-----------+
//	| prefix (8) | node | next[0] | next[1] | ... | next[h-1] |
//	+------------+------+---------+---------+-----+-----------+
//	^ index offset
//
// next[0] copies the node's own level-0 link, so that a search dropping to
// level 0 reads the next node without first loading this one; next[1] and
// up link index records. prefix is the node key's first 8 bytes as a
// big-endian integer. Keys start with a random token, so the prefix nearly
// always decides a comparison, and a search touches node memory only on
// level 0: the upper levels of a million entries fit in a few megabytes of
// densely packed records, where nodes scattered among keys and values would
// cost a cache miss each. A directory indexed by the top bits of the prefix
// (directory.go) lets most searches skip the upper levels altogether and
// start on level 1 a record or two before their key.
//
// Setting a key again does not overwrite: the writer merges the newest value
// with the new one (Options.Merge) into a version record in the node arena
// and points the node's head at it. Each version links to the one it
// replaced; a node head or version prev of 0 means the value stored in the
// node itself.
//
//	+------+--------+-------+-----+
//	| prev | valLen | value | pad |
//	+------+--------+-------+-----+
//	^ version offset
//
// Node arena offsets grow with allocation order, so they double as sequence
// numbers: Commit publishes the node arena's current offset, and a snapshot
// sees exactly the nodes and versions below the offset it pinned. The writer
// links new nodes, index records and versions in immediately, bottom-up and
// with atomic stores; readers skip nodes and versions at or above their
// offset, and use any index record to find their way.
package memtable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/sedimentdb/sediment/internal/kv"
)

// ErrKeyTooLarge means a key is longer than MaxKeyLen.
var ErrKeyTooLarge = errors.New("memtable: key too large")

// MaxKeyLen is the longest key a memtable holds: the node header keeps the
// key length in 24 bits.
const MaxKeyLen = 1<<24 - 1

const (
	maxHeight = 16
	// Node fields, relative to a node offset: what a search reads (the
	// link, the key's length and first bytes) shares a cache line.
	nodePrev   = -16
	nodeHead   = -12
	nodeValLen = -8
	nodeNext   = -4
	nodeMeta   = 0
	nodeKey    = 4
	nodeBefore = -nodePrev            // bytes before the node offset
	nodeSize   = nodeBefore + nodeKey // without key and value
	// Index record fields, relative to its offset.
	indexPrefix = 0
	indexNode   = 8
	indexNext0  = 12 // a copy of the node's next[0]
	indexNext1  = 16 // next[l] is at indexNext1 + 4*(l-1)
	// Version record fields, relative to its offset.
	versionPrev   = 0
	versionValLen = 4
	versionHeader = 8
	// headSize is the arena space of the sentinel head node and index record.
	headSize = nodeSize + indexNext1 + 4*(maxHeight-1)
)

// Options configure a memtable.
type Options struct {
	// Merge reconciles the value already stored under a key with a new one.
	// If nil, the new value replaces the old.
	Merge kv.MergeFunc
	// ChunkSize is the size of an arena chunk, rounded up to a power of two
	// between 4 KiB and 1 MiB (the default). A memtable holds at most 4095
	// chunks' worth of entries (Set returns ErrFull past that); smaller
	// chunks suit tests and tiny tables.
	ChunkSize int
	// Seed seeds the tower heights; 0 picks a random seed.
	Seed uint64
}

// Memtable is a sorted, multi-version map of byte keys to byte values.
// Set and Commit may be called only by the one writer goroutine; Size by
// any; snapshots may be taken and read concurrently by any goroutine.
type Memtable struct {
	arena        // nodes and versions
	index  arena // index records
	merge  kv.MergeFunc
	head   uint32        // sentinel node, before every key
	top    uint32        // the head's index record, with a full tower
	height atomic.Uint32 // levels in use, level 0 included; only grows
	// published is the node arena offset at the last Commit: the
	// visibility horizon of new snapshots.
	published atomic.Uint32
	dir       atomic.Pointer[directory]
	dirSize   atomic.Int64

	// Writer state.
	rng     uint64
	splice  [maxHeight]uint32 // [0] is a node, the rest index records
	below   uint32            // the last index record before the splice
	records int               // index records, for sizing the directory
	scratch []byte
}

// New returns an empty memtable.
func New(opts Options) *Memtable {
	m := &Memtable{merge: opts.Merge, rng: opts.Seed}
	shift := uint32(defaultChunkShift)
	if opts.ChunkSize > 0 {
		shift = uint32(bits.Len(uint(opts.ChunkSize - 1)))
		shift = min(max(shift, minChunkShift), defaultChunkShift)
	}
	m.arena.init(shift)
	m.index.init(shift)
	if m.rng == 0 {
		m.rng = rand.Uint64() | 1
	}
	// The first chunks always have room.
	head, _ := m.alloc(nodeSize)
	m.head = head + nodeBefore
	*m.word(m.head, nodeMeta) = maxHeight
	m.top, _ = m.index.alloc(indexNext1 + 4*(maxHeight-1))
	*m.index.word(m.top, indexNode) = m.head
	m.height.Store(1)
	m.published.Store(uint32(m.pos))
	return m
}

// Size returns the bytes of memory the entries use: every node, index and
// version record in the arenas (values replaced by newer versions included),
// alignment padding, chunk tails left unused because an entry did not fit,
// and the directory. At most one chunk per arena of allocated but not yet
// used memory is not counted.
func (m *Memtable) Size() int64 {
	return m.size.Load() + m.index.size.Load() + m.dirSize.Load()
}

// Set stores value under key, merged with any value the key already has.
// The entry is invisible to readers until the next Commit. The memtable
// keeps copies of key and value. On error nothing is stored.
func (m *Memtable) Set(key, value []byte) error {
	if len(key) > MaxKeyLen {
		return ErrKeyTooLarge
	}
	prefix := keyPrefix(key)
	h := m.randomHeight()
	if n := m.findSplice(key, prefix, h); n != 0 {
		return m.addVersion(n, value)
	}
	return m.insert(key, prefix, value, h)
}

// Commit publishes every entry set so far: snapshots taken afterwards see
// them all, earlier snapshots none.
func (m *Memtable) Commit() {
	m.published.Store(uint32(m.pos))
}

// findSplice returns the node holding key, or 0 after filling m.splice with
// the node or index record after which key belongs on each level below h.
func (m *Memtable) findSplice(key []byte, prefix uint64, h int) uint32 {
	x, top := m.top, int(m.height.Load())-1
	if h <= 2 {
		// Only levels 0 and 1 need splicing: the directory can skip the rest.
		x, top = m.start(prefix)
	}
	var bound uint32 // an index record known to be > key
	for l := top; l >= 1; l-- {
		for {
			next := *m.index.word(x, int32(indexNext1+4*(l-1)))
			if next == 0 || next == bound {
				break
			}
			c := m.compareIndex(key, prefix, next)
			if c == 0 {
				return *m.index.word(next, indexNode)
			}
			if c < 0 {
				bound = next
				break
			}
			x = next
		}
		m.splice[l] = x
	}
	m.below = x
	n := *m.index.word(x, indexNode)
	var nbound uint32
	if bound != 0 {
		nbound = *m.index.word(bound, indexNode)
	}
	for next := *m.index.word(x, indexNext0); ; next = *m.word(n, nodeNext) {
		if next == 0 || next == nbound {
			break
		}
		c := m.compare(key, prefix, next)
		if c == 0 {
			return next
		}
		if c < 0 {
			break
		}
		n = next
	}
	m.splice[0] = n
	return 0
}

func (m *Memtable) insert(key []byte, prefix uint64, value []byte, h int) error {
	off, err := m.alloc(nodeSize + uint64(len(key)) + uint64(len(value)))
	if err != nil {
		return err
	}
	var r uint32
	if h > 1 {
		if r, err = m.index.alloc(indexNext1 + 4*uint64(h-1)); err != nil {
			return err
		}
	}
	n := off + nodeBefore
	// The node is unreachable until linked: plain stores suffice.
	*m.word(n, nodeNext) = *m.word(m.splice[0], nodeNext)
	*m.word(n, nodeHead) = 0
	*m.word(n, nodeMeta) = uint32(len(key))<<8 | uint32(h)
	*m.word(n, nodeValLen) = uint32(len(value))
	*m.word(n, nodePrev) = m.splice[0]
	copy(m.bytes(n, nodeKey, uint32(len(key))), key)
	copy(m.bytes(n, nodeKey+uint32(len(key)), uint32(len(value))), value)
	atomic.StoreUint32(m.word(m.splice[0], nodeNext), n)
	if m.splice[0] == *m.index.word(m.below, indexNode) {
		atomic.StoreUint32(m.index.word(m.below, indexNext0), n)
	}
	if next := *m.word(n, nodeNext); next != 0 {
		atomic.StoreUint32(m.word(next, nodePrev), n)
	}
	if h == 1 {
		return nil
	}

	height := int(m.height.Load())
	for l := height; l < h; l++ {
		m.splice[l] = m.top
	}
	*(*uint64)(m.index.ptr(r, indexPrefix)) = prefix
	*m.index.word(r, indexNode) = n
	*m.index.word(r, indexNext0) = *m.word(n, nodeNext)
	for l := 1; l < h; l++ {
		*m.index.word(r, int32(indexNext1+4*(l-1))) = *m.index.word(m.splice[l], int32(indexNext1+4*(l-1)))
	}
	// Link bottom-up: a reader finding the entry on any level finds it on
	// every level below.
	for l := 1; l < h; l++ {
		atomic.StoreUint32(m.index.word(m.splice[l], int32(indexNext1+4*(l-1))), r)
	}
	if h > height {
		m.height.Store(uint32(h))
	}
	m.indexed(r, prefix)
	return nil
}

// addVersion merges value into the newest version of node n, committed or
// not, and makes the result its new head.
func (m *Memtable) addVersion(n uint32, value []byte) error {
	head := *m.word(n, nodeHead)
	merged := value
	if m.merge != nil {
		var err error
		old := m.versionValue(n, head)
		if merged, err = m.merge(m.scratch[:0], old, value); err != nil {
			return err
		}
		// Reuse the result's buffer next time, unless the merge handed back
		// one of its inputs: appending to those would clobber them.
		if !overlaps(merged, old) && !overlaps(merged, value) {
			m.scratch = merged
		}
	}
	v, err := m.alloc(versionHeader + uint64(len(merged)))
	if err != nil {
		return err
	}
	*m.word(v, versionPrev) = head
	*m.word(v, versionValLen) = uint32(len(merged))
	copy(m.bytes(v, versionHeader, uint32(len(merged))), merged)
	atomic.StoreUint32(m.word(n, nodeHead), v)
	return nil
}

// randomHeight draws a tower height: 1 or, with p = 1/2, 2 plus one level
// for each pair of trailing zero bits of a random word (p = 1/4 a level).
func (m *Memtable) randomHeight() int {
	m.rng ^= m.rng << 13
	m.rng ^= m.rng >> 7
	m.rng ^= m.rng << 17
	if m.rng&1 != 0 {
		return 1
	}
	return 2 + bits.TrailingZeros64(m.rng>>1|1<<(2*(maxHeight-2)))/2
}

// key returns the key of node n.
func (m *Memtable) key(n uint32) []byte {
	return m.bytes(n, nodeKey, *m.word(n, nodeMeta)>>8)
}

// versionValue returns the value of node n's version v (0: the node's own).
func (m *Memtable) versionValue(n, v uint32) []byte {
	if v == 0 {
		return m.bytes(n, nodeKey+*m.word(n, nodeMeta)>>8, *m.word(n, nodeValLen))
	}
	return m.bytes(v, versionHeader, *m.word(v, versionValLen))
}

// next returns node n's successor on level 0, as readers see it.
func (m *Memtable) next(n uint32) uint32 {
	return atomic.LoadUint32(m.word(n, nodeNext))
}

// nextIndex returns index record r's successor on level l >= 1, as readers
// see it.
func (m *Memtable) nextIndex(r uint32, l int) uint32 {
	return atomic.LoadUint32(m.index.word(r, int32(indexNext1+4*(l-1))))
}

// prev returns node n's predecessor on level 0, as readers see it: m.head
// for the first node. A reader may find a new node linked forward but not
// yet backward; it is never yet visible to the reader's snapshot, whose
// horizon was published after every link to older nodes.
func (m *Memtable) prev(n uint32) uint32 {
	return atomic.LoadUint32(m.word(n, nodePrev))
}

// compare orders key (whose keyPrefix is prefix) against node n's key. Keys
// start with a random token, so the first 8 bytes, compared as one integer,
// nearly always decide.
func (m *Memtable) compare(key []byte, prefix uint64, n uint32) int {
	nk := m.key(n)
	if np := keyPrefix(nk); prefix != np {
		if prefix < np {
			return -1
		}
		return 1
	}
	return compareSuffix(key, nk)
}

// compareIndex orders key against the key of index record r's node, reading
// the node only when the prefixes tie.
func (m *Memtable) compareIndex(key []byte, prefix uint64, r uint32) int {
	if rp := m.prefix(r); prefix != rp {
		if prefix < rp {
			return -1
		}
		return 1
	}
	return compareSuffix(key, m.key(*m.index.word(r, indexNode)))
}

// compareSuffix orders two keys whose prefixes are equal.
func compareSuffix(a, b []byte) int {
	if len(a) >= 8 && len(b) >= 8 {
		return bytes.Compare(a[8:], b[8:])
	}
	return bytes.Compare(a, b)
}

// overlaps reports whether the capacities of a and b share memory.
func overlaps(a, b []byte) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	a0 := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(cap(b)) && b0 < a0+uintptr(cap(a))
}

// keyPrefix returns the first 8 bytes of key as a big-endian integer, zero
// padded: if keyPrefix(a) < keyPrefix(b) then a < b.
func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var p uint64
	for i, c := range key {
		p |= uint64(c) << (56 - 8*i)
	}
	return p
}
