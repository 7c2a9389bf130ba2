package engine

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// ErrReadOnly is the answer of a Snapshot to a write.
var ErrReadOnly = errors.New("engine: snapshot is read-only")

// Snapshot is a read-only Engine over the SSTables of some tables as one
// View listed them at one sstables revision: every read sees the tables as
// of that one manifest version, and nothing of the memtables (`sediment
// unload` reads through it, after asking the nodes to flush). Its objects
// must outlive its reads: a removed SSTable stays in the bucket for
// -gc.grace-period.
type Snapshot struct {
	rp       readPath
	revision uint64
}

var _ Engine = (*Snapshot)(nil)

// snapshotLists is a Snapshot's copy of the View's lists.
type snapshotLists struct {
	ranges int
	lists  map[uuid.UUID]map[int][]manifest.SSTable
}

func (s *snapshotLists) RangeCount() int { return s.ranges }
func (s *snapshotLists) SSTablesInRange(table uuid.UUID, r int) []manifest.SSTable {
	return s.lists[table][r]
}

// NewSnapshot copies the View's SSTable lists of tables, all at one sstables
// revision: it copies again whenever the View changed while it copied.
func NewSnapshot(v *manifest.View, store objectstore.Store, tables ...uuid.UUID) *Snapshot {
	for {
		rev := v.SSTablesRevision()
		l := &snapshotLists{ranges: v.RangeCount(), lists: map[uuid.UUID]map[int][]manifest.SSTable{}}
		for _, t := range tables {
			l.lists[t] = map[int][]manifest.SSTable{}
			for r := range max(l.ranges, 1) {
				l.lists[t][r] = v.SSTablesInRange(t, r)
			}
		}
		if v.SSTablesRevision() == rev {
			return &Snapshot{
				rp:       readPath{mem: noMemtables{}, view: v, sstables: l, readers: tablestore.NewReaderCache(store, nil, 0)},
				revision: rev,
			}
		}
	}
}

// Revision is the sstables revision the snapshot was taken at.
func (s *Snapshot) Revision() uint64 { return s.revision }

// SSTables returns the snapshot's SSTables of table in range r.
func (s *Snapshot) SSTables(table uuid.UUID, r int) []manifest.SSTable {
	return s.rp.sstables.SSTablesInRange(table, r)
}

// noMemtables is the memtables of a Snapshot: none.
type noMemtables struct{}

func (noMemtables) iter(context.Context, uuid.UUID, int64, int64, []byte, []byte, []byte) (kv.Iterator, error) {
	return kv.Merging(nil), nil
}

// Apply implements Engine: ErrReadOnly.
func (s *Snapshot) Apply(context.Context, ...*Mutation) error { return ErrReadOnly }

// ApplyIf implements Engine: ErrReadOnly.
func (s *Snapshot) ApplyIf(context.Context, *Mutation, int64, Condition) (bool, error) {
	return false, ErrReadOnly
}

// Truncate implements Engine: ErrReadOnly.
func (s *Snapshot) Truncate(context.Context, uuid.UUID) error { return ErrReadOnly }

// Read implements Engine.
func (s *Snapshot) Read(ctx context.Context, sl Slice) (*Partition, error) { return s.rp.read(ctx, sl) }

// Scan implements Engine.
func (s *Snapshot) Scan(ctx context.Context, sc Scan) (*Page, error) { return s.rp.scan(ctx, sc) }
