package model

import (
	"bytes"
	"cmp"
)

// Deletion is a tombstone's time: everything written at or before
// MarkedForDeleteAt is deleted. LocalDeletionTime is the server clock when
// the deletion was written; compaction may drop the tombstone once it is
// older than gc_grace_seconds.
//
// The zero value is Live, no deletion. Cassandra marks "live" with a
// sentinel local deletion time (Integer.MAX_VALUE); we use the zero value
// instead so that a Row or Header built without a deletion means none. A
// real deletion always carries the server clock in LocalDeletionTime, which
// is never 0, so no real deletion is mistaken for Live.
type Deletion struct {
	MarkedForDeleteAt int64 // write timestamp, µs
	LocalDeletionTime int64 // server clock, seconds
}

// Live is the absence of a deletion.
var Live = Deletion{}

// IsLive reports whether d deletes nothing.
func (d Deletion) IsLive() bool { return d == Live }

// Deletes reports whether d shadows data written at timestamp ts.
func (d Deletion) Deletes(ts int64) bool {
	return !d.IsLive() && ts <= d.MarkedForDeleteAt
}

// Supersedes reports whether d wins over o: Live loses to every deletion,
// then the greater MarkedForDeleteAt wins, then the greater
// LocalDeletionTime (Cassandra's DeletionTime.supersedes).
func (d Deletion) Supersedes(o Deletion) bool { return compareDeletions(d, o) > 0 }

func compareDeletions(a, b Deletion) int {
	if al, bl := a.IsLive(), b.IsLive(); al || bl {
		switch {
		case al && bl:
			return 0
		case al:
			return -1
		default:
			return 1
		}
	}
	if c := cmp.Compare(a.MarkedForDeleteAt, b.MarkedForDeleteAt); c != 0 {
		return c
	}
	return cmp.Compare(a.LocalDeletionTime, b.LocalDeletionTime)
}

func maxDeletion(a, b Deletion) Deletion {
	if compareDeletions(a, b) >= 0 {
		return a
	}
	return b
}

// Liveness is a row's primary key liveness: an INSERT makes the row exist
// from Timestamp on, even when all of its regular columns are null. With a
// TTL the row marker expires at Expires. UPDATE writes cells only, so an
// updated row lives only while it has live cells.
type Liveness struct {
	// Present is false for a row that was never INSERTed; the other fields
	// are then ignored. (Any timestamp, even 0, is a valid CQL write time,
	// so none can serve as the "no liveness" marker.)
	Present   bool
	Timestamp int64 // write timestamp, µs
	TTL       int32 // seconds; > 0 makes the marker expire
	Expires   int64 // local expiry time, seconds; only with TTL > 0
}

func (l Liveness) expiring() bool { return l.Present && l.TTL > 0 }

// IsLive reports whether l makes its row exist at now (seconds).
func (l Liveness) IsLive(now int64) bool {
	return l.Present && (l.TTL <= 0 || now < l.Expires)
}

