package engine

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/manifest"
)

// Truncation has two steps, in this order: the memtables of every ingest
// node drop the table's entries (ingest.Node.Truncate, durable and
// honoured by replay; once it returns no flush commits the table's older
// entries), and then the manifest drops the table's SSTables, putting
// their objects on the garbage list (manifest.DropSSTables). The other
// order would let a flush commit old entries after the drop. Both steps
// are idempotent, so a failed Truncate may be retried.

// Truncate implements Engine. Like every Local operation, it relies on its
// node being the only one that takes the cluster's writes.
func (l *Local) Truncate(ctx context.Context, table uuid.UUID) error {
	if table == uuid.Nil {
		return fmt.Errorf("%w: truncate of the nil table", ErrInvalidQuery)
	}
	if err := l.node.Truncate(ctx, storage.TableIDOf(table)); err != nil {
		return fmt.Errorf("engine: truncate %s: %w", table, err)
	}
	return dropSSTables(ctx, l.rp.view, table)
}

// Truncate implements Engine: every node that owns a token range truncates
// its memtables over RPC, all at once; a node that cannot be reached fails
// the call before any SSTable is dropped. The owners are those the View
// shows: a node that took a range after the View last looked is missed,
// so writes it acknowledged in that window may survive.
func (r *Remote) Truncate(ctx context.Context, table uuid.UUID) error {
	if table == uuid.Nil {
		return fmt.Errorf("%w: truncate of the nil table", ErrInvalidQuery)
	}
	id := storage.TableIDOf(table)
	if err := r.eachNode(ctx, func(c *rpc.Client) error { return c.Truncate(ctx, id) }); err != nil {
		return fmt.Errorf("engine: truncate %s: %w", table, err)
	}
	return dropSSTables(ctx, r.view, table)
}

// dropSSTables drops table's SSTables from the manifest, then waits until
// view lists none of them, nor any it listed before: reads through view
// after that miss them.
func dropSSTables(ctx context.Context, view *manifest.View, table uuid.UUID) error {
	gone := map[string]bool{}
	for _, s := range view.SSTables(table) {
		gone[s.Key] = true
	}
	dropped, err := view.Manifest().DropSSTables(ctx, table)
	if err != nil {
		return fmt.Errorf("engine: truncate %s: %w", table, err)
	}
	for _, s := range dropped {
		gone[s.Key] = true
	}
	err = view.WaitFor(ctx, func(v *manifest.View) bool {
		for _, s := range v.SSTables(table) {
			if gone[s.Key] {
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("engine: truncate %s: waiting for the view to drop its sstables: %w", table, err)
	}
	return nil
}
