package manifest

import (
	"context"
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
	// shard's records are in this SSTable.
	Covers  []LogPosition `json:"covers,omitempty"`
	Created time.Time     `json:"created"`
}

// LogPosition is a position in one shard's commitlog.
type LogPosition struct {
	Shard   int    `json:"shard"`
	Segment uint64 `json:"segment"`
	Offset  int64  `json:"offset"`
}

// TableSSTables is the set of live SSTables of one table, stored under
// "t.<table ID>" in the sstables bucket.
type TableSSTables struct {
	Table    uuid.UUID `json:"table"`
	SSTables []SSTable `json:"sstables"`
}

// Commit is one atomic change of a table's SSTables: a flush adds one, a
// compaction swaps its inputs for its outputs.
type Commit struct {
	Table  uuid.UUID
	Add    []SSTable
	Remove []string // object keys
	// Fence, if set, makes the commit require the committer's epoch on
	// Fence.Range to be current, and every added SSTable to lie in it.
	Fence *Fence
}

func sstablesKey(table uuid.UUID) string { return "t." + table.String() }

// SSTables returns the live SSTables of a table (none for an unknown table).
func (m *Manifest) SSTables(ctx context.Context, table uuid.UUID) ([]SSTable, error) {
	ts, err := getJSON[TableSSTables](ctx, m.sstables, sstablesKey(table))
	if err != nil || ts == nil {
		return nil, err
	}
	return ts.SSTables, nil
}

// CommitSSTables applies c with a compare-and-set and returns the table's
// SSTables after it. Re-committing a change that is already applied (the
// same SSTables added, the removed ones gone) is a no-op, so a commit that
// failed with ErrNotArchived can simply be retried.
func (m *Manifest) CommitSSTables(ctx context.Context, c Commit) ([]SSTable, error) {
	if err := m.checkCommit(ctx, c); err != nil {
		return nil, err
	}
	var out []SSTable
	err := mutateJSON(ctx, m, m.sstables, sstablesKey(c.Table), func(cur *TableSSTables) (*TableSSTables, error) {
		if cur == nil {
			cur = &TableSSTables{Table: c.Table}
		}
		// The fence is checked on every attempt, right before the
		// compare-and-set, to keep the window for a concurrent Assign short.
		if c.Fence != nil {
			if err := m.checkFence(ctx, *c.Fence); err != nil {
				return nil, err
			}
		}
		next, changed, err := applyCommit(cur.SSTables, c)
		out = next
		if err != nil || !changed {
			out = cur.SSTables
			if err == nil {
				err = errUnchanged
			}
			return nil, err
		}
		return &TableSSTables{Table: c.Table, SSTables: next}, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (m *Manifest) checkCommit(ctx context.Context, c Commit) error {
	if c.Table == uuid.Nil || len(c.Add)+len(c.Remove) == 0 {
		return fmt.Errorf("%w: commit needs a table and a change", ErrInvalid)
	}
	var n int
	if c.Fence != nil {
		var err error
		if n, err = m.RangeCount(ctx); err != nil {
			return err
		}
	}
	for _, s := range c.Add {
		if s.Key == "" || s.MinToken > s.MaxToken {
			return fmt.Errorf("%w: sstable %q", ErrInvalid, s.Key)
		}
		if c.Fence != nil {
			first, last := RangeBounds(c.Fence.Range, n)
			if c.Fence.Range >= n || s.MinToken < first || s.MaxToken > last {
				return fmt.Errorf("%w: sstable %q spans tokens outside range %d", ErrInvalid, s.Key, c.Fence.Range)
			}
		}
	}
	return nil
}

// applyCommit returns the SSTables after c and whether c changed anything.
func applyCommit(cur []SSTable, c Commit) ([]SSTable, bool, error) {
	index := func(list []SSTable, key string) int {
		return slices.IndexFunc(list, func(s SSTable) bool { return s.Key == key })
	}
	applied := true
	for _, a := range c.Add {
		i := index(cur, a.Key)
		if i < 0 {
			applied = false
		} else if !reflect.DeepEqual(normalizeSSTable(cur[i]), normalizeSSTable(a)) {
			return nil, false, fmt.Errorf("%w: sstable %q is live with other properties", ErrExists, a.Key)
		}
	}
	for _, r := range c.Remove {
		if index(cur, r) >= 0 {
			applied = false
		}
	}
	if applied {
		return cur, false, nil
	}
	next := slices.Clone(cur)
	for _, r := range c.Remove {
		i := index(next, r)
		if i < 0 {
			return nil, false, fmt.Errorf("%w: %q", ErrMissingSSTable, r)
		}
		next = slices.Delete(next, i, i+1)
	}
	for _, a := range c.Add {
		if index(next, a.Key) >= 0 {
			return nil, false, fmt.Errorf("%w: sstable %q is already live", ErrExists, a.Key)
		}
		next = append(next, a)
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
