package tablestore

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// countingStore counts the HEADs that open an object.
type countingStore struct {
	objectstore.Store
	mu    sync.Mutex
	heads map[string]int
}

func (s *countingStore) Head(ctx context.Context, key string) (objectstore.Attrs, error) {
	s.mu.Lock()
	s.heads[key]++
	s.mu.Unlock()
	return s.Store.Head(ctx, key)
}

func newStore(t *testing.T) *countingStore {
	t.Helper()
	bucket, err := objectstore.NewFile(vfs.NewMem(), "bucket", nil)
	if err != nil {
		t.Fatal(err)
	}
	return &countingStore{Store: bucket, heads: map[string]int{}}
}

type entry struct{ key, value []byte }

// partition returns a partition's header, with a deletion at ts, and a
// row written at ts.
func partition(t *testing.T, pk string, ts int64) []entry {
	t.Helper()
	tok := token.Murmur3([]byte(pk))
	row, err := keys.RowKey(nil, tok, []byte(pk), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := model.Header{Deletion: model.Deletion{MarkedForDeleteAt: ts - 1, LocalDeletionTime: 100}}
	r := model.Row{Liveness: model.Liveness{Present: true, Timestamp: ts}, Cells: []model.Cell{{Column: 1, Timestamp: ts, Value: []byte("v")}}}
	return []entry{{keys.HeaderKey(nil, tok, []byte(pk)), model.AppendHeader(nil, &h)}, {row, model.AppendRow(nil, &r)}}
}

// entries returns the partitions of pks, in key order.
func entries(t *testing.T, pks ...string) []entry {
	var es []entry
	for i, pk := range pks {
		es = append(es, partition(t, pk, int64(10+i))...)
	}
	slices.SortFunc(es, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
	return es
}

func write(t *testing.T, store objectstore.Store, key string, es []entry) Table {
	t.Helper()
	w, err := Create(context.Background(), store, key, sstable.WriterOptions{BlockSize: 256, WriterID: "test", CreatedAt: time.Unix(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func TestWriteAndOpen(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	es := entries(t, "a", "b", "c")
	tbl := write(t, store, "t.sst", es)

	a, err := store.Head(ctx, "t.sst")
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Size != a.Size {
		t.Fatalf("Size %d, object %d bytes", tbl.Size, a.Size)
	}
	p := tbl.Props
	first, _ := keys.Token(es[0].key)
	last, _ := keys.Token(es[len(es)-1].key)
	if tbl.MinToken != first || tbl.MaxToken != last || !bytes.Equal(p.FirstKey, es[0].key) || !bytes.Equal(p.LastKey, es[len(es)-1].key) {
		t.Fatalf("tokens %d..%d, want %d..%d; keys %x..%x", tbl.MinToken, tbl.MaxToken, first, last, p.FirstKey, p.LastKey)
	}
	// The statistics are the values': three rows and cells written at
	// 10..12, three partition deletions at 9..11 (local time 100).
	if p.Entries != 6 || p.Rows != 3 || p.Cells != 3 || p.MinTimestamp != 9 || p.MaxTimestamp != 12 || p.MinLocalDeletionTime != 100 || p.WriterID != "test" {
		t.Fatalf("properties %+v", p)
	}

	r, err := Open(ctx, store, "t.sst", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range []string{"a", "b", "c"} {
		n, _ := keys.PartitionPrefixLen(partition(t, pk, 0)[0].key)
		if !r.MayContain(partition(t, pk, 0)[0].key[:n]) {
			t.Fatalf("the filter lost partition %s: it must hold partition prefixes", pk)
		}
	}
	it := r.NewIter(ctx, nil, nil)
	var got []entry
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, entry{slices.Clone(it.Key()), slices.Clone(it.Value())})
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, es, func(a, b entry) bool { return bytes.Equal(a.key, b.key) && bytes.Equal(a.value, b.value) }) {
		t.Fatalf("read back %d entries, wrote %d", len(got), len(es))
	}

	if _, err := Open(ctx, store, "missing.sst", nil); !objectstore.IsNotFound(err) {
		t.Fatalf("open of a missing object: %v", err)
	}
}

func TestWriterRefusesWhatIsNotAModelValue(t *testing.T) {
	store := newStore(t)
	w, err := Create(context.Background(), store, "bad.sst", sstable.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := partition(t, "a", 1)[0]
	if err := w.Add(e.key, []byte{0xff}); err == nil {
		t.Fatal("a value that does not decode was written")
	}
	w.Abort()
	if _, err := store.Head(context.Background(), "bad.sst"); !objectstore.IsNotFound(err) {
		t.Fatalf("aborted upload stored: %v", err)
	}
}

func TestEmptyTableIsNotStored(t *testing.T) {
	store := newStore(t)
	if tbl := write(t, store, "empty.sst", nil); tbl.Size != 0 || tbl.Props.Entries != 0 {
		t.Fatalf("empty table %+v", tbl)
	}
	if _, err := store.Head(context.Background(), "empty.sst"); !objectstore.IsNotFound(err) {
		t.Fatalf("empty table stored: %v", err)
	}
}

func TestNewWriterCountsBytes(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, sstable.WriterOptions{BufferSize: 64})
	for _, e := range entries(t, "a", "b") {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Size != int64(buf.Len()) || w.Written() != tbl.Size {
		t.Fatalf("Size %d, Written %d, %d bytes written", tbl.Size, w.Written(), buf.Len())
	}
}

func TestReaderCacheKeepsAndEvicts(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	for _, name := range []string{"a", "b", "c"} {
		write(t, store, name, entries(t, name+"1", name+"2"))
	}
	rs := NewReaderCache(store, nil, 2)

	// Concurrent opens of one object open it once.
	var wg sync.WaitGroup
	got := make([]*sstable.Reader, 8)
	for i := range got {
		wg.Go(func() {
			r, err := rs.Open(ctx, "a")
			if err != nil {
				t.Error(err)
			}
			got[i] = r
		})
	}
	wg.Wait()
	for _, r := range got {
		if r != got[0] {
			t.Fatal("concurrent opens returned different readers")
		}
	}
	if store.heads["a"] != 1 {
		t.Fatalf("a opened %d times", store.heads["a"])
	}

	// b and c push a out: at most two readers are kept.
	for _, name := range []string{"b", "c", "b", "c"} {
		if _, err := rs.Open(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if rs.Len() != 2 || store.heads["b"] != 1 || store.heads["c"] != 1 {
		t.Fatalf("%d readers kept, heads %v", rs.Len(), store.heads)
	}
	if _, err := rs.Open(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if store.heads["a"] != 2 {
		t.Fatalf("evicted a opened %d times in all, want 2", store.heads["a"])
	}

	// A failed open is reported and not kept.
	if _, err := rs.Open(ctx, "missing"); err == nil {
		t.Fatal("opened a missing object")
	}
	if _, err := rs.Open(ctx, "missing"); err == nil || store.heads["missing"] != 2 {
		t.Fatalf("missing object: %v, %d attempts", err, store.heads["missing"])
	}
	if rs.Len() != 2 {
		t.Fatalf("%d readers kept after failed opens", rs.Len())
	}
}
