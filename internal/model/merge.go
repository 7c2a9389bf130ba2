package model

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/sedimentdb/sediment/internal/kv"
)

var _ kv.MergeFunc = Merge

// Merge reconciles two encoded values stored under one key and appends the
// encoded result to dst; it has the signature of kv.MergeFunc. Both values
// must be rows or both headers. dst must not overlap a or b.
//
// Merge is associative and commutative, and merging a value with itself
// returns it unchanged: the result is the normal form of the union of its
// inputs.
func Merge(dst, a, b []byte) ([]byte, error) {
	ka, err := KindOf(a)
	if err != nil {
		return dst, err
	}
	kb, err := KindOf(b)
	if err != nil {
		return dst, err
	}
	if ka != kb {
		return dst, fmt.Errorf("%w: merge of a %s with a %s", ErrCorrupt, ka, kb)
	}
	if ka == KindRow {
		s := rowPool.Get().(*rowScratch)
		defer s.release()
		if err := DecodeRow(a, &s.a); err != nil {
			return dst, err
		}
		if err := DecodeRow(b, &s.b); err != nil {
			return dst, err
		}
		mergeRows(&s.out, &s.a, &s.b)
		return appendRow(dst, &s.out), nil
	}
	s := headerPool.Get().(*headerScratch)
	defer s.release()
	if err := DecodeHeader(a, &s.a); err != nil {
		return dst, err
	}
	if err := DecodeHeader(b, &s.b); err != nil {
		return dst, err
	}
	mergeHeaders(&s.out, &s.a, &s.b)
	return appendHeader(dst, &s.out), nil
}

// rowScratch and headerScratch hold the decoded inputs and the output of
// one Merge; pooling them makes a merge allocation-free once the pool is
// warm.
type (
	rowScratch    struct{ a, b, out Row }
	headerScratch struct{ a, b, out Header }
)

var (
	rowPool    = sync.Pool{New: func() any { return new(rowScratch) }}
	headerPool = sync.Pool{New: func() any { return new(headerScratch) }}
)

// maxPooledItems caps the slices a pooled scratch keeps, so that one huge
// value does not pin its memory in the pool for good.
const maxPooledItems = 1024

func (s *rowScratch) release() {
	releaseRow(&s.a)
	releaseRow(&s.b)
	releaseRow(&s.out)
	rowPool.Put(s)
}

func (s *headerScratch) release() {
	for _, h := range []*Header{&s.a, &s.b, &s.out} {
		releaseRow(&h.Static)
		clear(h.RangeTombstones)
		h.RangeTombstones = h.RangeTombstones[:0]
		if cap(h.RangeTombstones) > maxPooledItems {
			h.RangeTombstones = nil
		}
		h.Deletion = Live
	}
	headerPool.Put(s)
}

// releaseRow drops r's references into merged buffers, so that the pool
// does not pin them. Everything that shrinks a slice clears its tail, so
// only the current elements can hold references.
func releaseRow(r *Row) {
	clear(r.Cells)
	r.Reset()
	if cap(r.Cells) > maxPooledItems || cap(r.ColumnDeletions) > maxPooledItems {
		*r = Row{}
	}
}

// mergeRows sets out to the normal form of the union of the normal rows a
// and b. out's cells alias a's and b's bytes.
func mergeRows(out, a, b *Row) {
	out.Liveness = a.Liveness
	if compareLiveness(b.Liveness, a.Liveness) > 0 {
		out.Liveness = b.Liveness
	}
	out.Deletion = maxDeletion(a.Deletion, b.Deletion)
	out.ColumnDeletions = mergeColumnDeletions(out.ColumnDeletions[:0], a.ColumnDeletions, b.ColumnDeletions)
	out.Cells = mergeCells(out.Cells[:0], a.Cells, b.Cells)
	shadowRow(out, Live)
}

func mergeColumnDeletions(dst, a, b []ColumnDeletion) []ColumnDeletion {
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && a[0].Column < b[0].Column:
			dst, a = append(dst, a[0]), a[1:]
		case len(a) == 0 || b[0].Column < a[0].Column:
			dst, b = append(dst, b[0]), b[1:]
		default:
			d := a[0]
			d.Deletion = maxDeletion(a[0].Deletion, b[0].Deletion)
			dst, a, b = append(dst, d), a[1:], b[1:]
		}
	}
	return dst
}

