package ingest

import (
	"bytes"
	"context"
	"testing"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// putTable stores an SSTable of the given rows (key order) and describes it.
func putTable(t *testing.T, store objectstore.Store, name string, table storage.TableID, rows ...*storage.Mutation) SSTable {
	t.Helper()
	var buf bytes.Buffer
	w := tablestore.NewWriter(&buf, sstable.WriterOptions{})
	for _, m := range rows {
		if err := w.Add(m.Entries[0].Key, m.Entries[0].Value); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	props := tbl.Props
	if _, err := store.Put(context.Background(), name, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return SSTable{Table: table, Key: name, Size: int64(buf.Len()), FirstKey: props.FirstKey, LastKey: props.LastKey, Entries: props.Entries}
}

func TestMemCommitter(t *testing.T) {
	ctx := context.Background()
	store, err := objectstore.NewFile(vfs.NewMem(), "bucket", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := NewMemCommitter(store)
	if p, err := c.Flushed(ctx, 1); err != nil || p != (commitlog.Position{}) {
		t.Fatalf("empty committer: %v, %v", p, err)
	}
	a := putTable(t, store, "a", 5, rowMutation(5, "x", 1, 1, "old"), rowMutation(5, "x", 2, 1, "a"))
	b := putTable(t, store, "b", 5, rowMutation(5, "x", 1, 2, "new"))
	at := func(seg uint64, off int64) commitlog.Position { return commitlog.Position{Segment: seg, Offset: off} }
	if err := c.Commit(ctx, Flush{Shard: 1, Through: at(1, 100), Tables: []SSTable{a}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx, Flush{Shard: 1, Through: at(2, 24), Tables: []SSTable{b}}); err != nil {
		t.Fatal(err)
	}
	// A repeated commit is already recorded and changes nothing.
	if err := c.Commit(ctx, Flush{Shard: 1, Through: at(1, 100), Tables: []SSTable{a}}); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Flushed(ctx, 1); p != at(2, 24) {
		t.Fatalf("flushed through %v", p)
	}
	if p, _ := c.Flushed(ctx, 2); p != (commitlog.Position{}) {
		t.Fatalf("other shard flushed through %v", p)
	}
	if n := len(c.SSTables(5)); n != 2 {
		t.Fatalf("%d SSTables, want 2", n)
	}
	it, err := c.NewIter(ctx, 5, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, it)
	if len(got) != 2 || got[string(rowKey("x", 1))] != "new" || got[string(rowKey("x", 2))] != "a" {
		t.Fatalf("merged SSTables hold %v", got)
	}
	// Bounds skip tables outside them.
	it, err = c.NewIter(ctx, 5, rowKey("x", 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(t, it); len(got) != 1 {
		t.Fatalf("bounded read holds %v", got)
	}
	if it, err := c.NewIter(ctx, 6, nil, nil); err != nil || count(t, it) != 0 {
		t.Fatalf("other table: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Commit(cctx, Flush{Shard: 1, Through: at(3, 24)}); err == nil {
		t.Fatal("commit with a dead context succeeded")
	}
}
