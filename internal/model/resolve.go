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