func mergeCells(dst, a, b []Cell) []Cell {
	for len(a) > 0 || len(b) > 0 {
		c := 0
		switch {
		case len(b) == 0:
			c = -1
		case len(a) == 0:
			c = 1
		default:
			c = compareCellKeys(&a[0], &b[0])
		}
		switch {
		case c < 0:
			dst, a = append(dst, a[0]), a[1:]
		case c > 0:
			dst, b = append(dst, b[0]), b[1:]
		default:
			dst, a, b = append(dst, *Reconcile(&a[0], &b[0])), a[1:], b[1:]
		}
	}
	return dst
}

// shadowRow removes from r, whose cells and column deletions are sorted,
// everything that its own deletions or outer (a partition deletion or range
// tombstone covering the row) shadow. As in Cassandra, the row deletion stays
// only if it supersedes outer, and a column deletion only if it supersedes
// both.
func shadowRow(r *Row, outer Deletion) {
	if !r.Deletion.Supersedes(outer) {
		r.Deletion = Live
	}
	active := maxDeletion(outer, r.Deletion)
	if r.Liveness.Present && active.Deletes(r.Liveness.Timestamp) {
		r.Liveness = Liveness{}
	}
	if active.IsLive() && len(r.ColumnDeletions) == 0 {
		return // nothing can be shadowed
	}
	cds := r.ColumnDeletions[:0]
	for _, cd := range r.ColumnDeletions {
		if cd.Deletion.Supersedes(active) {
			cds = append(cds, cd)
		}
	}
	r.ColumnDeletions = cds
	cells := r.Cells[:0]
	for _, c := range r.Cells {
		for len(cds) > 0 && cds[0].Column < c.Column {
			cds = cds[1:]
		}
		if active.Deletes(c.Timestamp) || len(cds) > 0 && cds[0].Column == c.Column && cds[0].Deletion.Deletes(c.Timestamp) {
			continue
		}
		cells = append(cells, c)
	}
	clear(r.Cells[len(cells):])
	r.Cells = cells
}

// Normalize puts r in normal form in place: it sorts cells and column
// deletions, reconciles duplicates and removes what r's own deletions
// shadow. Rows built by hand need it before Resolve or Shadow;
// AppendRow normalizes a copy by itself.
func (r *Row) Normalize() {
	slices.SortStableFunc(r.Cells, func(a, b Cell) int { return compareCellKeys(&a, &b) })
	r.Cells = dedupe(r.Cells, func(a, b *Cell) bool { return compareCellKeys(a, b) == 0 },
		func(a, b *Cell) { *a = *Reconcile(a, b) })
	slices.SortStableFunc(r.ColumnDeletions, func(a, b ColumnDeletion) int { return cmp.Compare(a.Column, b.Column) })
	r.ColumnDeletions = dedupe(r.ColumnDeletions, func(a, b *ColumnDeletion) bool { return a.Column == b.Column },
		func(a, b *ColumnDeletion) { a.Deletion = maxDeletion(a.Deletion, b.Deletion) })
	if !r.Liveness.Present {
		r.Liveness = Liveness{}
	}
	shadowRow(r, Live)
}

// dedupe folds runs of equal neighbours of the sorted s into their first
// element with fold.
func dedupe[T any](s []T, equal func(a, b *T) bool, fold func(into, from *T)) []T {
	if len(s) < 2 {
		return s
	}
	out := s[:1]
	for i := 1; i < len(s); i++ {
		last := &out[len(out)-1]
		if equal(last, &s[i]) {
			fold(last, &s[i])
			continue
		}
		out = append(out, s[i])
	}
	clear(s[len(out):])
	return out
}

// mergeHeaders sets out to the normal form of the union of the normal
// headers a and b.
func mergeHeaders(out, a, b *Header) {
	out.Deletion = maxDeletion(a.Deletion, b.Deletion)
	mergeRows(&out.Static, &a.Static, &b.Static)
	shadowRow(&out.Static, out.Deletion)
	out.RangeTombstones = mergeRangeTombstones(out.RangeTombstones[:0], a.RangeTombstones, b.RangeTombstones, out.Deletion)
}

