package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// LocalConfig is what Local works with.
type LocalConfig struct {
	// Node takes the writes and serves the memtables. Its flushes must be
	// committed through an ingest.ViewCommitter over View.
	Node *ingest.Node
	// View lists the committed SSTables.
	View *manifest.View
	// Store is the bucket holding the SSTables.
	Store objectstore.Store
	// Tier caches SSTable blocks (cache.New or cache.Stack); nil reads
	// every block from Store.
	Tier cache.Tier
	// Readers is how many opened SSTable readers are kept; 1024 if 0.
	Readers int
}

// Local is the Engine of one process over a local ingest node.
type Local struct {
	node    *ingest.Node
	readers *tablestore.ReaderCache
	rp      readPath
}

var _ Engine = (*Local)(nil)

// NewLocal returns a Local engine.
func NewLocal(cfg LocalConfig) (*Local, error) {
	if cfg.Node == nil || cfg.View == nil || cfg.Store == nil {
		return nil, errors.New("engine: Local needs a node, a view and a store")
	}
	rs := tablestore.NewReaderCache(cfg.Store, blocksOf(cfg.Tier), cfg.Readers)
	return &Local{node: cfg.Node, readers: rs, rp: readPath{mem: nodeMemtables{cfg.Node}, view: cfg.View, readers: rs}}, nil
}

// Apply implements Engine. The mutations are applied concurrently, so that
// those of different shards share their fsyncs' wait; each is applied or
// fails on its own.
func (l *Local) Apply(ctx context.Context, ms ...*Mutation) error {
	if slices.Contains(ms, nil) {
		return fmt.Errorf("%w: nil mutation", storage.ErrInvalidMutation)
	}
	if len(ms) == 1 {
		return l.node.Apply(ctx, toIngest(ms[0]))
	}
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() { errs[i] = l.node.Apply(ctx, toIngest(m)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ApplyIf implements Engine.
func (l *Local) ApplyIf(ctx context.Context, m *Mutation, now int64, cond Condition) (bool, error) {
	if m == nil || len(m.Entries) == 0 {
		return false, fmt.Errorf("%w: conditional mutation without entries", storage.ErrInvalidMutation)
	}
	n, err := keys.PartitionPrefixLen(m.Entries[0].Key)
	if err != nil {
		return false, fmt.Errorf("%w: %w", storage.ErrInvalidMutation, err)
	}
	prefix := m.Entries[0].Key[:n]
	return l.node.ApplyIf(ctx, toIngest(m), func(it kv.Iterator) (bool, error) {
		p, err := readPartition(it, prefix, nil, nil, false, 0, now)
		if err != nil {
			return false, err
		}
		return cond(p)
	})
}

func toIngest(m *Mutation) *storage.Mutation {
	return &storage.Mutation{Table: storage.TableIDOf(m.Table), Entries: m.Entries}
}

// Read implements Engine.
func (l *Local) Read(ctx context.Context, s Slice) (*Partition, error) { return l.rp.read(ctx, s) }

// Scan implements Engine.
func (l *Local) Scan(ctx context.Context, s Scan) (*Page, error) { return l.rp.scan(ctx, s) }

// nodeMemtables reads the memtables of a node in this process.
type nodeMemtables struct{ node *ingest.Node }

func (m nodeMemtables) iter(_ context.Context, table uuid.UUID, _, _ int64, lower, upper, _ []byte) (kv.Iterator, error) {
	return m.node.NewIter(storage.TableIDOf(table), lower, upper), nil
}
