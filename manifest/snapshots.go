package manifest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// kindSnapshots is the bucket of snapshots, "<cluster>_snapshots":
//
//	key               document
//	s.<name>.<table>  Snapshot: one table's live SSTables at one version
//
// It is made by the first snapshot, and archived like the catalog, so that
// a catalog rebuilt from the bucket (Restore) keeps its snapshots, and with
// them the objects they pin.
const kindSnapshots = "snapshots"

// A Snapshot pins one table as it was at one manifest version: the live
// SSTables of each of its ranges, with the version of the range's sstables
// document they were read from, so that the archive
// (manifest/<cluster>_sstables/<key>/<version>) shows the same state. The
// garbage collector deletes no object a snapshot names (Snapshots), however
// long it has been garbage, until the snapshot is dropped: the SSTables of
// a snapshot stay readable, and RestoreSnapshot can make them live again.
//
// Later features build on this record: a read as of a snapshot reads its
// SSTables; a clone is a new table whose live sets start as a snapshot's.
type Snapshot struct {
	Name  string    `json:"name"`
	Table uuid.UUID `json:"table"`
	// Keyspace and TableName name the table when the snapshot was taken.
	Keyspace  string `json:"keyspace"`
	TableName string `json:"table_name"`
	// Definition is the table's schema when the snapshot was taken: the
	// column IDs its SSTables' cells name.
	Definition *Table     `json:"definition"`
	Created    time.Time  `json:"created"`
	Ranges     []RangeSet `json:"ranges"`
}

// RangeSet is the live SSTables of one range at version Version of its
// sstables document (0: the document did not exist, and the range held
// nothing).
type RangeSet struct {
	Range    int       `json:"range"`
	Version  uint64    `json:"version"`
	SSTables []SSTable `json:"sstables"`
}

// SSTables returns every SSTable of the snapshot.
func (s *Snapshot) SSTables() []SSTable {
	var out []SSTable
	for _, r := range s.Ranges {
		out = append(out, r.SSTables...)
	}
	return out
}

// ReasonRestored: RestoreSnapshot replaced the object by a snapshot's
// SSTables.
const ReasonRestored = "restored"

// snapshotNameRE bounds snapshot names to what a KV key may hold.
var snapshotNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func snapshotKey(name string, table uuid.UUID) string { return "s." + name + "." + table.String() }

// snapshotsBucket returns the snapshots bucket, created if create is set;
// without create it returns nil if the bucket does not exist.
func (m *Manifest) snapshotsBucket(ctx context.Context, create bool) (*bucket, error) {
	name := m.cluster + "_" + kindSnapshots
	if create {
		return openBucket(ctx, m.js, name, kindSnapshots, m.opts.Replicas)
	}
	kv, err := m.js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifest: open bucket %s: %w", name, err)
	}
	return newBucket(ctx, m.js, kv, name, true)
}