// Normalize puts h in normal form in place: range tombstones become the
// sorted, disjoint, coalesced list that deletes exactly what the originals
// delete (where they overlap, the superseding deletion wins), and what the
// partition deletion shadows is removed. AppendHeader normalizes a copy by
// itself.
func (h *Header) Normalize() {
	h.Static.Normalize()
	shadowRow(&h.Static, h.Deletion)
	h.RangeTombstones = normalizeRangeTombstones(h.RangeTombstones, h.Deletion)
}

// normalizeRangeTombstones returns the normal form of any list, by merging
// halves: each merge of two normal lists is linear, so the whole is
// O(n log n).
func normalizeRangeTombstones(ts []RangeTombstone, floor Deletion) []RangeTombstone {
	switch len(ts) {
	case 0:
		return ts
	case 1:
		t := ts[0]
		if (len(t.End) > 0 && bytes.Compare(t.Start, t.End) >= 0) || !t.Deletion.Supersedes(floor) {
			return ts[:0]
		}
		return ts
	}
	mid := len(ts) / 2
	left := normalizeRangeTombstones(slices.Clone(ts[:mid]), floor)
	right := normalizeRangeTombstones(slices.Clone(ts[mid:]), floor)
	return mergeRangeTombstones(ts[:0], left, right, floor)
}

// mergeRangeTombstones appends to dst the normal list that deletes, at each
// clustering, the greater of what the normal lists a and b delete there,
// leaving out whatever does not supersede floor (the partition deletion).
// dst must not share memory with a or b.
func mergeRangeTombstones(dst, a, b []RangeTombstone, floor Deletion) []RangeTombstone {
	// Sweep the boundaries of both lists left to right. pos is where the
	// current elementary segment starts; in each list, the first remaining
	// tombstone either covers pos or starts after it.
	var pos []byte
	if len(a) > 0 && len(b) > 0 {
		pos = a[0].Start
		if bytes.Compare(b[0].Start, pos) < 0 {
			pos = b[0].Start
		}
	} else if len(a) > 0 {
		pos = a[0].Start
	} else if len(b) > 0 {
		pos = b[0].Start
	}
	for len(a) > 0 || len(b) > 0 {
		// The segment ends at the nearest boundary after pos; end == nil
		// means no bound.
		var end []byte
		unbounded := true
		d := floor
		consider := func(ts []RangeTombstone) {
			if len(ts) == 0 {
				return
			}
			t := &ts[0]
			if bytes.Compare(t.Start, pos) > 0 {
				// Not started yet: its start bounds the segment.
				if unbounded || bytes.Compare(t.Start, end) < 0 {
					end, unbounded = t.Start, false
				}
				return
			}
			if t.Deletion.Supersedes(d) {
				d = t.Deletion
			}
			if len(t.End) > 0 && (unbounded || bytes.Compare(t.End, end) < 0) {
				end, unbounded = t.End, false
			}
		}
		consider(a)
		consider(b)
		if d != floor {
			dst = appendRangeTombstone(dst, pos, end, unbounded, d)
		}
		if unbounded {
			break
		}
		pos = end
		// Drop the tombstones that end at the new position.
		if len(a) > 0 && bytes.Equal(a[0].End, pos) {
			a = a[1:]
		}
		if len(b) > 0 && bytes.Equal(b[0].End, pos) {
			b = b[1:]
		}
		// If both lists have a gap at pos, jump to the next start.
		if len(a) > 0 && len(b) > 0 {
			if next := minBytes(a[0].Start, b[0].Start); bytes.Compare(next, pos) > 0 {
				pos = next
			}
		} else if len(a) > 0 && bytes.Compare(a[0].Start, pos) > 0 {
			pos = a[0].Start
		} else if len(b) > 0 && bytes.Compare(b[0].Start, pos) > 0 {
			pos = b[0].Start
		}
	}
	return dst
}

func minBytes(a, b []byte) []byte {
	if bytes.Compare(a, b) <= 0 {
		return a
	}
	return b
}

// appendRangeTombstone appends [start, end) with d, extending the last
// tombstone instead when it ends at start with the same deletion.
func appendRangeTombstone(dst []RangeTombstone, start, end []byte, unbounded bool, d Deletion) []RangeTombstone {
	if unbounded {
		end = nil
	}
	if n := len(dst); n > 0 && dst[n-1].Deletion == d && len(dst[n-1].End) > 0 && bytes.Equal(dst[n-1].End, start) {
		dst[n-1].End = end
		return dst
	}
	return append(dst, RangeTombstone{Start: start, End: end, Deletion: d})
}
