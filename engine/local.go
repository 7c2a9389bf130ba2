package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/cache"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/keys"
	"github.com/sedimentdb/sediment/kv"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/model"
	"github.com/sedimentdb/sediment/objectstore"
	"github.com/sedimentdb/sediment/token"
)

// LocalConfig is what Local works with.
type LocalConfig struct {
	// Node takes the writes and serves the memtables. Its flushes must be
	// committed through a ViewCommitter over View.
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
	view    *manifest.View
	readers *readers
}

var _ Engine = (*Local)(nil)

// NewLocal returns a Local engine.
func NewLocal(cfg LocalConfig) (*Local, error) {
	if cfg.Node == nil || cfg.View == nil || cfg.Store == nil {
		return nil, errors.New("engine: Local needs a node, a view and a store")
	}
	if cfg.Readers <= 0 {
		cfg.Readers = 1024
	}
	return &Local{node: cfg.Node, view: cfg.View, readers: newReaders(cfg.Store, cfg.Tier, cfg.Readers)}, nil
}

// Apply implements Engine. The mutations are applied concurrently, so that
// those of different shards share their fsyncs' wait; each is applied or
// fails on its own.
func (l *Local) Apply(ctx context.Context, ms ...*Mutation) error {
	if slices.Contains(ms, nil) {
		return fmt.Errorf("%w: nil mutation", ingest.ErrInvalidMutation)
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
		return false, fmt.Errorf("%w: conditional mutation without entries", ingest.ErrInvalidMutation)
	}
	n, err := keys.PartitionPrefixLen(m.Entries[0].Key)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ingest.ErrInvalidMutation, err)
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

func toIngest(m *Mutation) *ingest.Mutation {
	return &ingest.Mutation{Table: ingest.TableIDOf(m.Table), Entries: m.Entries}
}

// Read implements Engine.
func (l *Local) Read(ctx context.Context, s Slice) (*Partition, error) {
	if len(s.Key) == 0 {
		return nil, fmt.Errorf("%w: empty partition key", ErrInvalidQuery)
	}
	tok := token.Murmur3(s.Key)
	prefix := keys.AppendPartitionPrefix(nil, tok, s.Key)
	for _, b := range [][]byte{s.Start, s.End} {
		if b != nil && !isRowBound(prefix, b) {
			return nil, fmt.Errorf("%w: bound %x is not in partition %x", ErrInvalidQuery, b, s.Key)
		}
	}
	if s.Limit < 0 {
		return nil, fmt.Errorf("%w: negative limit", ErrInvalidQuery)
	}
	end := keys.AppendPartitionEnd(nil, prefix)
	it, err := l.newIter(ctx, s.Table, tok, tok, prefix, end, prefix)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	return readPartition(it, prefix, s.Start, s.End, s.Reverse, s.Limit, s.Now)
}

// newIter merges the memtables and the SSTables of table with keys in
// [lower, upper) and tokens in [first, last]. With a partition prefix, it
// skips SSTables whose filter excludes that partition.
func (l *Local) newIter(ctx context.Context, table uuid.UUID, first, last int64, lower, upper, partition []byte) (kv.Iterator, error) {
	// The memtables first: a memtable that leaves them after this point
	// has been committed, and ViewCommitter made the View show it.
	its := []kv.Iterator{l.node.NewIter(ingest.TableIDOf(table), lower, upper)}
	fail := func(err error) (kv.Iterator, error) {
		for _, it := range its {
			it.Close()
		}
		return nil, err
	}
	n := max(l.view.RangeCount(), 1)
	for r := manifest.RangeOf(first, n); r <= manifest.RangeOf(last, n); r++ {
		for _, t := range l.view.SSTablesInRange(table, r) {
			if t.MaxToken < first || t.MinToken > last ||
				(upper != nil && bytes.Compare(t.FirstKey, upper) >= 0) ||
				(lower != nil && bytes.Compare(t.LastKey, lower) < 0) {
				continue
			}
			rd, err := l.readers.open(ctx, t.Key)
			if err != nil {
				return fail(err)
			}
			if partition != nil && !rd.MayContain(partition) {
				continue
			}
			its = append(its, rd.NewIter(ctx, lower, upper))
		}
	}
	return kv.Merging(model.Merge, its...), nil
}

// Scan implements Engine.
func (l *Local) Scan(ctx context.Context, s Scan) (*Page, error) {
	if s.First > s.Last {
		return nil, fmt.Errorf("%w: token range [%d, %d] is empty", ErrInvalidQuery, s.First, s.Last)
	}
	if s.Limit < 0 {
		return nil, fmt.Errorf("%w: negative limit", ErrInvalidQuery)
	}
	lower := keys.AppendToken(nil, s.First)
	var upper []byte
	if s.Last < math.MaxInt64 {
		upper = keys.AppendToken(nil, s.Last+1)
	}
	first := s.First
	resumed, err := resumePrefix(s.After, s.First, s.Last)
	if err != nil {
		return nil, err
	}
	if resumed != nil {
		lower = resumed
		first, _ = keys.Token(resumed)
	}
	it, err := l.newIter(ctx, s.Table, first, s.Last, lower, upper, nil)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	return scan(it, lower, resumed, s.After, s.Limit, s.Now)
}

// isRowBound reports whether b may bound the rows of the partition with the
// given prefix: it starts with the prefix and the row kind.
func isRowBound(prefix, b []byte) bool {
	return len(b) > len(prefix) && bytes.HasPrefix(b, prefix) && keys.Kind(b[len(prefix)]) == keys.KindRow
}

// resumePrefix checks a scan's resume position, which comes from a client,
// and returns the prefix of its partition (nil for none).
func resumePrefix(after []byte, first, last int64) ([]byte, error) {
	if after == nil {
		return nil, nil
	}
	n, err := keys.PartitionPrefixLen(after)
	if err != nil {
		return nil, fmt.Errorf("%w: resume position: %w", ErrInvalidQuery, err)
	}
	tok, err := keys.Token(after)
	if err != nil || tok < first || tok > last || len(after) == n {
		return nil, fmt.Errorf("%w: resume position %x is not in the scanned range", ErrInvalidQuery, after)
	}
	return after[:n], nil
}