// TakeSnapshot records snapshot name of table t: each range's live
// SSTables as its sstables document holds them now. Ranges are read one
// by one, each at its own version, as a read of the table reads them. It
// fails with ErrExists if the table already has a snapshot of that name.
//
// The objects are pinned from the moment the snapshot is stored. An
// SSTable live when its range was read is garbage for at most the time
// TakeSnapshot takes afterwards, far below the collector's grace period,
// so none is deleted before the pin holds.
func (m *Manifest) TakeSnapshot(ctx context.Context, name string, t *Table) (*Snapshot, error) {
	if !snapshotNameRE.MatchString(name) {
		return nil, fmt.Errorf("%w: snapshot name %q (want letters, digits, '_' and '-')", ErrInvalid, name)
	}
	if t == nil || t.ID == uuid.Nil {
		return nil, fmt.Errorf("%w: a snapshot needs a table", ErrInvalid)
	}
	n, err := m.RangeCount(ctx)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	snap := &Snapshot{Name: name, Table: t.ID, Keyspace: t.Keyspace, TableName: t.Name, Definition: t,
		Created: m.opts.Now().UTC(), Ranges: []RangeSet{}}
	for r := range n {
		raw, version, err := getVersion(ctx, m.sstables, sstablesKey(t.ID, r))
		if err != nil {
			return nil, err
		}
		rs := RangeSet{Range: r, Version: version, SSTables: []SSTable{}}
		if raw != nil {
			var ts TableSSTables
			if err := decodeDoc(raw, &ts); err != nil {
				return nil, fmt.Errorf("%s/%s: %w", m.sstables.name, sstablesKey(t.ID, r), err)
			}
			rs.SSTables = append(rs.SSTables, ts.SSTables...)
		}
		snap.Ranges = append(snap.Ranges, rs)
	}
	b, err := m.snapshotsBucket(ctx, true)
	if err != nil {
		return nil, err
	}
	err = mutateJSON(ctx, m, b, snapshotKey(name, t.ID), func(cur *Snapshot) (*Snapshot, error) {
		if cur != nil {
			return nil, fmt.Errorf("%w: snapshot %s of %s.%s", ErrExists, name, t.Keyspace, t.Name)
		}
		return snap, nil
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// Snapshots returns every snapshot, by name and then keyspace and table.
func (m *Manifest) Snapshots(ctx context.Context) ([]Snapshot, error) {
	b, err := m.snapshotsBucket(ctx, false)
	if err != nil || b == nil {
		return nil, err
	}
	docs, err := list(ctx, b)
	if err != nil {
		return nil, err
	}
	out := make([]Snapshot, 0, len(docs))
	for k, raw := range docs {
		var s Snapshot
		if err := decodeDoc(raw, &s); err != nil {
			return nil, fmt.Errorf("%s/%s: %w", b.name, k, err)
		}
		if k != snapshotKey(s.Name, s.Table) {
			return nil, fmt.Errorf("%w: %s/%s holds snapshot %s of table %s", ErrCorrupt, b.name, k, s.Name, s.Table)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Snapshot) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Keyspace+"."+a.TableName, b.Keyspace+"."+b.TableName)
	})
	return out, nil
}

// PinnedKeys returns the object keys that some snapshot names: the
// collector must not delete them.
func (m *Manifest) PinnedKeys(ctx context.Context) (map[string]bool, error) {
	snaps, err := m.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	pinned := map[string]bool{}
	for _, s := range snaps {
		for _, sst := range s.SSTables() {
			pinned[sst.Key] = true
		}
	}
	return pinned, nil
}

// DropSnapshot deletes snapshot name of table; its objects that are
// garbage become deletable at the collector's next pass (their grace
// counts from when they became garbage). ErrNotFound if there is none.
func (m *Manifest) DropSnapshot(ctx context.Context, name string, table uuid.UUID) error {
	b, err := m.snapshotsBucket(ctx, false)
	if err != nil {
		return err
	}
	if b == nil {
		return fmt.Errorf("%w: snapshot %s of table %s", ErrNotFound, name, table)
	}
	return mutateJSON(ctx, m, b, snapshotKey(name, table), func(cur *Snapshot) (*Snapshot, error) {
		if cur == nil {
			return nil, fmt.Errorf("%w: snapshot %s of table %s", ErrNotFound, name, table)
		}
		return nil, nil
	})
}

// RestoreSnapshot makes snap's SSTables the live set of its table again,
// one compare-and-set per range: the SSTables live now and not in the
// snapshot go on the garbage list (ReasonRestored), and the snapshot's
// come off it. Ranges change one after the other, so readers may see some
// restored before others. It is idempotent.
//
// The restored SSTables carry no flush positions (Covers): their flushes
// are long complete, and a position carried again could make a later,
// partial flush of the same shard look complete. The SSTables removed lose
// theirs, as DropSSTables's do. So the table's unflushed writes must be
// truncated first (ingest.Node.Truncate on every owner, which replay
// honours), as TRUNCATE does before DropSSTables: otherwise they would be
// flushed over the restored state.
func (m *Manifest) RestoreSnapshot(ctx context.Context, snap *Snapshot) error {
	n, err := m.RangeCount(ctx)
	if err != nil {
		return err
	}
	for _, rs := range snap.Ranges {
		if rs.Range >= n {
			return fmt.Errorf("%w: snapshot %s has range %d of a cluster of %d ranges", ErrInvalid, snap.Name, rs.Range, n)
		}
	}
	for _, rs := range snap.Ranges {
		want := map[string]bool{}
		restored := make([]SSTable, 0, len(rs.SSTables))
		for _, s := range rs.SSTables {
			want[s.Key] = true
			s.Covers = nil
			restored = append(restored, s)
		}
		err := mutateJSON(ctx, m, m.sstables, sstablesKey(snap.Table, rs.Range), func(cur *TableSSTables) (*TableSSTables, error) {
			if cur == nil {
				if len(restored) == 0 {
					return nil, errUnchanged
				}
				cur = &TableSSTables{Table: snap.Table, Range: rs.Range}
			}
			now := m.opts.Now().UTC()
			next := &TableSSTables{Table: cur.Table, Range: cur.Range, SSTables: restored, Flushed: cur.Flushed}
			changed := len(cur.SSTables) != len(restored)
			for _, s := range cur.SSTables {
				if !want[s.Key] {
					next.Garbage = append(next.Garbage, Garbage{Key: s.Key, Size: s.Size, Since: now, Reason: ReasonRestored})
					changed = true
				}
			}
			for _, g := range cur.Garbage {
				if want[g.Key] {
					changed = true // back to life
				} else {
					next.Garbage = append(next.Garbage, g)
				}
			}
			if !changed {
				return nil, errUnchanged
			}
			return next, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
