package manifest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/google/uuid"
)

// SSTable describes one live SSTable object.
type SSTable struct {
	// Key is the object key in the bucket.
	Key   string `json:"key"`
	Size  int64  `json:"size"`
	Level int    `json:"level"`
	// MinToken and MaxToken bound the tokens of its partitions; FirstKey and
	// LastKey are its first and last storage keys.
	MinToken int64  `json:"min_token"`
	MaxToken int64  `json:"max_token"`
	FirstKey []byte `json:"first_key"`
	LastKey  []byte `json:"last_key"`
	// MinTimestamp and MaxTimestamp bound its write timestamps (µs).
	MinTimestamp int64 `json:"min_timestamp"`
	MaxTimestamp int64 `json:"max_timestamp"`
	// Covers lists, per commitlog shard, the position up to which the
	// shard's records are in this SSTable (for a flush: the records of
	// its memtable, which ends there).
	Covers  []LogPosition `json:"covers,omitempty"`
	Created time.Time     `json:"created"`
	// Load, if set, names the bulk load that added the SSTable: it is
	// hidden until the load commits (see Load).
	Load uuid.UUID `json:"load,omitzero"`
}

// LogPosition is a position in one shard's commitlog.
type LogPosition struct {
	// Node names the ingest node whose shard wrote the log: shard numbers
	// repeat across nodes.
	Node    string `json:"node,omitempty"`
	Shard   int    `json:"shard"`
	Segment uint64 `json:"segment"`
	Offset  int64  `json:"offset"`
	// Parts is the number of SSTables, one per table and range, that the
	// flush ending at this position committed: the flush is complete,
	// and the log through the position covered, once that many live
	// SSTables carry the position. A compaction output carries its
	// inputs' positions.
	Parts int `json:"parts,omitempty"`
}

// TableSSTables is the set of live SSTables of one table in one token
// range, stored under "t.<table ID>.<%05d range>" in the sstables bucket,
// and the objects that left them and await deletion. Splitting a table by
// range keeps each document small and lets flushes of different ranges
// commit without contending.
type TableSSTables struct {
	Table    uuid.UUID `json:"table"`
	Range    int       `json:"range"`
	SSTables []SSTable `json:"sstables"`
	Garbage  []Garbage `json:"garbage,omitempty"`
	// Flushed holds, per ingest node and commitlog shard, the newest
	// position through which the shard's flushes are known complete and
	// whose part in this range left the live set with nothing to carry
	// it on (a compaction whose data was all dead): a watermark that
	// counts as complete every flush of the shard at or before it (see
	// FlushState).
	Flushed []LogPosition `json:"flushed,omitempty"`
}

// Commit is one atomic change of the SSTables of a table in one token range:
// a flush adds one, a compaction swaps its inputs for its outputs. Every
// added SSTable must lie inside the range. Removed SSTables go on the
// garbage list in the same change.
type Commit struct {
	Table  uuid.UUID
	Range  int
	Add    []SSTable
	Remove []string // object keys
	// Discard lists objects that never became live, such as the outputs
	// of a failed compaction, to be deleted with the garbage.
	Discard []string
	// Epoch, if not 0, fences the commit: it fails with ErrFenced unless
	// Epoch is the range's current ownership epoch.
	Epoch uint64
	// Flushed raises the range's watermarks (TableSSTables.Flushed) to
	// these positions. Every flush position of a removed SSTable that no
	// added SSTable carries must be at or below one after the commit, so
	// that no flush ever looks less complete than before; the committer
	// must know each complete, or older than a complete flush of its
	// shard (FlushState's done).
	Flushed []LogPosition
}

func sstablesKey(table uuid.UUID, r int) string { return fmt.Sprintf("t.%s.%05d", table, r) }

