package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
)

// blockBuilder accumulates the raw contents of one block: prefix-compressed
// entries followed by the restart array (see the package comment).
type blockBuilder struct {
	restartInterval int
	buf             []byte
	restarts        []uint32
	counter         int // entries since the last restart point
	entries         int
}

func (b *blockBuilder) reset() {
	b.buf = b.buf[:0]
	b.restarts = b.restarts[:0]
	b.counter = 0
	b.entries = 0
}

func (b *blockBuilder) empty() bool { return b.entries == 0 }

// estimatedSize is the size finish would return.
func (b *blockBuilder) estimatedSize() int { return len(b.buf) + 4*len(b.restarts) + 4 }

// add appends an entry; keys must arrive in increasing order. shared is
// the length of the prefix key shares with the previous key added to any
// block (the writer has computed it already).
func (b *blockBuilder) add(key, value []byte, shared int) {
	if b.counter == b.restartInterval || b.entries == 0 {
		b.restarts = append(b.restarts, uint32(len(b.buf)))
		b.counter = 0
		shared = 0
	}
	b.buf = binary.AppendUvarint(b.buf, uint64(shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(value)))
	b.buf = append(b.buf, key[shared:]...)
	b.buf = append(b.buf, value...)
	b.counter++
	b.entries++
}

// finish appends the restart array and returns the raw block. The result is
// valid until the next reset.
func (b *blockBuilder) finish() []byte {
	for _, r := range b.restarts {
		b.buf = binary.LittleEndian.AppendUint32(b.buf, r)
	}
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(b.restarts)))
	return b.buf
}

// cachedEntry locates one decoded entry of the restart interval that a
// reverse step has materialized.
type cachedEntry struct {
	offset, next   int // the entry's offset and the offset after it
	keyEnd         int // end of its key in blockIter.cacheKeys
	valOff, valLen int
}

// blockIter walks the entries of one raw block. Forward steps decode in
// place; reverse steps decode the surrounding restart interval once into a
// cache and walk it backwards, so Prev costs O(1) amortized.
type blockIter struct {
	data        []byte
	restartsOff int // start of the restart array; entries end here
	numRestarts int

	offset int // current entry; == restartsOff past the end, -1 before start
	next   int // offset after the current entry
	key    []byte
	val    []byte
	err    error

	cacheRestart int // restart interval held in cache, -1 if none
	cache        []cachedEntry
	cacheKeys    []byte
	cacheIdx     int
}

// init points the iterator at a raw block, checking its restart array.
func (it *blockIter) init(data []byte) error {
	*it = blockIter{key: it.key[:0], cache: it.cache[:0], cacheKeys: it.cacheKeys[:0], cacheRestart: -1}
	if len(data) < 4 {
		return fmt.Errorf("%w: block of %d bytes has no restart count", ErrCorrupt, len(data))
	}
	n := binary.LittleEndian.Uint32(data[len(data)-4:])
	if uint64(n)*4+4 > uint64(len(data)) {
		return fmt.Errorf("%w: block restart count %d exceeds block size %d", ErrCorrupt, n, len(data))
	}
	it.data = data
	it.numRestarts = int(n)
	it.restartsOff = len(data) - 4 - 4*int(n)
	if n == 0 && it.restartsOff != 0 {
		return fmt.Errorf("%w: block has entries but no restart points", ErrCorrupt)
	}
	prev := -1
	for i := range it.numRestarts {
		r := it.restart(i)
		if r <= prev || r >= it.restartsOff || (i == 0 && r != 0) {
			return fmt.Errorf("%w: block restart point %d at offset %d out of order", ErrCorrupt, i, r)
		}
		prev = r
	}
	it.offset, it.next = -1, 0
	return nil
}

func (it *blockIter) restart(i int) int {
	return int(binary.LittleEndian.Uint32(it.data[it.restartsOff+4*i:]))
}

func (it *blockIter) corrupt(format string, args ...any) bool {
	it.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	it.offset = it.restartsOff
	return false
}

// decodeAt decodes the entry at off, whose predecessor's key is in it.key,
// and makes it current.
func (it *blockIter) decodeAt(off int) bool {
	it.offset = off
	if off >= it.restartsOff {
		it.offset = it.restartsOff
		return false
	}
	p := it.data[off:it.restartsOff]
	shared, n1 := binary.Uvarint(p)
	unshared, n2 := binary.Uvarint(p[max(n1, 0):])
	vlen, n3 := binary.Uvarint(p[max(n1, 0)+max(n2, 0):])
	if n1 <= 0 || n2 <= 0 || n3 <= 0 {
		return it.corrupt("bad entry header at offset %d", off)
	}
	h := n1 + n2 + n3
	rest := uint64(len(p) - h)
	if shared > uint64(len(it.key)) || unshared > rest || vlen > rest-unshared {
		return it.corrupt("entry at offset %d overruns its block", off)
	}
	ks := h + int(unshared)
	it.key = append(it.key[:shared], p[h:ks]...)
	it.val = p[ks : ks+int(vlen) : ks+int(vlen)]
	it.next = off + ks + int(vlen)
	return true
}

// restartKey decodes the key at restart point i without moving.
func (it *blockIter) restartKey(i int) ([]byte, bool) {
	off := it.restart(i)
	p := it.data[off:it.restartsOff]
	shared, n1 := binary.Uvarint(p)
	unshared, n2 := binary.Uvarint(p[max(n1, 0):])
	_, n3 := binary.Uvarint(p[max(n1, 0)+max(n2, 0):])
	if n1 <= 0 || n2 <= 0 || n3 <= 0 || shared != 0 {
		return nil, it.corrupt("bad restart entry at offset %d", off)
	}
	h := n1 + n2 + n3
	if unshared > uint64(len(p)-h) {
		return nil, it.corrupt("restart entry at offset %d overruns its block", off)
	}
	return p[h : h+int(unshared)], true
}

