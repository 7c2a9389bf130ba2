package compactor

import "github.com/sedimentdb/sediment/internal/model"

// purger readies merged values for a job's output: expired cells become
// tombstones, and tombstones the purge rule allows are dropped (see the
// package comment).
type purger struct {
	now           int64 // seconds
	gcBefore      int64 // seconds
	oldestOutside int64 // µs
	stats         *Stats
}

// drops reports whether a tombstone with deletion d may be dropped: it is
// older than gcBefore, and it deletes nothing outside the job (everything
// there was written at oldestOutside or later, after d).
func (p *purger) drops(d model.Deletion) bool {
	return d.LocalDeletionTime < p.gcBefore && d.MarkedForDeleteAt < p.oldestOutside
}

// row purges the normal row r in place and reports whether it changed.
// r stays in normal form: purging only removes parts or turns cells into
// tombstones of the same timestamp, which no deletion of r shadows.
func (p *purger) row(r *model.Row) (changed bool) {
	if l := r.Liveness; l.Present && l.TTL > 0 && p.now >= l.Expires &&
		p.drops(model.Deletion{MarkedForDeleteAt: l.Timestamp, LocalDeletionTime: l.Expires}) {
		// Expired liveness acts as a tombstone of the row marker.
		r.Liveness = model.Liveness{}
		p.stats.TombstonesPurged++
		changed = true
	}
	if !r.Deletion.IsLive() && p.drops(r.Deletion) {
		r.Deletion = model.Live
		p.stats.TombstonesPurged++
		changed = true
	}
	var dropped bool
	r.ColumnDeletions, dropped = dropPurgeable(p, r.ColumnDeletions, func(cd model.ColumnDeletion) model.Deletion { return cd.Deletion })
	changed = changed || dropped
	cells := r.Cells[:0]
	for _, c := range r.Cells {
		if !c.Tombstone && c.TTL > 0 && p.now >= c.LocalDeletionTime {
			// Expired: the value is dead weight. The expiry stays the local
			// deletion time, so the tombstone lives gc_grace after it.
			c = model.Cell{Column: c.Column, Path: c.Path, Timestamp: c.Timestamp, LocalDeletionTime: c.LocalDeletionTime, Tombstone: true}
			p.stats.Expired++
			changed = true
		}
		if c.Tombstone && p.drops(model.Deletion{MarkedForDeleteAt: c.Timestamp, LocalDeletionTime: c.LocalDeletionTime}) {
			p.stats.TombstonesPurged++
			changed = true
			continue
		}
		cells = append(cells, c)
	}
	clear(r.Cells[len(cells):])
	r.Cells = cells
	return changed
}

// dropPurgeable removes in place the items of list whose deletion (as
// deletion gives it) p drops, counting them as purged tombstones; it
// reports whether it removed any.
func dropPurgeable[T any](p *purger, list []T, deletion func(T) model.Deletion) ([]T, bool) {
	kept := list[:0]
	for _, x := range list {
		if p.drops(deletion(x)) {
			p.stats.TombstonesPurged++
			continue
		}
		kept = append(kept, x)
	}
	clear(list[len(kept):])
	return kept, len(kept) < len(list)
}

// header purges the normal header h in place and reports whether it
// changed. Dropping the partition deletion or a range tombstone keeps h
// normal: the range tombstones left still supersede what is left of the
// partition deletion, and stay sorted and disjoint.
func (p *purger) header(h *model.Header) (changed bool) {
	if !h.Deletion.IsLive() && p.drops(h.Deletion) {
		h.Deletion = model.Live
		p.stats.TombstonesPurged++
		changed = true
	}
	var dropped bool
	h.RangeTombstones, dropped = dropPurgeable(p, h.RangeTombstones, func(t model.RangeTombstone) model.Deletion { return t.Deletion })
	changed = changed || dropped
	if p.row(&h.Static) {
		changed = true
	}
	return changed
}
