package rpc_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"sort"
	"testing"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// sliceIter iterates entries sorted by key.
type sliceIter struct {
	es []storage.Entry
	i  int
}

func (it *sliceIter) valid() bool { return it.i >= 0 && it.i < len(it.es) }
func (it *sliceIter) SeekGE(k []byte) bool {
	it.i = sort.Search(len(it.es), func(i int) bool { return bytes.Compare(it.es[i].Key, k) >= 0 })
	return it.valid()
}
func (it *sliceIter) SeekLT(k []byte) bool { it.SeekGE(k); it.i--; return it.valid() }
func (it *sliceIter) First() bool          { it.i = 0; return it.valid() }
func (it *sliceIter) Last() bool           { it.i = len(it.es) - 1; return it.valid() }
func (it *sliceIter) Next() bool           { it.i++; return it.valid() }
func (it *sliceIter) Prev() bool           { it.i--; return it.valid() }
func (it *sliceIter) Key() []byte          { return it.es[it.i].Key }
func (it *sliceIter) Value() []byte        { return it.es[it.i].Value }
func (it *sliceIter) Error() error         { return nil }
func (it *sliceIter) Close() error         { return nil }

var _ kv.Iterator = (*sliceIter)(nil)

func prefixOf(pk string) []byte {
	return keys.AppendPartitionPrefix(nil, token.Murmur3([]byte(pk)), []byte(pk))
}

func TestPartitionDigest(t *testing.T) {
	a, b := pk(1), pk(2)
	entries := []storage.Entry{
		{Key: rowKey(a, 1), Value: rowValue(1, "x")},
		{Key: rowKey(a, 2), Value: rowValue(1, "y")},
		{Key: rowKey(b, 1), Value: rowValue(1, "z")},
	}
	slices := func(es ...storage.Entry) kv.Iterator {
		es = append([]storage.Entry(nil), es...)
		sort.Slice(es, func(i, j int) bool { return bytes.Compare(es[i].Key, es[j].Key) < 0 })
		return &sliceIter{es: es, i: -1}
	}
	digest := func(it kv.Iterator, prefix []byte) rpc.Digest {
		t.Helper()
		d, err := rpc.PartitionDigest(it, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if got := digest(slices(), prefixOf(a)); got != sha256.Sum256(nil) {
		t.Fatalf("empty partition: %x", got)
	}
	// Only the partition's entries count.
	da := digest(slices(entries...), prefixOf(a))
	if got := digest(slices(entries[:2]...), prefixOf(a)); got != da {
		t.Fatal("another partition's entry changed the digest")
	}
	if digest(slices(entries...), prefixOf(b)) == da {
		t.Fatal("two partitions share a digest")
	}
	// Any change to a key or a value changes it, and so does moving a
	// byte across the boundary between key and value (the lengths are
	// hashed too).
	for name, es := range map[string][]storage.Entry{
		"value":   {entries[0], {Key: entries[1].Key, Value: rowValue(2, "y")}},
		"key":     {entries[0], {Key: rowKey(a, 3), Value: entries[1].Value}},
		"missing": {entries[0]},
		"boundary": {entries[0], {
			Key:   entries[1].Key[:len(entries[1].Key)-1],
			Value: append([]byte{entries[1].Key[len(entries[1].Key)-1]}, entries[1].Value...),
		}},
	} {
		if digest(slices(es...), prefixOf(a)) == da {
			t.Errorf("%s changed, digest did not", name)
		}
	}
}

func TestApplyIfOverRPC(t *testing.T) {
	ctx := context.Background()
	n := openNode(t, vfs.NewMem(), "log", 2)
	addr, _ := serve(t, ingest.RPCHandler(n), rpc.Options{})
	c := dial(t, addr, rpc.Options{})
	const table = 3
	p := pk(7)
	prefix := prefixOf(p)
	current := func() rpc.Digest {
		t.Helper()
		it := n.NewIter(table, prefix, keys.AppendPartitionEnd(nil, prefix))
		defer it.Close()
		d, err := rpc.PartitionDigest(it, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	empty := current()
	if ok, err := c.ApplyIf(ctx, rowMutation(table, p, 1, 10, "first"), empty); !ok || err != nil {
		t.Fatalf("first write on the empty digest: %v, %v", ok, err)
	}
	// The same expectation is stale now: a conflict, and nothing written.
	if ok, err := c.ApplyIf(ctx, rowMutation(table, p, 2, 10, "second"), empty); ok || err != nil {
		t.Fatalf("write on a stale digest: %v, %v, want a conflict", ok, err)
	}
	if got := readAll(t, n, table, nil, nil, false); len(got) != 1 {
		t.Fatalf("%d entries after a conflict, want 1", len(got))
	}
	d := current()
	// A flush moves the partition from the memtables to an SSTable: the
	// digest, over the merged entries, stays.
	if err := n.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, n, table, nil, nil, false); len(got) != 0 {
		t.Fatalf("%d memtable entries after the flush", len(got))
	}
	if ok, err := c.ApplyIf(ctx, rowMutation(table, p, 2, 11, "second"), d); !ok || err != nil {
		t.Fatalf("write on the digest read before a flush: %v, %v", ok, err)
	}

	bad := map[string]*storage.Mutation{
		"no entries": {Table: table},
		"bad key":    {Table: table, Entries: []storage.Entry{{Key: []byte{1}, Value: rowValue(1, "v")}}},
		"two partitions": {Table: table, Entries: []storage.Entry{
			{Key: rowKey(pk(1), 1), Value: rowValue(1, "v")},
			{Key: rowKey(pk(2), 1), Value: rowValue(1, "v")},
		}},
	}
	for name, m := range bad {
		if ok, err := c.ApplyIf(ctx, m, empty); ok || !errors.Is(err, storage.ErrInvalidMutation) {
			t.Errorf("%s: %v, %v, want ErrInvalidMutation", name, ok, err)
		}
	}
}

func TestTruncateOverRPC(t *testing.T) {
	ctx := context.Background()
	n, committed := openNodeCommitter(t, vfs.NewMem(), "log", 2)
	addr, _ := serve(t, ingest.RPCHandler(n), rpc.Options{})
	c := dial(t, addr, rpc.Options{})
	// count counts a table's entries in the memtables and the committed
	// SSTables: a truncation queues the memtables it leaves for flush.
	count := func(table storage.TableID) int {
		t.Helper()
		sst, err := committed.NewIter(ctx, table, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		it := kv.Merging(model.Merge, n.NewIter(table, nil, nil), sst)
		defer it.Close()
		k := 0
		for ok := it.First(); ok; ok = it.Next() {
			k++
		}
		if err := it.Error(); err != nil {
			t.Fatal(err)
		}
		return k
	}
	for i := range 20 {
		for _, table := range []storage.TableID{1, 2} {
			if err := c.Apply(ctx, rowMutation(table, pk(i), 1, 1, "v")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Truncate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, n, 1, nil, nil, false); len(got) != 0 {
		t.Fatalf("%d memtable entries of the truncated table left", len(got))
	}
	if got := count(2); got != 20 {
		t.Fatalf("%d entries of the other table, want 20", got)
	}
	// Writes after the truncation stay.
	if err := c.Apply(ctx, rowMutation(1, pk(1), 1, 2, "w")); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, n, 1, nil, nil, false); len(got) != 1 {
		t.Fatalf("%d entries written after the truncation, want 1", len(got))
	}
}
