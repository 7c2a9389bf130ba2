package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// errAmbiguousTable means two tables share the 4-byte ID memtables and
// commitlogs know them by (ingest.TableIDOf).
var errAmbiguousTable = errors.New("engine: two tables share a table ID")

// TableReader is the ingest.TableReader of a node whose flushes are
// committed through a ViewCommitter over the same View: the node's
// conditional writes read the SSTables the View lists, through kept readers
// and the block cache, without a round trip to NATS. The View is complete
// for them because the node drops a flushed memtable only once the View
// shows the flush.
type TableReader struct {
	view    *manifest.View
	readers *tablestore.ReaderCache

	mu      sync.Mutex
	version uuid.UUID // of ids
	ids     map[ingest.TableID]uuid.UUID
}

var _ ingest.TableReader = (*TableReader)(nil)

// NewTableReader returns a TableReader over view; tier caches SSTable blocks
// (nil: none), and max readers are kept open (1024 if 0).
func NewTableReader(view *manifest.View, store objectstore.Store, tier cache.Tier, max int) *TableReader {
	return &TableReader{view: view, readers: tablestore.NewReaderCache(store, blocksOf(tier), max)}
}

// NewIter implements ingest.TableReader.
func (r *TableReader) NewIter(ctx context.Context, table ingest.TableID, lower, upper []byte) (kv.Iterator, error) {
	id, ok, err := r.table(table)
	if err != nil || !ok {
		return kv.Merging(model.Merge), err
	}
	first, last := int64(-1<<63), int64(1<<63-1)
	if t, err := keys.Token(lower); err == nil {
		first = t
	}
	if t, err := keys.Token(upper); err == nil {
		last = t
	}
	var its []kv.Iterator
	n := max(r.view.RangeCount(), 1)
	for rg := manifest.RangeOf(first, n); rg <= manifest.RangeOf(last, n); rg++ {
		for _, t := range r.view.SSTablesInRange(id, rg) {
			if (upper != nil && bytes.Compare(t.FirstKey, upper) >= 0) || (lower != nil && bytes.Compare(t.LastKey, lower) < 0) {
				continue
			}
			rd, err := r.readers.Open(ctx, t.Key)
			if err != nil {
				for _, it := range its {
					it.Close()
				}
				return nil, err
			}
			its = append(its, rd.NewIter(ctx, lower, upper))
		}
	}
	return kv.Merging(model.Merge, its...), nil
}

// table maps a memtable table ID to the table's UUID, rebuilding the map
// when the schema changes.
func (r *TableReader) table(id ingest.TableID) (uuid.UUID, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v := r.view.SchemaVersion(); v != r.version || r.ids == nil {
		r.ids = map[ingest.TableID]uuid.UUID{}
		for _, ks := range r.view.Schema().Keyspaces {
			for _, t := range ks.Tables {
				short := ingest.TableIDOf(t.ID)
				if _, dup := r.ids[short]; dup {
					r.ids[short] = uuid.Nil
					continue
				}
				r.ids[short] = t.ID
			}
		}
		r.version = v
	}
	u, ok := r.ids[id]
	if ok && u == uuid.Nil {
		return uuid.Nil, false, fmt.Errorf("%w: %08x", errAmbiguousTable, uint32(id))
	}
	return u, ok, nil
}
