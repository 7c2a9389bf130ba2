package engine

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

func putSSTable(t *testing.T, store objectstore.Store, name string, pks ...string) {
	t.Helper()
	var buf bytes.Buffer
	w := tablestore.NewWriter(&buf, sstable.WriterOptions{BlockSize: 256})
	slices.SortFunc(pks, func(a, b string) int { return bytes.Compare(prefixOf(a), prefixOf(b)) })
	for _, pk := range pks {
		for ck := range int64(20) {
			e := insert(pk, ck, 1, "value", 0, 100)
			if err := w.Add(e.Key, e.Value); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(context.Background(), name, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func newCountingStore(t *testing.T) *countingStore {
	t.Helper()
	bucket, err := objectstore.NewFile(vfs.NewMem(), "bucket", nil)
	if err != nil {
		t.Fatal(err)
	}
	return &countingStore{Store: bucket}
}

// TestReadersThroughCache checks that the read path reads SSTable blocks
// through its cache tier.
func TestReadersThroughCache(t *testing.T) {
	ctx := context.Background()
	store := newCountingStore(t)
	putSSTable(t, store, "a", "a1", "a2", "a3")
	rs := tablestore.NewReaderCache(store, blocksOf(cache.NewMemory(1<<20, cache.Options{})), 8)
	r, err := rs.Open(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	read := func() int {
		it := r.NewIter(ctx, nil, nil)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Error(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		return n
	}
	if n := read(); n != 60 {
		t.Fatalf("%d entries, want 60", n)
	}
	before := store.gets.Load()
	if n := read(); n != 60 {
		t.Fatalf("%d entries, want 60", n)
	}
	if gets := store.gets.Load() - before; gets != 0 {
		t.Fatalf("a cached read made %d GETs", gets)
	}
}
