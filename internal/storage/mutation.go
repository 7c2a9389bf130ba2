package storage

import (
	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/manifest"
)

// TableID names a table in memtables, commitlogs and requests to ingest
// nodes; the schema assigns it and never reuses it.
type TableID uint32

// TableIDOf returns the TableID of the manifest table id, its
// manifest.ShortID. The manifest keeps them distinct when it creates tables;
// should two still collide, ingest refuses to guess between them.
func TableIDOf(id uuid.UUID) TableID { return TableID(manifest.ShortID(id)) }

// Entry is one value to merge into a table: a storage key (package keys)
// and a model-encoded header or row.
type Entry struct {
	Key, Value []byte
}

// Mutation is a set of entries of one table, applied atomically: a
// snapshot read sees all of them or none.
type Mutation struct {
	Table   TableID
	Entries []Entry
}
