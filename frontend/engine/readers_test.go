package engine

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// countingHeads also counts the HEADs that open an object.
type countingHeads struct {
	*countingStore
	mu    sync.Mutex
	heads map[string]int
}

func (s *countingHeads) Head(ctx context.Context, key string) (objectstore.Attrs, error) {
	s.mu.Lock()
	s.heads[key]++
	s.mu.Unlock()
	return s.countingStore.Head(ctx, key)
}

func putSSTable(t *testing.T, store objectstore.Store, name string, pks ...string) {
	t.Helper()
	var buf bytes.Buffer
	w := sstable.NewWriter(&buf, sstable.WriterOptions{Split: splitPartition, BlockSize: 256})
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

func newHeadStore(t *testing.T) *countingHeads {
	t.Helper()
	bucket, err := objectstore.NewFile(vfs.NewMem(), "bucket", nil)
	if err != nil {
		t.Fatal(err)
	}
	return &countingHeads{countingStore: &countingStore{Store: bucket}, heads: map[string]int{}}
}

func TestReadersKeepAndEvict(t *testing.T) {
	ctx := context.Background()
	store := newHeadStore(t)
	for _, name := range []string{"a", "b", "c"} {
		putSSTable(t, store, name, name+"1", name+"2")
	}
	rs := newReaders(store, nil, 2)

	// Concurrent opens of one object open it once.
	var wg sync.WaitGroup
	got := make([]*sstable.Reader, 8)
	for i := range got {
		wg.Go(func() {
			r, err := rs.open(ctx, "a")
			if err != nil {
				t.Error(err)
			}
			got[i] = r
		})
	}
	testwait.Wait(t, "the concurrent opens", &wg)
	for _, r := range got {
		if r != got[0] {
			t.Fatal("concurrent opens returned different readers")
		}
	}
	if store.heads["a"] != 1 {
		t.Fatalf("a opened %d times", store.heads["a"])
	}
	if !got[0].MayContain(prefixOf("a1")) {
		t.Fatal("the filter lost partition a1")
	}

	// b and c push a out: at most two readers are kept.
	for _, name := range []string{"b", "c", "b", "c"} {
		if _, err := rs.open(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if rs.len() != 2 || store.heads["b"] != 1 || store.heads["c"] != 1 {
		t.Fatalf("%d readers kept, heads %v", rs.len(), store.heads)
	}
	if _, err := rs.open(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if store.heads["a"] != 2 {
		t.Fatalf("evicted a opened %d times in all, want 2", store.heads["a"])
	}

	// A failed open is reported and not kept.
	if _, err := rs.open(ctx, "missing"); err == nil {
		t.Fatal("opened a missing object")
	}
	if _, err := rs.open(ctx, "missing"); err == nil || store.heads["missing"] != 2 {
		t.Fatalf("missing object: %v, %d attempts", err, store.heads["missing"])
	}
	if rs.len() != 2 {
		t.Fatalf("%d readers kept after failed opens", rs.len())
	}
}

func TestReadersThroughCache(t *testing.T) {
	ctx := context.Background()
	store := newHeadStore(t)
	putSSTable(t, store, "a", "a1", "a2", "a3")
	rs := newReaders(store, cache.NewMemory(1<<20, cache.Options{}), 8)
	r, err := rs.open(ctx, "a")
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
