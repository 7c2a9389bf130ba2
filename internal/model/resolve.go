package model

import (
	"bytes"
	"sort"
)

// DeletionAt returns the deletion that h applies to the row with clustering
// c: the partition deletion or the range tombstone covering c, whichever
// supersedes. h must be in normal form; a nil h deletes nothing.
func (h *Header) DeletionAt(c []byte) Deletion {
	if h == nil {
		return Live
	}
	ts := h.RangeTombstones
	// The last tombstone starting at or before c is the only one that can
	// cover it: the list is sorted and disjoint.
	i := sort.Search(len(ts), func(i int) bool { return bytes.Compare(ts[i].Start, c) > 0 }) - 1
	if i >= 0 && ts[i].Contains(c) {
		return maxDeletion(h.Deletion, ts[i].Deletion)
	}
	return h.Deletion
}

// Resolve turns r, the stored row with clustering c in h's partition, into
// its live view at now (seconds), in place, and reports whether the row
// exists. See (*Row).Resolve. r must be in normal form (decoded rows are); a
// nil h deletes nothing.
func (h *Header) Resolve(c []byte, r *Row, now int64) (live bool) {
	return r.Resolve(h.DeletionAt(c), now)
}

// ResolveStatic turns h's static row into its live view at now, in place,
// and reports whether it has live cells. Only the partition deletion covers
// the static row.
func (h *Header) ResolveStatic(now int64) (live bool) {
	return h.Static.Resolve(h.Deletion, now)
}

// Resolve turns the normal row r into its live view at now (seconds), in
// place, given outer, the partition or range deletion covering it: it
// removes everything outer and r's own deletions shadow, then every
// tombstone and expired cell, and clears the deletions. A live view holds
// only live cells and at most a live liveness. The row exists, and Resolve
// returns true, iff its liveness is live or it keeps a live cell.
func (r *Row) Resolve(outer Deletion, now int64) (live bool) {
	shadowRow(r, outer)
	r.Deletion = Live
	r.ColumnDeletions = r.ColumnDeletions[:0]
	if !r.Liveness.IsLive(now) {
		r.Liveness = Liveness{}
	}
	cells := r.Cells[:0]
	for _, c := range r.Cells {
		if c.IsLive(now) {
			cells = append(cells, c)
		}
	}
	clear(r.Cells[len(cells):])
	r.Cells = cells
	return r.Liveness.Present || len(r.Cells) > 0
}

// Shadow removes from the normal row r what outer, the partition or range
// deletion covering it, shadows, keeping r's own deletions only where they
// supersede outer. Compaction calls it with (*Header).DeletionAt, so that
// dead data does not outlive the merge that meets its deletion. It reports
// whether r became empty.
func (r *Row) Shadow(outer Deletion) (empty bool) {
	shadowRow(r, outer)
	return r.IsEmpty()
}

// Purge readies the normal row r for compaction output at now (seconds):
// expired cells become tombstones with the same timestamp and their expiry
// as local deletion time, and tombstones, deletions and expired liveness
// whose local deletion time is before gcBefore are dropped. Whether dropping
// them is safe (gc_grace_seconds passed, no older data for the row outside
// the compaction) is the caller's decision. Purge reports whether r became
// empty, in which case the compaction can drop it.
//
// Cassandra gives such a tombstone the write time (expiry - TTL) as local
// deletion time, which lets compaction drop it sooner; keeping the expiry
// holds it for a full gc_grace_seconds after the data died, which is never
// less safe. Unlike merging, purging depends on the clock, so it runs only
// where data is rewritten, never on a read.
func (r *Row) Purge(now, gcBefore int64) (empty bool) {
	if l := r.Liveness; l.expiring() && now >= l.Expires && l.Expires < gcBefore {
		r.Liveness = Liveness{}
	}
	if !r.Deletion.IsLive() && r.Deletion.LocalDeletionTime < gcBefore {
		r.Deletion = Live
	}
	cds := r.ColumnDeletions[:0]
	for _, cd := range r.ColumnDeletions {
		if cd.Deletion.LocalDeletionTime >= gcBefore {
			cds = append(cds, cd)
		}
	}
	r.ColumnDeletions = cds
	cells := r.Cells[:0]
	for _, c := range r.Cells {
		if c.kind() == kindExpiring && now >= c.LocalDeletionTime {
			// An expired cell is a tombstone already; the value is dead
			// weight.
			c = Cell{Column: c.Column, Path: c.Path, Timestamp: c.Timestamp, LocalDeletionTime: c.LocalDeletionTime, Tombstone: true}
		}
		if c.Tombstone && c.LocalDeletionTime < gcBefore {
			continue
		}
		cells = append(cells, c)
	}
	clear(r.Cells[len(cells):])
	r.Cells = cells
	return r.IsEmpty()
}

// Purge drops the partition deletion and range tombstones whose local
// deletion time is before gcBefore and purges the static row, as
// (*Row).Purge does. It reports whether h became empty.
func (h *Header) Purge(now, gcBefore int64) (empty bool) {
	if !h.Deletion.IsLive() && h.Deletion.LocalDeletionTime < gcBefore {
		h.Deletion = Live
	}
	ts := h.RangeTombstones[:0]
	for _, t := range h.RangeTombstones {
		if t.Deletion.LocalDeletionTime >= gcBefore {
			ts = append(ts, t)
		}
	}
	clear(h.RangeTombstones[len(ts):])
	h.RangeTombstones = ts
	h.Static.Purge(now, gcBefore)
	return h.IsEmpty()
}
