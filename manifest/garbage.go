package manifest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Garbage is an object of the bucket that is no longer, or never was, a
// live SSTable. A read that chose its SSTables before the object left may
// still fetch it, so it is deleted only after a grace period (package gc).
//
// Garbage is listed in the sstables document of the table and range it
// belongs to, written by the same compare-and-set that removes it from the
// live set: no crash can leave an object unlisted and so never deleted, nor
// listed while still live.
type Garbage struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
	// Since is when the object became garbage, by the clock of the writer
	// (Options.Now).
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
}

// Reasons an object became garbage.
const (
	// ReasonRemoved: a Commit removed it, as a compaction removes its inputs.
	ReasonRemoved = "removed"
	// ReasonTruncated: DropSSTables removed it with the rest of its table.
	ReasonTruncated = "truncated"
	// ReasonDiscarded: a Commit discarded an object that never became live,
	// such as the output of a failed compaction.
	ReasonDiscarded = "discarded"
)

// TableGarbage is a Garbage entry and the table and range that list it.
type TableGarbage struct {
	Table uuid.UUID
	Range int
	Garbage
}

// DropSSTables removes every live SSTable of table from the manifest and
// lists each on the garbage list, returning those it removed. Each range
// of the table is read, and changed by one compare-and-set if it holds any, so readers may see some ranges
// dropped before others; SSTables committed to the table while it runs
// may or may not survive. It is idempotent: once it has succeeded, a retry
// removes nothing more unless SSTables were committed since. It does not
// touch the schema: DROP TABLE is DropTable, then DropSSTables.
func (m *Manifest) DropSSTables(ctx context.Context, table uuid.UUID) ([]SSTable, error) {
	if table == uuid.Nil {
		return nil, fmt.Errorf("%w: DropSSTables needs a table", ErrInvalid)
	}
	// Every range's key is read: the ranges are known, and a listing
	// would cost a round trip more.
	n, err := m.RangeCount(ctx)
	if errors.Is(err, ErrNotFound) {
		return nil, nil // no ranges, so no SSTables
	}
	if err != nil {
		return nil, err
	}
	var dropped []SSTable
	for r := range n {
		var these []SSTable
		err := mutateJSON(ctx, m, m.sstables, sstablesKey(table, r), func(cur *TableSSTables) (*TableSSTables, error) {
			these = nil
			if cur == nil || len(cur.SSTables) == 0 {
				return nil, errUnchanged
			}
			now := m.opts.Now().UTC()
			next := &TableSSTables{Table: cur.Table, Range: cur.Range, Garbage: slices.Clone(cur.Garbage), Flushed: cur.Flushed}
			for _, s := range cur.SSTables {
				next.Garbage = append(next.Garbage, Garbage{Key: s.Key, Size: s.Size, Since: now, Reason: ReasonTruncated})
			}
			these = cur.SSTables
			return next, nil
		})
		if err != nil {
			return dropped, err
		}
		dropped = append(dropped, these...)
	}
	return dropped, nil
}

// Garbage returns every garbage entry of the cluster, oldest first. It
// reads every sstables document, one KV get each: a collector calls it
// once per pass, not per request.
func (m *Manifest) Garbage(ctx context.Context) ([]TableGarbage, error) {
	var out []TableGarbage
	err := m.EachSSTablesDocument(ctx, func(ts *TableSSTables) error {
		for _, g := range ts.Garbage {
			out = append(out, TableGarbage{Table: ts.Table, Range: ts.Range, Garbage: g})
		}
		return nil
	})
	slices.SortStableFunc(out, func(a, b TableGarbage) int { return a.Since.Compare(b.Since) })
	return out, err
}

// EachSSTablesDocument calls fn with every sstables document of the
// cluster, those of tables no longer in the schema (a DROP that stopped
// part way) included, one KV get each: every document that existed when it
// listed the keys (bucket.keys), as it is when it is read.
func (m *Manifest) EachSSTablesDocument(ctx context.Context, fn func(*TableSSTables) error) error {
	keys, err := m.sstables.keys(ctx, "t.>")
	if err != nil {
		return err
	}
	for _, k := range keys {
		ts, err := getJSON[TableSSTables](ctx, m.sstables, k)
		if err != nil {
			return err
		}
		if ts == nil {
			continue
		}
		if err := fn(ts); err != nil {
			return err
		}
	}
	return nil
}

// Collected removes entries from the garbage list once their objects are
// deleted: one compare-and-set per table and range. Entries no longer
// listed are ignored, so it is idempotent. A document left with neither
// SSTables, garbage nor flush watermarks is deleted.
func (m *Manifest) Collected(ctx context.Context, gs ...TableGarbage) error {
	type place struct {
		table uuid.UUID
		r     int
	}
	byPlace := map[place]map[string]bool{}
	var order []place
	for _, g := range gs {
		p := place{g.Table, g.Range}
		if byPlace[p] == nil {
			byPlace[p] = map[string]bool{}
			order = append(order, p)
		}
		byPlace[p][g.Key] = true
	}
	slices.SortFunc(order, func(a, b place) int {
		return cmp.Or(slices.Compare(a.table[:], b.table[:]), cmp.Compare(a.r, b.r))
	})
	for _, p := range order {
		gone := byPlace[p]
		err := mutateJSON(ctx, m, m.sstables, sstablesKey(p.table, p.r), func(cur *TableSSTables) (*TableSSTables, error) {
			if cur == nil {
				return nil, errUnchanged
			}
			kept := slices.DeleteFunc(slices.Clone(cur.Garbage), func(g Garbage) bool { return gone[g.Key] })
			if len(kept) == len(cur.Garbage) {
				return nil, errUnchanged
			}
			if len(kept) == 0 && len(cur.SSTables) == 0 && len(cur.Flushed) == 0 { // a watermark outlives the SSTables
				return nil, nil
			}
			return &TableSSTables{Table: cur.Table, Range: cur.Range, SSTables: cur.SSTables, Garbage: kept, Flushed: cur.Flushed}, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// garbageIndex returns the index of key in gs, or -1.
func garbageIndex(gs []Garbage, key string) int {
	return slices.IndexFunc(gs, func(g Garbage) bool { return g.Key == key })
}
