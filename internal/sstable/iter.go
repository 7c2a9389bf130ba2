package sstable

import (
	"bytes"
	"context"
	"errors"

	"github.com/sedimentdb/sediment/internal/kv"
)

// iterPos says where an iterator stands when it is not at an entry.
type iterPos int8

const (
	posValid iterPos = iota
	posBeforeStart
	posAfterEnd
)

// Iter walks a table's entries within [lower, upper). It reads each data
// block it visits once per visit and skips blocks that the bounds exclude
// according to the index alone.
type Iter struct {
	r            *Reader
	ctx          context.Context
	lower, upper []byte

	bi  int // index of the block loaded into blk, -1 if none
	blk blockIter
	pos iterPos
	err error

	phys, raw []byte
}

var _ kv.Iterator = (*Iter)(nil)

// NewIter returns an iterator over the entries with lower <= key < upper; a
// nil bound is open. Block reads use ctx.
func (r *Reader) NewIter(ctx context.Context, lower, upper []byte) kv.Iterator {
	return &Iter{r: r, ctx: ctx, lower: lower, upper: upper, bi: -1, pos: posBeforeStart}
}

// load makes block i current.
func (it *Iter) load(i int) bool {
	if it.bi == i {
		return true
	}
	it.bi = -1
	b, err := it.r.readBlock(it.ctx, i, &it.phys, &it.raw)
	if err == nil {
		err = it.blk.init(b)
	}
	if err != nil {
		it.err = err
		return false
	}
	it.bi = i
	return true
}

func (it *Iter) fail() bool {
	it.pos = posAfterEnd
	return false
}

// forward settles the iterator after a forward positioning step of blk in
// block it.bi that returned ok: it moves on to later blocks as needed and
// applies the upper bound.
func (it *Iter) forward(ok bool) bool {
	for !ok {
		if it.blk.err != nil {
			it.err = it.blk.err
			return it.fail()
		}
		// Keys of block bi+1 are > sep(bi); none can be below upper.
		if it.bi+1 >= len(it.r.handles) || (it.upper != nil && bytes.Compare(it.r.sep(it.bi), it.upper) >= 0) {
			it.pos = posAfterEnd
			return false
		}
		if !it.load(it.bi + 1) {
			return it.fail()
		}
		ok = it.blk.First()
	}
	if it.upper != nil && bytes.Compare(it.blk.key, it.upper) >= 0 {
		it.pos = posAfterEnd
		return false
	}
	it.pos = posValid
	return true
}

// backward is forward's mirror for reverse steps and the lower bound.
func (it *Iter) backward(ok bool) bool {
	for !ok {
		if it.blk.err != nil {
			it.err = it.blk.err
			return it.fail()
		}
		// Keys of block bi-1 are <= sep(bi-1).
		if it.bi == 0 || (it.lower != nil && bytes.Compare(it.r.sep(it.bi-1), it.lower) < 0) {
			it.pos = posBeforeStart
			return false
		}
		if !it.load(it.bi - 1) {
			return it.fail()
		}
		ok = it.blk.Last()
	}
	if it.lower != nil && bytes.Compare(it.blk.key, it.lower) < 0 {
		it.pos = posBeforeStart
		return false
	}
	it.pos = posValid
	return true
}

func (it *Iter) SeekGE(key []byte) bool {
	if it.err != nil {
		return false
	}
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	i := it.r.findBlock(key)
	if i == len(it.r.handles) {
		it.pos = posAfterEnd
		return false
	}
	if !it.load(i) {
		return it.fail()
	}
	return it.forward(it.blk.SeekGE(key))
}

func (it *Iter) SeekLT(key []byte) bool {
	if it.err != nil {
		return false
	}
	if it.upper != nil && bytes.Compare(key, it.upper) > 0 {
		key = it.upper
	}
	if len(it.r.handles) == 0 {
		it.pos = posBeforeStart
		return false
	}
	// The last key < key is in the first block whose separator is >= key,
	// or in an earlier one.
	i := min(it.r.findBlock(key), len(it.r.handles)-1)
	if !it.load(i) {
		return it.fail()
	}
	return it.backward(it.blk.SeekLT(key))
}

func (it *Iter) First() bool {
	if it.err != nil {
		return false
	}
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	if len(it.r.handles) == 0 {
		it.pos = posAfterEnd
		return false
	}
	if !it.load(0) {
		return it.fail()
	}
	return it.forward(it.blk.First())
}

func (it *Iter) Last() bool {
	if it.err != nil {
		return false
	}
	if it.upper != nil {
		return it.SeekLT(it.upper)
	}
	if len(it.r.handles) == 0 {
		it.pos = posBeforeStart
		return false
	}
	if !it.load(len(it.r.handles) - 1) {
		return it.fail()
	}
	return it.backward(it.blk.Last())
}

func (it *Iter) Next() bool {
	switch {
	case it.err != nil || it.pos == posAfterEnd:
		return false
	case it.pos == posBeforeStart:
		return it.First()
	}
	return it.forward(it.blk.Next())
}

func (it *Iter) Prev() bool {
	switch {
	case it.err != nil || it.pos == posBeforeStart:
		return false
	case it.pos == posAfterEnd:
		return it.Last()
	}
	return it.backward(it.blk.Prev())
}

func (it *Iter) Key() []byte {
	if it.pos != posValid {
		return nil
	}
	return it.blk.key
}

func (it *Iter) Value() []byte {
	if it.pos != posValid {
		return nil
	}
	return it.blk.val
}

func (it *Iter) Error() error { return it.err }

// Close releases the iterator's buffers; later calls fail.
func (it *Iter) Close() error {
	err := it.err
	it.phys, it.raw, it.blk = nil, nil, blockIter{}
	it.bi, it.pos, it.err = -1, posAfterEnd, errClosed
	return err
}

var errClosed = errors.New("sstable: iterator closed")
