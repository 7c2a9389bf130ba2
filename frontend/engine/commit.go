package engine

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/manifest"
)

// ViewCommitter is the FlushCommitter a node serving Local's reads must
// flush through: its Commit returns only once view shows the committed
// SSTables. A shard drops a memtable from its read set after the commit
// returns, so no read can miss a write between the memtable and a View that
// has not caught up with the manifest yet.
//
// Its mark is the view's SSTablesRevision once a commit shows (at first,
// when the committer is made): a node hands it out with every memtable page,
// and a Remote reader waits for its own View to reach it before choosing
// SSTables, so that a frontend's View that trails the node's cannot miss
// what the node's memtables dropped.
type ViewCommitter struct {
	ingest.FlushCommitter
	view *manifest.View
	mark atomic.Uint64
}

var _ ingest.CommitMarker = (*ViewCommitter)(nil)

// NewViewCommitter wraps c, the committer that records flushes in the
// manifest that view watches.
func NewViewCommitter(c ingest.FlushCommitter, view *manifest.View) *ViewCommitter {
	vc := &ViewCommitter{FlushCommitter: c, view: view}
	// The mark starts where view is: a node restarted after a crash replays
	// only what its previous process had not committed, so a reader must
	// see those commits too, and view, started after them, shows them.
	vc.mark.Store(view.SSTablesRevision())
	return vc
}

// Commit implements ingest.FlushCommitter.
func (c *ViewCommitter) Commit(ctx context.Context, f ingest.Flush) error {
	if err := c.FlushCommitter.Commit(ctx, f); err != nil {
		return err
	}
	if err := c.view.WaitFor(ctx, func(v *manifest.View) bool { return visible(v, f) }); err != nil {
		return fmt.Errorf("engine: waiting for the view to show flush through %s: %w", f.Through, err)
	}
	rev := c.view.SSTablesRevision()
	for {
		old := c.mark.Load()
		if old >= rev || c.mark.CompareAndSwap(old, rev) {
			return nil
		}
	}
}

// CommitMark implements ingest.CommitMarker: the sstables revision a View
// must reach to show every flush committed so far.
func (c *ViewCommitter) CommitMark() uint64 { return c.mark.Load() }

// visible reports whether v lists every SSTable of f whose table the schema
// still holds (a dropped table's SSTables are not committed).
func visible(v *manifest.View, f ingest.Flush) bool {
	s := v.Schema()
	for _, t := range f.Tables {
		tables := s.TablesByShortID(uint32(t.Table))
		if len(tables) == 0 {
			continue
		}
		listed := slices.ContainsFunc(tables, func(tbl *manifest.Table) bool {
			return slices.ContainsFunc(v.SSTablesInRange(tbl.ID, t.Range), func(s manifest.SSTable) bool { return s.Key == t.Key })
		})
		if !listed {
			return false
		}
	}
	return true
}