// compareLiveness orders liveness infos by Cassandra's
// LivenessInfo.supersedes: absent first, then the greater timestamp, then an
// expiring one over a non-expiring one, then the later expiry. The greater
// TTL breaks the last tie so the order is total.
func compareLiveness(a, b Liveness) int {
	if c := cmp.Compare(b2i(a.Present), b2i(b.Present)); c != 0 || !a.Present {
		return c
	}
	if c := cmp.Compare(a.Timestamp, b.Timestamp); c != 0 {
		return c
	}
	ae, be := a.expiring(), b.expiring()
	if c := cmp.Compare(b2i(ae), b2i(be)); c != 0 || !ae {
		return c
	}
	if c := cmp.Compare(a.Expires, b.Expires); c != 0 {
		return c
	}
	return cmp.Compare(a.TTL, b.TTL)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Cell is one column value of a row, or one element of a non-frozen
// collection column.
//
// A cell is one of three kinds: a tombstone (Tombstone set; TTL and Value are
// ignored), an expiring cell (TTL > 0; LocalDeletionTime is when it expires),
// or a regular cell (LocalDeletionTime is ignored).
type Cell struct {
	// Column is the schema's ID of the column: IDs survive renames, and a
	// dropped then re-added column gets a new one.
	Column uint32
	// Path addresses an element of a non-frozen collection: the list
	// element's timeuuid, the set element or the map key, encoded so that
	// bytes.Compare orders elements as CQL does. Empty for other columns.
	Path []byte
	// Timestamp is the write time in µs.
	Timestamp int64
	// TTL in seconds; > 0 makes the cell expire.
	TTL int32
	// LocalDeletionTime is, in seconds of server clock, when the tombstone
	// was written or when the expiring cell expires.
	LocalDeletionTime int64
	Value             []byte
	Tombstone         bool
}

type cellKind uint8

// Kinds in reconciliation order: on equal timestamps a tombstone beats an
// expiring cell, which beats a regular cell.
const (
	kindRegular cellKind = iota
	kindExpiring
	kindTombstone
)

func (c *Cell) kind() cellKind {
	switch {
	case c.Tombstone:
		return kindTombstone
	case c.TTL > 0:
		return kindExpiring
	default:
		return kindRegular
	}
}

// IsLive reports whether c holds a value at now (seconds).
func (c *Cell) IsLive(now int64) bool {
	switch c.kind() {
	case kindTombstone:
		return false
	case kindExpiring:
		return now < c.LocalDeletionTime
	default:
		return true
	}
}

// compareCellKeys orders cells within a row: by column, then path.
func compareCellKeys(a, b *Cell) int {
	if c := cmp.Compare(a.Column, b.Column); c != 0 {
		return c
	}
	return bytes.Compare(a.Path, b.Path)
}

// compareCells orders two versions of one cell by Cassandra's
// Cells.resolveRegular: the greater timestamp; then the kind (tombstone over
// expiring over regular: CASSANDRA-14592 makes an expiring cell win over a
// regular one whatever the clock says, so reconciliation never depends on
// when it runs); then, for two tombstones or two expiring cells, the greater
// local deletion time; then the greater value in unsigned byte order. Our
// addition: the greater TTL breaks the last tie, so that the order is total
// and merging commutes byte for byte.
func compareCells(a, b *Cell) int {
	if c := cmp.Compare(a.Timestamp, b.Timestamp); c != 0 {
		return c
	}
	ka, kb := a.kind(), b.kind()
	if c := cmp.Compare(ka, kb); c != 0 {
		return c
	}
	if ka != kindRegular {
		if c := cmp.Compare(a.LocalDeletionTime, b.LocalDeletionTime); c != 0 {
			return c
		}
	}
	if ka == kindTombstone {
		return 0
	}
	if c := bytes.Compare(a.Value, b.Value); c != 0 {
		return c
	}
	if ka == kindExpiring {
		return cmp.Compare(a.TTL, b.TTL)
	}
	return 0
}

// Reconcile returns the version of a cell that wins, a or b. Both must be
// versions of the same cell (column and path).
func Reconcile(a, b *Cell) *Cell {
	if compareCells(a, b) >= 0 {
		return a
	}
	return b
}

// ColumnDeletion deletes a whole non-frozen collection column of a row: the
// cells of Column written at or before the deletion (Cassandra's complex
// deletion, written when a collection is overwritten or deleted).
type ColumnDeletion struct {
	Column   uint32
	Deletion Deletion
}

// Row is the value stored under a row's key: its liveness, its deletion, the
// deletions of its collection columns and its cells.
//
// A Row in normal form (every decoded row, every merge result; Normalize
// makes one) has Cells sorted by column then path without duplicates,
// ColumnDeletions sorted by column without duplicates, and nothing shadowed
// by its own deletions: no cell, liveness or column deletion that the row
// deletion covers, and no cell that its column's deletion covers.
type Row struct {
	Liveness        Liveness
	Deletion        Deletion
	ColumnDeletions []ColumnDeletion
	Cells           []Cell
}

// Reset empties r, keeping the capacity of its slices.
func (r *Row) Reset() {
	*r = Row{ColumnDeletions: r.ColumnDeletions[:0], Cells: r.Cells[:0]}
}

// IsEmpty reports whether r holds nothing at all, not even a tombstone.
func (r *Row) IsEmpty() bool {
	return !r.Liveness.Present && r.Deletion.IsLive() &&
		len(r.ColumnDeletions) == 0 && len(r.Cells) == 0
}

// RangeTombstone deletes the rows of a partition whose clustering lies in
// [Start, End) in bytes.Compare order, with an empty End meaning no upper
// bound. Start and End are clustering bounds as package keys encodes them:
// keys maps CQL's inclusive and exclusive bounds on clustering prefixes to
// this half-open byte interval, so that a row's clustering part c is deleted
// iff Start <= c && (len(End) == 0 || c < End).
type RangeTombstone struct {
	Start    []byte
	End      []byte
	Deletion Deletion
}

// Contains reports whether the row with clustering c lies in t's range.
func (t *RangeTombstone) Contains(c []byte) bool {
	return bytes.Compare(t.Start, c) <= 0 && (len(t.End) == 0 || bytes.Compare(c, t.End) < 0)
}

// Header is the value stored under a partition's header key, which sorts
// before the partition's rows: the partition deletion, the static row and
// the range tombstones.
//
// A Header in normal form (every decoded header, every merge result) has its
// range tombstones sorted, non-overlapping and coalesced: each has Start <
// End, each ends at or before the next starts, two that touch have different
// deletions, and only the last may be unbounded. Every range tombstone
// supersedes the partition deletion, and the static row is a normal Row with
// nothing the partition deletion shadows. A normal form is unique, so equal
// headers encode to equal bytes.
type Header struct {
	Deletion        Deletion
	Static          Row
	RangeTombstones []RangeTombstone
}

// Reset empties h, keeping the capacity of its slices.
func (h *Header) Reset() {
	h.Static.Reset()
	*h = Header{Static: h.Static, RangeTombstones: h.RangeTombstones[:0]}
}

// IsEmpty reports whether h holds nothing.
func (h *Header) IsEmpty() bool {
	return h.Deletion.IsLive() && h.Static.IsEmpty() && len(h.RangeTombstones) == 0
}
