package ingest

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
)

// ViewCommitter is the FlushCommitter a node whose memtables are read
// with a View's SSTables (the engine's read path) must flush through: its
// Commit returns only once view shows the committed SSTables. A shard drops
// a memtable from its read set after the commit returns, so no read can
// miss a write between the memtable and a View that has not caught up with
// the manifest yet.
//
// Its mark is the view's SSTablesRevision once a commit shows (at first,
// when the committer is made): a node hands it out with every memtable page,
// and a remote reader waits for its own View to reach it before choosing
// SSTables, so that a frontend's View that trails the node's cannot miss
// what the node's memtables dropped.
type ViewCommitter struct {
	FlushCommitter
	view *manifest.View
	mark atomic.Uint64
}

var _ CommitMarker = (*ViewCommitter)(nil)

// NewViewCommitter wraps c, the committer that records flushes in the
// manifest that view watches.
func NewViewCommitter(c FlushCommitter, view *manifest.View) *ViewCommitter {
	vc := &ViewCommitter{FlushCommitter: c, view: view}
	// The mark starts where view is: a node restarted after a crash replays
	// only what its previous process had not committed, so a reader must
	// see those commits too, and view, started after them, shows them.
	vc.mark.Store(view.SSTablesRevision())
	return vc
}

// Commit implements FlushCommitter.
func (c *ViewCommitter) Commit(ctx context.Context, f Flush) error {
	if err := c.FlushCommitter.Commit(ctx, f); err != nil {
		return err
	}
	if err := c.view.WaitFor(ctx, func(v *manifest.View) bool { return visible(v, f) }); err != nil {
		return fmt.Errorf("ingest: waiting for the view to show flush through %s: %w", f.Through, err)
	}
	rev := c.view.SSTablesRevision()
	for {
		old := c.mark.Load()
		if old >= rev || c.mark.CompareAndSwap(old, rev) {
			return nil
		}
	}
}

// CommitMark implements CommitMarker: the sstables revision a View must
// reach to show every flush committed so far.
func (c *ViewCommitter) CommitMark() uint64 { return c.mark.Load() }

// visible reports whether v lists every SSTable of f whose table the schema
// still holds (a dropped table's SSTables are not committed).
func visible(v *manifest.View, f Flush) bool {
	s := v.Schema()
	for _, t := range f.Tables {
		tables := s.TablesByShortID(uint32(t.Table))
		if len(tables) == 0 {
			continue
		}
		// Live, or already garbage: a compaction may merge the SSTable
		// away between two looks of a waiting WaitFor, and it then never
		// shows as live again.
		listed := slices.ContainsFunc(tables, func(tbl *manifest.Table) bool {
			return slices.ContainsFunc(v.SSTablesInRange(tbl.ID, t.Range), func(s manifest.SSTable) bool { return s.Key == t.Key }) ||
				slices.ContainsFunc(v.GarbageInRange(tbl.ID, t.Range), func(g manifest.Garbage) bool { return g.Key == t.Key })
		})
		if !listed {
			return false
		}
	}
	return true
}

// ViewReader is the TableReader of a node whose flushes are committed
// through a ViewCommitter over the same View: the node's conditional writes
// read the SSTables the View lists, through kept readers, without a round
// trip to NATS. The View is complete for them because the node drops a
// flushed memtable only once the View shows the flush.
type ViewReader struct {
	view    *manifest.View
	readers *tablestore.ReaderCache
}

var _ TableReader = (*ViewReader)(nil)

// NewViewReader returns a ViewReader over view that opens SSTables
// through readers.
func NewViewReader(view *manifest.View, readers *tablestore.ReaderCache) *ViewReader {
	return &ViewReader{view: view, readers: readers}
}

// NewIter implements TableReader.
func (r *ViewReader) NewIter(ctx context.Context, table storage.TableID, lower, upper []byte) (kv.Iterator, error) {
	tbl, err := tableOf(r.view.Schema(), table)
	if err != nil || tbl == nil {
		return kv.Merging(model.Merge), err
	}
	first, last := int64(-1<<63), int64(1<<63-1)
	if t, err := keys.Token(lower); err == nil {
		first = t
	}
	if t, err := keys.Token(upper); err == nil {
		last = t
	}
	var ssts []manifest.SSTable
	n := max(r.view.RangeCount(), 1)
	for rg := manifest.RangeOf(first, n); rg <= manifest.RangeOf(last, n); rg++ {
		ssts = append(ssts, r.view.SSTablesInRange(tbl.ID, rg)...)
	}
	return mergeSSTables(ctx, ssts, lower, upper, r.readers.Open)
}
