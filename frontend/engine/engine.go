package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
)

// ErrInvalidQuery marks a read whose bounds or positions are malformed.
var ErrInvalidQuery = errors.New("engine: invalid query")

// Entry is one storage key and its model-encoded value.
type Entry = storage.Entry

// Mutation is a set of entries of one table. Each partition's entries are
// applied atomically (ingest.Node.Apply).
type Mutation struct {
	Table   uuid.UUID
	Entries []Entry
}

// Slice reads part of one partition.
type Slice struct {
	Table uuid.UUID
	// Key is the serialized partition key; its token is computed from it.
	Key []byte
	// Start and End bound the rows, Start <= key < End, as keys.AppendBound
	// builds them for this partition; nil is the partition's first or last
	// row.
	Start, End []byte
	// Reverse returns rows in descending key order.
	Reverse bool
	// Limit bounds the live rows returned; 0 returns all.
	Limit int
	// Now is the read time in seconds: what expired by then is gone.
	Now int64
}

// Scan reads a table's partitions whose tokens lie in [First, Last],
// one page at a time.
type Scan struct {
	Table       uuid.UUID
	First, Last int64
	// After resumes a scan: Page.Next of the previous page, or nil to start.
	After []byte
	// Limit bounds the rows of a page (a partition with a live static row
	// and no live rows counts as one); 0 reads the whole range.
	Limit int
	Now   int64
}

// Row is a live row: its storage key and its live view (model.Row.Resolve).
type Row struct {
	Key []byte
	Row model.Row
}

// Partition is the live view of (part of) a partition.
type Partition struct {
	Token int64
	// Key is the serialized partition key.
	Key []byte
	// Header is the merged header. Its deletion and range tombstones are
	// those stored; its static row is resolved to its live view.
	Header model.Header
	// StaticLive reports whether the static row has live cells.
	StaticLive bool
	Rows       []Row
}

// Page is one page of a scan.
type Page struct {
	Partitions []Partition
	// Next resumes the scan (Scan.After); nil when the range is done.
	Next []byte
}

// Condition decides a conditional write from the partition's live view.
type Condition func(current *Partition) (bool, error)

// Engine is what the CQL layer reads and writes through.
type Engine interface {
	// Apply writes the mutations and returns once they are durable. Each
	// partition's entries are atomic, not the whole batch: on an error,
	// mutations it does not name may have been applied.
	Apply(ctx context.Context, ms ...*Mutation) error
	// ApplyIf applies m, whose entries belong to one partition, if cond
	// holds for the partition's live view at now; no write to the
	// partition comes between the read and the write.
	ApplyIf(ctx context.Context, m *Mutation, now int64, cond Condition) (bool, error)
	// Read returns a slice of a partition.
	Read(ctx context.Context, s Slice) (*Partition, error)
	// Scan returns the next page of a token range scan.
	Scan(ctx context.Context, s Scan) (*Page, error)
	// Truncate removes every row of table: first from the memtables of
	// every ingest node, durably (a restarted node does not bring them
	// back), then its SSTables from the manifest, whose objects are
	// deleted after a grace period (package gc). Writes acknowledged
	// before Truncate was called are gone once it returns, for reads
	// through this engine too; writes concurrent with it may or may not
	// survive; later writes are kept. If a node cannot be reached it
	// fails; retrying is safe, for every step is idempotent.
	//
	// DROP TABLE is manifest.DropTable, then Truncate of the table, so
	// that its data goes too; DROP KEYSPACE drops the keyspace, then
	// truncates each of its tables.
	Truncate(ctx context.Context, table uuid.UUID) error
}

// ClusteringOf returns the clustering part of a row key or of a bound:
// what follows the partition prefix and the kind byte. Range tombstones are
// stored over these.
func ClusteringOf(key []byte) ([]byte, error) {
	n, err := keys.PartitionPrefixLen(key)
	if err != nil {
		return nil, err
	}
	if len(key) <= n || keys.Kind(key[n]) != keys.KindRow {
		return nil, fmt.Errorf("%w: %x is not a row key or bound", ErrInvalidQuery, key)
	}
	return key[n+1:], nil
}
