package engine

import (
	"bytes"
	"sort"

	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/storage"
)

// pageIter iterates entries held in a slice in ascending key order: the
// memtable pages a Remote read gathered.
type pageIter struct {
	entries []storage.Entry
	i       int // -1 or len(entries): not at an entry
}

var _ kv.Iterator = (*pageIter)(nil)

func (it *pageIter) valid() bool { return it.i >= 0 && it.i < len(it.entries) }

func (it *pageIter) SeekGE(key []byte) bool {
	it.i = sort.Search(len(it.entries), func(i int) bool { return bytes.Compare(it.entries[i].Key, key) >= 0 })
	return it.valid()
}

func (it *pageIter) SeekLT(key []byte) bool {
	it.i = sort.Search(len(it.entries), func(i int) bool { return bytes.Compare(it.entries[i].Key, key) >= 0 }) - 1
	return it.valid()
}

func (it *pageIter) First() bool { it.i = 0; return it.valid() }
func (it *pageIter) Last() bool  { it.i = len(it.entries) - 1; return it.valid() }

func (it *pageIter) Next() bool {
	if it.i < len(it.entries) {
		it.i++
	}
	return it.valid()
}

func (it *pageIter) Prev() bool {
	if it.i >= 0 {
		it.i--
	}
	return it.valid()
}

func (it *pageIter) Key() []byte   { return it.entries[it.i].Key }
func (it *pageIter) Value() []byte { return it.entries[it.i].Value }
func (it *pageIter) Error() error  { return nil }
func (it *pageIter) Close() error  { return nil }
