package ingest

import (
	"encoding/binary"

	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/storage"
)

// A shard's memtables hold every table: an entry's memtable key is its
// table ID (4 bytes, big-endian, so each table's entries are contiguous)
// followed by its storage key.
const tablePrefixLen = 4

func appendTableKey(dst []byte, t storage.TableID, key []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(t))
	return append(dst, key...)
}

// tableBounds returns the memtable bounds of a table's keys in
// [lower, upper); nil bounds are open.
func tableBounds(t storage.TableID, lower, upper []byte) (lo, hi []byte) {
	lo = appendTableKey(nil, t, lower)
	switch {
	case upper != nil:
		hi = appendTableKey(nil, t, upper)
	case t < 1<<32-1:
		hi = appendTableKey(nil, t+1, nil)
	}
	return lo, hi
}

// tableIter presents one table's entries of a memtable iterator (bounded
// to that table) with the table prefix removed from keys.
type tableIter struct {
	kv.Iterator
	table storage.TableID
	buf   []byte
}

var _ kv.Iterator = (*tableIter)(nil)

func (it *tableIter) seekKey(key []byte) []byte {
	it.buf = appendTableKey(it.buf[:0], it.table, key)
	return it.buf
}

func (it *tableIter) SeekGE(key []byte) bool { return it.Iterator.SeekGE(it.seekKey(key)) }
func (it *tableIter) SeekLT(key []byte) bool { return it.Iterator.SeekLT(it.seekKey(key)) }

func (it *tableIter) Key() []byte {
	k := it.Iterator.Key()
	if len(k) < tablePrefixLen {
		return nil
	}
	return k[tablePrefixLen:]
}
