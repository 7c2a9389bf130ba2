package ingest

import (
	"context"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/streamlog"
)

// Log is a shard's write-ahead log: the local commitlog (package
// commitlog), or in a cluster a replicated one (package streamlog). The
// shard appends each group commit as one record, replays the records that
// committed flushes do not hold when it opens, and releases the rest.
//
// An Append that fails with an error matching storage.ErrUnavailable or
// storage.ErrTimeout may or may not have logged the record: the shard appends the same record
// again before any other, and the log stores it once. One that fails with
// storage.ErrFenced is final: another writer owns the log now.
type Log interface {
	Append(ctx context.Context, rec []byte) (commitlog.Position, error)
	// Replay calls fn with every record not released, in log order.
	Replay(fn func(pos commitlog.Position, rec []byte) error) error
	// Release drops the records before upTo.
	Release(upTo commitlog.Position) error
	// MaxRecord is the size of the largest record Append takes.
	MaxRecord() int
	Stats() commitlog.Stats
	Close() error
}

var (
	_ Log = (*commitlog.Log)(nil)
	_ Log = (*streamlog.Log)(nil)
)
