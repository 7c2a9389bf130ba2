package engine

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/manifest"
)

// ViewCommitter is the FlushCommitter a node serving Local's reads must
// flush through: its Commit returns only once view shows the committed
// SSTables. A shard drops a memtable from its read set after the commit
// returns, so no read can miss a write between the memtable and a View that
// has not caught up with the manifest yet.
type ViewCommitter struct {
	ingest.FlushCommitter
	view *manifest.View
}

var _ ingest.FlushCommitter = (*ViewCommitter)(nil)

// NewViewCommitter wraps c, the committer that records flushes in the
// manifest that view watches.
func NewViewCommitter(c ingest.FlushCommitter, view *manifest.View) *ViewCommitter {
	return &ViewCommitter{FlushCommitter: c, view: view}
}

// Commit implements ingest.FlushCommitter.
func (c *ViewCommitter) Commit(ctx context.Context, f ingest.Flush) error {
	if err := c.FlushCommitter.Commit(ctx, f); err != nil {
		return err
	}
	if err := c.view.WaitFor(ctx, func(v *manifest.View) bool { return visible(v, f) }); err != nil {
		return fmt.Errorf("engine: waiting for the view to show flush through %s: %w", f.Through, err)
	}
	return nil
}

// visible reports whether v lists every SSTable of f whose table the schema
// still holds (a dropped table's SSTables are not committed).
func visible(v *manifest.View, f ingest.Flush) bool {
	ids := map[ingest.TableID]uuid.UUID{}
	for _, ks := range v.Schema().Keyspaces {
		for _, t := range ks.Tables {
			ids[ingest.TableIDOf(t.ID)] = t.ID
		}
	}
	for _, t := range f.Tables {
		id, ok := ids[t.Table]
		if !ok {
			continue
		}
		found := false
		for _, s := range v.SSTablesInRange(id, t.Range) {
			if s.Key == t.Key {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