// SSTables returns the live SSTables of a table in range order (none for an
// unknown table). It reads every range's key, which it knows, rather than
// listing the table's keys first.
func (m *Manifest) SSTables(ctx context.Context, table uuid.UUID) ([]SSTable, error) {
	n, err := m.RangeCount(ctx)
	if errors.Is(err, ErrNotFound) {
		return nil, nil // no ranges, so no SSTables
	}
	if err != nil {
		return nil, err
	}
	var out []SSTable
	for r := range n {
		ts, err := m.SSTablesInRange(ctx, table, r)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	return out, nil
}

// SSTablesInRange returns the live SSTables of a table in range r, without
// those of loads not committed.
func (m *Manifest) SSTablesInRange(ctx context.Context, table uuid.UUID, r int) ([]SSTable, error) {
	ts, err := getJSON[TableSSTables](ctx, m.sstables, sstablesKey(table, r))
	if err != nil || ts == nil {
		return nil, err
	}
	return visibleSSTables(ts.SSTables, func(id uuid.UUID) (*Load, error) {
		return getJSON[Load](ctx, m.sstables, loadKey(id))
	})
}

// CommitSSTables applies c with a compare-and-set and returns the SSTables
// of the table's range after it. Re-committing a change that is already
// applied (the same SSTables added or since become garbage, the removed
// ones gone, the discarded ones listed) is a no-op that succeeds even under
// a stale epoch, so a commit that failed with ErrNotArchived can simply be
// retried, also after its range was reassigned, and never brings back an
// SSTable that a later change removed.
func (m *Manifest) CommitSSTables(ctx context.Context, c Commit) ([]SSTable, error) {
	if err := m.checkCommit(ctx, c); err != nil {
		return nil, err
	}
	var out []SSTable
	err := mutateJSON(ctx, m, m.sstables, sstablesKey(c.Table, c.Range), func(cur *TableSSTables) (*TableSSTables, error) {
		if cur == nil {
			cur = &TableSSTables{Table: c.Table, Range: c.Range}
		}
		next, changed, err := applyCommit(cur, c, m.opts.Now().UTC())
		out = cur.SSTables
		if err == nil && !changed {
			// Already applied: a retry succeeds (and archives) even if
			// the range has been reassigned since, for the change is in.
			return nil, errUnchanged
		}
		// The fence is checked on every attempt, right before the
		// compare-and-set, to keep the window for a concurrent Assign short.
		if c.Epoch != 0 {
			if err := m.checkFence(ctx, c.Range, c.Epoch); err != nil {
				return nil, err
			}
		}
		if err != nil {
			return nil, err
		}
		out = next.SSTables
		return next, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (m *Manifest) checkCommit(ctx context.Context, c Commit) error {
	if c.Table == uuid.Nil || len(c.Add)+len(c.Remove)+len(c.Discard) == 0 {
		return fmt.Errorf("%w: commit needs a table and a change", ErrInvalid)
	}
	for _, s := range c.Add {
		if s.Load == uuid.Nil {
			continue
		}
		// Parts join pending loads only: a part added after its load
		// was abandoned or committed would stay hidden, or appear late.
		l, err := getJSON[Load](ctx, m.sstables, loadKey(s.Load))
		if err != nil {
			return err
		}
		if l == nil || l.State != LoadPending || l.Table != c.Table {
			return fmt.Errorf("%w: sstable %q of load %s, which is not a pending load of the table", ErrInvalid, s.Key, s.Load)
		}
	}
	named := map[string]bool{}
	for _, k := range slices.Concat(c.Remove, c.Discard) {
		if k == "" || named[k] {
			return fmt.Errorf("%w: object %q removed or discarded twice", ErrInvalid, k)
		}
		named[k] = true
	}
	n, err := m.RangeCount(ctx)
	if err != nil {
		return err
	}
	if c.Range < 0 || c.Range >= n {
		return fmt.Errorf("%w: range %d of %d", ErrInvalid, c.Range, n)
	}
	first, last := RangeBounds(c.Range, n)
	for _, s := range c.Add {
		if s.Key == "" || s.MinToken > s.MaxToken {
			return fmt.Errorf("%w: sstable %q", ErrInvalid, s.Key)
		}
		if s.MinToken < first || s.MaxToken > last {
			return fmt.Errorf("%w: sstable %q spans tokens outside range %d", ErrInvalid, s.Key, c.Range)
		}
		if named[s.Key] {
			return fmt.Errorf("%w: sstable %q both added and removed or discarded", ErrInvalid, s.Key)
		}
	}
	return nil
}

// applyCommit returns the document after c, made at now, and whether c
// changed anything. An added SSTable already on the garbage list was added
// before and has left since: that part of c is applied.
func applyCommit(cur *TableSSTables, c Commit, now time.Time) (*TableSSTables, bool, error) {
	index := func(list []SSTable, key string) int {
		return slices.IndexFunc(list, func(s SSTable) bool { return s.Key == key })
	}
	applied := true
	for _, a := range c.Add {
		i := index(cur.SSTables, a.Key)
		switch {
		case i >= 0:
			if !reflect.DeepEqual(normalizeSSTable(cur.SSTables[i]), normalizeSSTable(a)) {
				return nil, false, fmt.Errorf("%w: sstable %q is live with other properties", ErrExists, a.Key)
			}
		case garbageIndex(cur.Garbage, a.Key) < 0:
			applied = false
		}
	}
	for _, r := range c.Remove {
		if index(cur.SSTables, r) >= 0 {
			applied = false
		}
	}
	for _, d := range c.Discard {
		if index(cur.SSTables, d) >= 0 {
			return nil, false, fmt.Errorf("%w: discarded object %q is a live sstable", ErrInvalid, d)
		}
		if garbageIndex(cur.Garbage, d) < 0 {
			applied = false
		}
	}
	for _, f := range c.Flushed {
		if !flushedThrough(cur.Flushed, f) {
			applied = false
		}
	}
	if applied {
		return cur, false, nil
	}
	next := &TableSSTables{
		Table: cur.Table, Range: cur.Range,
		SSTables: slices.Clone(cur.SSTables), Garbage: slices.Clone(cur.Garbage), Flushed: slices.Clone(cur.Flushed),
	}
	for _, f := range c.Flushed {
		next.Flushed = raiseFlushed(next.Flushed, f)
	}
	for _, r := range c.Remove {
		i := index(next.SSTables, r)
		if i < 0 {
			return nil, false, fmt.Errorf("%w: %q", ErrMissingSSTable, r)
		}
		s := next.SSTables[i]
		for _, p := range s.Covers {
			carried := slices.ContainsFunc(c.Add, func(a SSTable) bool { return slices.Contains(a.Covers, p) })
			if p.Parts > 0 && !carried && !flushedThrough(next.Flushed, p) {
				return nil, false, fmt.Errorf("%w: removing %q drops flush %s:%d %d:%d with no watermark at or past it",
					ErrInvalid, s.Key, p.Node, p.Shard, p.Segment, p.Offset)
			}
		}
		next.SSTables = slices.Delete(next.SSTables, i, i+1)
		next.Garbage = append(next.Garbage, Garbage{Key: s.Key, Size: s.Size, Since: now, Reason: ReasonRemoved})
	}
	for _, a := range c.Add {
		if garbageIndex(next.Garbage, a.Key) >= 0 {
			continue // added and removed since
		}
		if index(next.SSTables, a.Key) >= 0 {
			return nil, false, fmt.Errorf("%w: sstable %q is already live", ErrExists, a.Key)
		}
		next.SSTables = append(next.SSTables, a)
	}
	for _, d := range c.Discard {
		if garbageIndex(next.Garbage, d) < 0 {
			next.Garbage = append(next.Garbage, Garbage{Key: d, Since: now, Reason: ReasonDiscarded})
		}
	}
	return next, true, nil
}

// normalizeSSTable makes an SSTable comparable with its JSON round trip.
func normalizeSSTable(s SSTable) SSTable {
	s.Created = s.Created.UTC().Round(0)
	if len(s.FirstKey) == 0 {
		s.FirstKey = nil
	}
	if len(s.LastKey) == 0 {
		s.LastKey = nil
	}
	if len(s.Covers) == 0 {
		s.Covers = nil
	}
	return s
}
