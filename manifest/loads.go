package manifest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// A bulk load (package internal/bulk) adds SSTables to many token ranges of
// one table, one compare-and-set per range, yet readers must see all of it
// or none. So the load first records itself as pending, then adds its
// SSTables marked with its ID (SSTable.Load), hidden from every reader,
// then commits with one compare-and-set on its record:
//
//	record state   SSTables marked with the load
//	-------------  --------------------------------------------------------
//	(none)         hidden: a load that never recorded itself adds nothing
//	pending        hidden; compaction, which plans from what it sees,
//	               leaves them alone
//	committed      visible, like any other SSTable
//	abandoned      hidden, and removed to the garbage list by AbandonLoad
//
// The record lives in the sstables bucket, so a View, which applies that
// bucket's changes in revision order, has applied every part of a load by
// the time it sees the commit. Records stay after the commit: a reader that
// read a range document and then the record must not find it gone.

// Load states.
const (
	LoadPending   = "pending"
	LoadCommitted = "committed"
	LoadAbandoned = "abandoned"
)

// Load is the record of one bulk load of a table, under "l.<ID>" in the
// sstables bucket.
type Load struct {
	ID      uuid.UUID `json:"id"`
	Table   uuid.UUID `json:"table"`
	State   string    `json:"state"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

func loadKey(id uuid.UUID) string { return "l." + id.String() }

// CreateLoad records a pending load of table. Creating a pending load
// again is a no-op, so a retry succeeds.
func (m *Manifest) CreateLoad(ctx context.Context, id, table uuid.UUID) error {
	if id == uuid.Nil || table == uuid.Nil {
		return fmt.Errorf("%w: a load needs an ID and a table", ErrInvalid)
	}
	now := m.opts.Now().UTC()
	return mutateJSON(ctx, m, m.sstables, loadKey(id), func(cur *Load) (*Load, error) {
		if cur != nil {
			if cur.Table == table && cur.State == LoadPending {
				return nil, errUnchanged
			}
			return nil, fmt.Errorf("%w: load %s is %s", ErrExists, id, cur.State)
		}
		return &Load{ID: id, Table: table, State: LoadPending, Created: now, Updated: now}, nil
	})
}

// GetLoad returns the record of load id, or ErrNotFound.
func (m *Manifest) GetLoad(ctx context.Context, id uuid.UUID) (*Load, error) {
	l, err := getJSON[Load](ctx, m.sstables, loadKey(id))
	if err != nil {
		return nil, err
	}
	if l == nil {
		return nil, fmt.Errorf("%w: load %s", ErrNotFound, id)
	}
	return l, nil
}

// CommitLoad makes every SSTable of a pending load visible at once.
// Committing a committed load is a no-op.
func (m *Manifest) CommitLoad(ctx context.Context, id uuid.UUID) error {
	return m.setLoadState(ctx, id, LoadCommitted)
}

// AbandonLoad hides a pending load for good and moves its SSTables, in
// every range of its table, to the garbage list, from where package gc
// deletes them. Objects the load uploaded but never added are not in the
// manifest: the orphan sweep deletes them. Abandoning an abandoned load
// again finishes what a failed attempt left.
func (m *Manifest) AbandonLoad(ctx context.Context, id uuid.UUID) error {
	if err := m.setLoadState(ctx, id, LoadAbandoned); err != nil {
		return err
	}
	l, err := m.GetLoad(ctx, id)
	if err != nil {
		return err
	}
	parts, err := m.LoadParts(ctx, id)
	if err != nil {
		return err
	}
	for r, ps := range parts {
		keys := make([]string, len(ps))
		for i, s := range ps {
			keys[i] = s.Key
		}
		if _, err := m.CommitSSTables(ctx, Commit{Table: l.Table, Range: r, Remove: keys}); err != nil {
			return err
		}
	}
	return nil
}

// setLoadState moves a pending load to state; a load already there stays.
func (m *Manifest) setLoadState(ctx context.Context, id uuid.UUID, state string) error {
	now := m.opts.Now().UTC()
	return mutateJSON(ctx, m, m.sstables, loadKey(id), func(cur *Load) (*Load, error) {
		switch {
		case cur == nil:
			return nil, fmt.Errorf("%w: load %s", ErrNotFound, id)
		case cur.State == state:
			return nil, errUnchanged
		case cur.State != LoadPending:
			return nil, fmt.Errorf("%w: load %s is %s", ErrInvalid, id, cur.State)
		}
		next := *cur
		next.State, next.Updated = state, now
		return &next, nil
	})
}

// visibleSSTables returns list without the SSTables of loads that are not
// committed; state returns a load's record, or nil. The list is returned
// as is when no SSTable in it belongs to a load, the common case.
func visibleSSTables(list []SSTable, state func(uuid.UUID) (*Load, error)) ([]SSTable, error) {
	if !slices.ContainsFunc(list, func(s SSTable) bool { return s.Load != uuid.Nil }) {
		return list, nil
	}
	out := make([]SSTable, 0, len(list))
	for _, s := range list {
		if s.Load != uuid.Nil {
			l, err := state(s.Load)
			if err != nil {
				return nil, err
			}
			if l == nil || l.State != LoadCommitted {
				continue
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// LoadParts returns the SSTables of load id, pending or not, by range.
func (m *Manifest) LoadParts(ctx context.Context, id uuid.UUID) (map[int][]SSTable, error) {
	l, err := m.GetLoad(ctx, id)
	if err != nil {
		return nil, err
	}
	n, err := m.RangeCount(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int][]SSTable{}
	for r := range n {
		ts, err := getJSON[TableSSTables](ctx, m.sstables, sstablesKey(l.Table, r))
		if err != nil {
			return nil, err
		}
		if ts == nil {
			continue
		}
		for _, s := range ts.SSTables {
			if s.Load == id {
				out[r] = append(out[r], s)
			}
		}
	}
	return out, nil
}