// seekRestart returns the index of the last restart point whose key is < key
// (0 if none), so that a forward scan from it finds the first key >= key.
func (it *blockIter) seekRestart(key []byte) (int, bool) {
	ok := true
	i := sort.Search(it.numRestarts, func(i int) bool {
		if !ok {
			return true
		}
		k, good := it.restartKey(i)
		if !good {
			ok = false
			return true
		}
		return bytes.Compare(k, key) >= 0
	})
	return max(i-1, 0), ok
}

func (it *blockIter) First() bool {
	if it.err != nil {
		return false
	}
	it.key = it.key[:0]
	return it.decodeAt(0)
}

func (it *blockIter) Next() bool {
	if it.err != nil || it.offset >= it.restartsOff {
		return false
	}
	if it.offset < 0 {
		return it.First()
	}
	return it.decodeAt(it.next)
}

// SeekGE moves to the first entry whose key is >= key.
func (it *blockIter) SeekGE(key []byte) bool {
	if it.err != nil || it.numRestarts == 0 {
		it.offset = it.restartsOff
		return false
	}
	r, ok := it.seekRestart(key)
	if !ok {
		return false
	}
	it.key = it.key[:0]
	for ok := it.decodeAt(it.restart(r)); ok; ok = it.decodeAt(it.next) {
		if bytes.Compare(it.key, key) >= 0 {
			return true
		}
	}
	return false
}

// SeekLT moves to the last entry whose key is < key.
func (it *blockIter) SeekLT(key []byte) bool {
	if it.err != nil || it.numRestarts == 0 {
		it.offset = -1
		return false
	}
	r, ok := it.seekRestart(key)
	if !ok || !it.fillCache(r) {
		return false
	}
	// The cached interval holds the last key < key, if any: later intervals
	// start with keys >= key.
	i := sort.Search(len(it.cache), func(i int) bool {
		return bytes.Compare(it.cachedKey(i), key) >= 0
	})
	if i == 0 {
		it.offset = -1 // only r == 0 can start with a key >= key
		return false
	}
	return it.useCache(i - 1)
}

func (it *blockIter) Last() bool {
	if it.err != nil || it.numRestarts == 0 {
		it.offset = -1
		return false
	}
	if !it.fillCache(it.numRestarts - 1) {
		return false
	}
	return it.useCache(len(it.cache) - 1)
}

func (it *blockIter) Prev() bool {
	if it.err != nil || it.offset < 0 {
		return false
	}
	if it.offset >= it.restartsOff {
		return it.Last()
	}
	// Forward steps may have left the cached interval; find the current
	// entry in the cache, refilling it with the right interval if needed.
	off := it.offset
	idx := it.findCached(off)
	if idx < 0 {
		r := sort.Search(it.numRestarts, func(i int) bool { return it.restart(i) > off }) - 1
		if !it.fillCache(r) {
			return false
		}
		if idx = it.findCached(off); idx < 0 {
			return it.corrupt("entry at offset %d not on an entry boundary", off)
		}
	}
	it.cacheIdx = idx
	if it.cacheIdx > 0 {
		return it.useCache(it.cacheIdx - 1)
	}
	if it.cacheRestart == 0 {
		it.offset = -1
		return false
	}
	if !it.fillCache(it.cacheRestart - 1) {
		return false
	}
	return it.useCache(len(it.cache) - 1)
}

// fillCache decodes every entry of restart interval r into the cache.
func (it *blockIter) fillCache(r int) bool {
	it.cache, it.cacheKeys, it.cacheRestart = it.cache[:0], it.cacheKeys[:0], -1
	end := it.restartsOff
	if r+1 < it.numRestarts {
		end = it.restart(r + 1)
	}
	it.key = it.key[:0]
	off := it.restart(r)
	for off < end {
		if !it.decodeAt(off) {
			return false
		}
		if it.next > end {
			return it.corrupt("entry at offset %d crosses a restart point", off)
		}
		it.cacheKeys = append(it.cacheKeys, it.key...)
		it.cache = append(it.cache, cachedEntry{
			offset: off, next: it.next, keyEnd: len(it.cacheKeys),
			valOff: it.next - len(it.val), valLen: len(it.val),
		})
		off = it.next
	}
	it.cacheRestart = r
	return true
}

// findCached returns the cache index of the entry at off, or -1.
func (it *blockIter) findCached(off int) int {
	if it.cacheRestart < 0 {
		return -1
	}
	if it.cacheIdx < len(it.cache) && it.cache[it.cacheIdx].offset == off {
		return it.cacheIdx
	}
	i := sort.Search(len(it.cache), func(i int) bool { return it.cache[i].offset >= off })
	if i < len(it.cache) && it.cache[i].offset == off {
		return i
	}
	return -1
}

func (it *blockIter) cachedKey(i int) []byte {
	start := 0
	if i > 0 {
		start = it.cache[i-1].keyEnd
	}
	return it.cacheKeys[start:it.cache[i].keyEnd]
}

func (it *blockIter) useCache(i int) bool {
	e := it.cache[i]
	it.cacheIdx = i
	it.offset, it.next = e.offset, e.next
	it.key = append(it.key[:0], it.cachedKey(i)...)
	it.val = it.data[e.valOff : e.valOff+e.valLen : e.valOff+e.valLen]
	return true
}
