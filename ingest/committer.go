package ingest

import (
	"context"
	"sync"
	"time"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/objectstore"
)

// SSTable is one flushed table object: the entries of one table in one
// token range (manifest.RangeOf) that a memtable held.
type SSTable struct {
	Table storage.TableID
	Range int
	Key   string // object key in the store
	Size  int64
	// FirstKey and LastKey bound the table's storage keys; MinToken and
	// MaxToken are their tokens.
	FirstKey, LastKey  []byte
	MinToken, MaxToken int64
	// MinTimestamp and MaxTimestamp bound the write timestamps (µs).
	MinTimestamp, MaxTimestamp int64
	Entries                    uint64
	Created                    time.Time
}

// Flush is the result of flushing one memtable of a shard: an SSTable per
// table and range it held, which together hold every record of the shard's
// commitlog after From and at or before Through.
type Flush struct {
	Shard         uint32
	From, Through commitlog.Position
	Tables        []SSTable
}

// A CommitMarker is a FlushCommitter that tells readers how far its
// commits reached: once Commit returns, CommitMark is at least a mark whose
// reach, in the manifest, shows the flush. A shard drops a memtable only
// after its Commit returns, so a reader of the memtables that is handed the
// mark read after its read knows which manifest state completes it (see
// Node.CommitMark). The mark never goes back.
type CommitMarker interface {
	FlushCommitter
	CommitMark() uint64
}

// FlushCommitter records flushes durably (in the cluster, in the manifest).
type FlushCommitter interface {
	// Commit records f and returns once the record is durable. A shard
	// commits its flushes in log order, and may commit one again after an
	// error it cannot interpret: a flush whose Through is not after the
	// shard's recorded position is already recorded and must succeed
	// without change. A committer may record f's SSTables one by one, if
	// Flushed advances only once all are recorded and Recorded reports
	// those that are.
	Commit(ctx context.Context, f Flush) error
	// Flushed returns the position through which committed SSTables hold the
	// shard's commitlog, or the zero Position if none do. It never exceeds
	// the Through of a flush not wholly recorded. Going back is safe,
	// though: records replayed again merge idempotently.
	Flushed(ctx context.Context, shard uint32) (commitlog.Position, error)
	// Partial returns, in log order, the Throughs after Flushed of the
	// shard's flushes that are recorded in part (by a process that
	// crashed). Replay ends its memtables there, so that those flushes are
	// retried with the same SSTables.
	Partial(ctx context.Context, shard uint32) ([]commitlog.Position, error)
	// Recorded returns the recorded SSTable of t.Table and t.Range with
	// object key t.Key, if any: a flush retried after a partial commit
	// reuses it rather than overwrite a committed object.
	Recorded(ctx context.Context, t SSTable) (SSTable, bool, error)
}

// TableReader reads the committed SSTables of a table. It must reflect
// every Commit that has returned, so that data never falls between a
// flushed memtable and its SSTables.
type TableReader interface {
	NewIter(ctx context.Context, table storage.TableID, lower, upper []byte) (kv.Iterator, error)
}

// MemCommitter is a FlushCommitter and TableReader kept in memory, for tests
// and single-process tools: "durable" means it outlives the shards that use
// it. It reads committed SSTables from the store.
type MemCommitter struct {
	store objectstore.Store

	mu      sync.Mutex
	flushed map[uint32]commitlog.Position
	tables  map[storage.TableID][]*memTable
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
	return &MemCommitter{store: store, flushed: map[uint32]commitlog.Position{}, tables: map[storage.TableID][]*memTable{}}
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

// Partial implements FlushCommitter: Commit records a flush at once, so
// there are none.
func (c *MemCommitter) Partial(ctx context.Context, shard uint32) ([]commitlog.Position, error) {
	return nil, ctx.Err()
}

// Recorded implements FlushCommitter.
func (c *MemCommitter) Recorded(ctx context.Context, t SSTable) (SSTable, bool, error) {
	if err := ctx.Err(); err != nil {
		return SSTable{}, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.tables[t.Table] {
		if m.Key == t.Key {
			return m.SSTable, true, nil
		}
	}
	return SSTable{}, false, nil
}

// SSTables returns the committed SSTables of table.
func (c *MemCommitter) SSTables(table storage.TableID) []SSTable {
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
func (c *MemCommitter) NewIter(ctx context.Context, table storage.TableID, lower, upper []byte) (kv.Iterator, error) {
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
	r, err := tablestore.Open(ctx, c.store, t.Key, nil)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	t.r = r
	c.mu.Unlock()
	return r, nil
}
