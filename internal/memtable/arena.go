package memtable

import (
	"errors"
	"sync/atomic"
	"unsafe"
)

// ErrFull means the arena's address space cannot take the entry: the
// memtable must be flushed and replaced.
var ErrFull = errors.New("memtable: arena full")

const (
	// maxChunks bounds the chunk table; with 1 MiB chunks the arena spans
	// the uint32 address space (4 GiB less the last chunk).
	maxChunks = 4096
	// defaultChunkShift makes 1 MiB chunks: large enough that the tail left
	// unused when an entry does not fit is noise, small enough that an idle
	// memtable holds little.
	defaultChunkShift = 20
	minChunkShift     = 12
	align             = 4
)

// arena hands out memory from chunks of 1<<shift bytes addressed by uint32
// offsets: the high bits select the chunk, the low bits a byte in it. An
// entry never straddles two chunks (one larger than a chunk gets a chunk of
// its own, occupying several slots of address space), so a record is always
// read through the chunk of its own address. Chunks are never moved or
// freed while the memtable lives: an offset published with an atomic store
// makes the bytes written before it visible to the reader that loads it.
//
// Offsets grow monotonically with allocation order, which the memtable uses
// to decide visibility: a snapshot sees exactly the records allocated below
// the offset published by the last Commit before it.
type arena struct {
	chunks [][]byte // maxChunks slots, filled in order
	shift  uint32
	mask   uint32
	pos    uint64 // next free offset; written only by the writer
	size   atomic.Int64
}

func (a *arena) init(shift uint32) {
	a.chunks = make([][]byte, maxChunks)
	a.shift = shift
	a.mask = 1<<shift - 1
}

// alloc reserves n bytes (rounded up to the alignment) and returns their
// offset. Size grows by the reserved bytes plus any chunk tail skipped
// because the entry did not fit in it.
func (a *arena) alloc(n uint64) (uint32, error) {
	n = (n + align - 1) &^ (align - 1)
	chunkSize := uint64(1) << a.shift
	if off := a.pos & uint64(a.mask); off != 0 && off+n > chunkSize {
		waste := chunkSize - off
		a.pos += waste
		a.size.Add(int64(waste))
	}
	start := a.pos
	if start&uint64(a.mask) == 0 {
		// A fresh chunk: big enough for n, and as many address slots as
		// that takes.
		slots := max((n+chunkSize-1)>>a.shift, 1)
		// The last slot stays unused so that every offset, including the
		// end of the last entry that Commit publishes, fits in a uint32.
		if start>>a.shift+slots > maxChunks-1 {
			return 0, ErrFull
		}
		a.chunks[start>>a.shift] = make([]byte, max(n, chunkSize))
		if n > chunkSize {
			a.pos = start + slots<<a.shift
			a.size.Add(int64(n))
			return uint32(start), nil
		}
	}
	a.pos += n
	a.size.Add(int64(n))
	return uint32(start), nil
}

// bytes returns the n bytes at offset o+rel of the record at offset o, with
// capacity capped so that appending to it never writes into the arena.
func (a *arena) bytes(o, rel, n uint32) []byte {
	c := a.chunks[o>>a.shift]
	i := o&a.mask + rel
	return c[i : i+n : i+n]
}

// word returns the 4-byte word at offset o+rel of the record at offset o.
// Words are aligned, so they can be accessed atomically.
func (a *arena) word(o uint32, rel int32) *uint32 {
	return (*uint32)(a.ptr(o, rel))
}

// ptr returns the address of offset o+rel of the record at offset o.
func (a *arena) ptr(o uint32, rel int32) unsafe.Pointer {
	c := a.chunks[o>>a.shift]
	return unsafe.Pointer(&c[int32(o&a.mask)+rel])
}
