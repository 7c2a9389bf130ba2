package model

import "math"

// Stats summarizes values for SSTable properties: the timestamp range
// decides which tables a read or a tombstone purge must consult, and the
// local deletion times tell when a table holds nothing but purgeable data.
//
// The zero Stats describes no values; Add aggregates.
type Stats struct {
	// Values is the number of values summarized.
	Values int
	// MinTimestamp and MaxTimestamp bound every write timestamp, deletion
	// timestamps included. With no timestamps they are MaxInt64 and MinInt64.
	MinTimestamp, MaxTimestamp int64
	// MinLocalDeletionTime and MaxLocalDeletionTime bound the local
	// deletion times of tombstones and deletions and the expiry of
	// expiring cells and liveness. MaxLocalDeletionTime is MaxInt64 if
	// anything never expires (a regular cell or non-expiring liveness), as
	// in Cassandra: a table is fully expired only when it is below gcBefore.
	// With no local times, Min is MaxInt64 and Max MinInt64.
	MinLocalDeletionTime, MaxLocalDeletionTime int64
	// Rows counts row values and headers with a static row.
	Rows int
	// Cells counts cells, tombstone cells included.
	Cells int
	// Tombstones counts deletion markers: tombstone cells, row, column,
	// partition deletions and range tombstones.
	Tombstones int
	// Expiring counts expiring cells and expiring liveness.
	Expiring int
}

// Add folds o into s.
func (s *Stats) Add(o Stats) {
	if o.Values == 0 {
		return
	}
	if s.Values == 0 {
		*s = o
		return
	}
	s.Values += o.Values
	s.MinTimestamp = min(s.MinTimestamp, o.MinTimestamp)
	s.MaxTimestamp = max(s.MaxTimestamp, o.MaxTimestamp)
	s.MinLocalDeletionTime = min(s.MinLocalDeletionTime, o.MinLocalDeletionTime)
	s.MaxLocalDeletionTime = max(s.MaxLocalDeletionTime, o.MaxLocalDeletionTime)
	s.Rows += o.Rows
	s.Cells += o.Cells
	s.Tombstones += o.Tombstones
	s.Expiring += o.Expiring
}

// ValueStats summarizes one encoded value, row or header.
func ValueStats(value []byte) (Stats, error) {
	k, err := KindOf(value)
	if err != nil {
		return Stats{}, err
	}
	s := Stats{
		Values:               1,
		MinTimestamp:         math.MaxInt64,
		MaxTimestamp:         math.MinInt64,
		MinLocalDeletionTime: math.MaxInt64,
		MaxLocalDeletionTime: math.MinInt64,
	}
	if k == KindRow {
		sc := rowPool.Get().(*rowScratch)
		defer sc.release()
		if err := DecodeRow(value, &sc.a); err != nil {
			return Stats{}, err
		}
		s.Rows++
		s.addRow(&sc.a)
		return s, nil
	}
	sc := headerPool.Get().(*headerScratch)
	defer sc.release()
	h := &sc.a
	if err := DecodeHeader(value, h); err != nil {
		return Stats{}, err
	}
	s.addDeletion(h.Deletion)
	for _, t := range h.RangeTombstones {
		s.addDeletion(t.Deletion)
	}
	if !h.Static.IsEmpty() {
		s.Rows++
		s.addRow(&h.Static)
	}
	return s, nil
}

func (s *Stats) addRow(r *Row) {
	if l := r.Liveness; l.Present {
		s.timestamp(l.Timestamp)
		if l.expiring() {
			s.Expiring++
			s.localTime(l.Expires)
		} else {
			s.MaxLocalDeletionTime = math.MaxInt64
		}
	}
	s.addDeletion(r.Deletion)
	for _, cd := range r.ColumnDeletions {
		s.addDeletion(cd.Deletion)
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		s.Cells++
		s.timestamp(c.Timestamp)
		switch c.kind() {
		case kindTombstone:
			s.Tombstones++
			s.localTime(c.LocalDeletionTime)
		case kindExpiring:
			s.Expiring++
			s.localTime(c.LocalDeletionTime)
		default:
			s.MaxLocalDeletionTime = math.MaxInt64
		}
	}
}

func (s *Stats) addDeletion(d Deletion) {
	if d.IsLive() {
		return
	}
	s.Tombstones++
	s.timestamp(d.MarkedForDeleteAt)
	s.localTime(d.LocalDeletionTime)
}

func (s *Stats) timestamp(t int64) {
	s.MinTimestamp = min(s.MinTimestamp, t)
	s.MaxTimestamp = max(s.MaxTimestamp, t)
}

func (s *Stats) localTime(t int64) {
	s.MinLocalDeletionTime = min(s.MinLocalDeletionTime, t)
	s.MaxLocalDeletionTime = max(s.MaxLocalDeletionTime, t)
}
