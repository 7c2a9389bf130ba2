package ingest

import (
	"context"
	"fmt"
	"sync"

	"github.com/sedimentdb/sediment/commitlog"
	"github.com/sedimentdb/sediment/kv"
	"github.com/sedimentdb/sediment/model"
	"github.com/sedimentdb/sediment/objectstore"
	"github.com/sedimentdb/sediment/sstable"
)

// SSTable is one flushed table object.
type SSTable struct {
	Table TableID
	Key   string // object key in the store
	Size  int64
	// FirstKey and LastKey bound the table's storage keys.
	FirstKey, LastKey []byte
	Entries           uint64
}

// Flush is the result of flushing one memtable of a shard: an SSTable per
// table it held, which together hold every record of the shard's commitlog
// at or before Through.
type Flush struct {
	Shard   uint32
	Through commitlog.Position
	Tables  []SSTable
}

// FlushCommitter records flushes durably (in the cluster, in the manifest).
type FlushCommitter interface {
	// Commit records f atomically and returns once the record is durable.
	// A shard commits its flushes in log order, and may commit one again
	// after an error it cannot interpret: a flush whose Through is not
	// after the shard's recorded position is already recorded and must
	// succeed without change.
	Commit(ctx context.Context, f Flush) error
	// Flushed returns the position through which committed SSTables hold the
	// shard's commitlog, or the zero Position if none do.
	Flushed(ctx context.Context, shard uint32) (commitlog.Position, error)
}

// TableReader reads the committed SSTables of a table. It must reflect
// every Commit that has returned, so that data never falls between a
// flushed memtable and its SSTables.
type TableReader interface {
	NewIter(ctx context.Context, table TableID, lower, upper []byte) (kv.Iterator, error)
}

// MemCommitter is a FlushCommitter and TableReader kept in memory, for tests
// and single-process tools: "durable" means it outlives the shards that use
// it. It reads committed SSTables from the store.
type MemCommitter struct {
	store objectstore.Store

	mu      sync.Mutex
	flushed map[uint32]commitlog.Position
	tables  map[TableID][]*memTable
}

type memTable struct {
	SSTable
	r *sstable.Reader // opened on first read
}

var (
	_ FlushCommitter = (*MemCommitter)(nil)
	_ TableReader    = (*MemCommitter)(nil)
)

// NewMemCommitter returns an empty MemCommitter reading SSTables from store.
func NewMemCommitter(store objectstore.Store) *MemCommitter {
	return &MemCommitter{store: store, flushed: map[uint32]commitlog.Position{}, tables: map[TableID][]*memTable{}}
}

// Commit implements FlushCommitter.
func (c *MemCommitter) Commit(ctx context.Context, f Flush) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.Through.Compare(c.flushed[f.Shard]) <= 0 {
		return nil
	}
	for _, t := range f.Tables {
		c.tables[t.Table] = append(c.tables[t.Table], &memTable{SSTable: t})
	}
	c.flushed[f.Shard] = f.Through
	return nil
}

// Flushed implements FlushCommitter.
func (c *MemCommitter) Flushed(ctx context.Context, shard uint32) (commitlog.Position, error) {
	if err := ctx.Err(); err != nil {
		return commitlog.Position{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushed[shard], nil
}

// SSTables returns the committed SSTables of table.
func (c *MemCommitter) SSTables(table TableID) []SSTable {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]SSTable, len(c.tables[table]))
	for i, t := range c.tables[table] {
		out[i] = t.SSTable
	}
	return out
}

// NewIter implements TableReader: it merges every committed SSTable of table
// whose key range meets [lower, upper).
func (c *MemCommitter) NewIter(ctx context.Context, table TableID, lower, upper []byte) (kv.Iterator, error) {
	c.mu.Lock()
	ts := append([]*memTable(nil), c.tables[table]...)
	c.mu.Unlock()
	var its []kv.Iterator
	for _, t := range ts {
		if (upper != nil && string(t.FirstKey) >= string(upper)) || (lower != nil && string(t.LastKey) < string(lower)) {
			continue
		}
		r, err := c.open(ctx, t)
		if err != nil {
			for _, it := range its {
				it.Close()
			}
			return nil, err
		}
		its = append(its, r.NewIter(ctx, lower, upper))
	}
	return kv.Merging(model.Merge, its...), nil
}

func (c *MemCommitter) open(ctx context.Context, t *memTable) (*sstable.Reader, error) {
	c.mu.Lock()
	r := t.r
	c.mu.Unlock()
	if r != nil {
		return r, nil
	}
	ra, err := objectstore.NewReaderAt(ctx, c.store, t.Key)
	if err != nil {
		return nil, fmt.Errorf("ingest: open %s: %w", t.Key, err)
	}
	r, err = sstable.Open(ctx, ra, ra.Size(), sstable.ReaderOptions{Split: splitPartition})
	if err != nil {
		return nil, fmt.Errorf("ingest: open %s: %w", t.Key, err)
	}
	c.mu.Lock()
	t.r = r
	c.mu.Unlock()
	return r, nil
}
