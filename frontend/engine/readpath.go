package engine

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/frontend/tracing"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/manifest"
)

// memtables gives the newest writes of a table, those still in ingest
// nodes' memtables: a local node's (Local) or the owners' over RPC (Remote).
type memtables interface {
	// iter returns the entries of table with keys in [lower, upper)
	// (upper nil: open) and tokens in [first, last]; partition is the
	// prefix of the one partition read, or nil for a scan.
	iter(ctx context.Context, table uuid.UUID, first, last int64, lower, upper, partition []byte) (kv.Iterator, error)
}

// marked is a memtable iterator whose pages carry their nodes' commit
// marks (rpc.Page.Mark): Remote's.
type marked interface {
	// mark returns the highest mark of the pages fetched so far.
	mark() uint64
	// pin says the SSTables merged with the iterator are those of a View
	// at sstables revision rev: a page fetched later whose mark is past
	// rev fails, as those SSTables may lack what its node dropped.
	pin(rev uint64)
}

// readPath is the read side Local and Remote share: the memtables, merged
// with the SSTables the View lists.
type readPath struct {
	mem  memtables
	view *manifest.View
	// sstables lists the SSTables merged: the View's, or a Snapshot's.
	sstables sstableLister
	readers  *tablestore.ReaderCache
}

// sstableLister lists the SSTables of a table by token range, as
// *manifest.View does.
type sstableLister interface {
	RangeCount() int
	SSTablesInRange(table uuid.UUID, r int) []manifest.SSTable
}

// lister is what newIter lists SSTables from.
func (rp *readPath) lister() sstableLister {
	if rp.sstables != nil {
		return rp.sstables
	}
	return rp.view
}

// read implements Engine.Read.
func (rp *readPath) read(ctx context.Context, s Slice) (*Partition, error) {
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
	it, err := rp.newIter(ctx, s.Table, tok, tok, prefix, end, prefix)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	return readPartition(it, prefix, s.Start, s.End, s.Reverse, s.Limit, s.Now)
}

// scan implements Engine.Scan.
func (rp *readPath) scan(ctx context.Context, s Scan) (*Page, error) {
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
	it, err := rp.newIter(ctx, s.Table, first, s.Last, lower, upper, nil)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	return scan(it, lower, resumed, s.After, s.Limit, s.Now)
}

// newIter merges the memtables and the SSTables of table with keys in
// [lower, upper) and tokens in [first, last]. With a partition prefix, it
// skips SSTables whose filter excludes that partition.
func (rp *readPath) newIter(ctx context.Context, table uuid.UUID, first, last int64, lower, upper, partition []byte) (kv.Iterator, error) {
	// The memtables first: a memtable that leaves them after this point
	// has been committed, and ingest.ViewCommitter made the View show it.
	mem, err := rp.mem.iter(ctx, table, first, last, lower, upper, partition)
	if err != nil {
		return nil, err
	}
	if m, ok := mem.(marked); ok {
		// The View must show what the nodes dropped from the pages read.
		want := m.mark()
		if err := rp.view.WaitFor(ctx, func(v *manifest.View) bool { return v.SSTablesRevision() >= want }); err != nil {
			mem.Close()
			return nil, fmt.Errorf("engine: waiting for the view to reach the memtables' commit mark %d: %w", want, err)
		}
		// Read before choosing, so the SSTables are at least this recent.
		m.pin(rp.view.SSTablesRevision())
	}
	its := []kv.Iterator{mem}
	fail := func(err error) (kv.Iterator, error) {
		for _, it := range its {
			it.Close()
		}
		return nil, err
	}
	tr := tracing.From(ctx)
	list := rp.lister()
	n := max(list.RangeCount(), 1)
	skipped, filtered := 0, 0
	for r := manifest.RangeOf(first, n); r <= manifest.RangeOf(last, n); r++ {
		for _, t := range list.SSTablesInRange(table, r) {
			if t.MaxToken < first || t.MinToken > last ||
				(upper != nil && bytes.Compare(t.FirstKey, upper) >= 0) ||
				(lower != nil && bytes.Compare(t.LastKey, lower) < 0) {
				skipped++
				continue
			}
			rd, err := rp.readers.Open(ctx, t.Key)
			if err != nil {
				return fail(err)
			}
			if partition != nil && !rd.MayContain(partition) {
				filtered++
				continue
			}
			if tr != nil {
				tr.Eventf("engine", "Reading SSTable %s", t.Key)
			}
			its = append(its, rd.NewIter(ctx, lower, upper))
		}
	}
	if tr != nil {
		tr.Eventf("engine", "Merging the memtable slice with %d SSTables (%d outside the key range, %d excluded by their bloom filter)", len(its)-1, skipped, filtered)
	}
	return kv.Merging(model.Merge, its...), nil
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

// blockCache is the tablestore.BlockCache of a cache tier.
type blockCache struct{ tier cache.Tier }

func (b blockCache) Wrap(object string, src sstable.ReaderAt) sstable.ReaderAt {
	return cache.NewReaderAt(b.tier, object, src)
}

// blocksOf returns the block cache of tier, none if tier is nil.
func blocksOf(tier cache.Tier) tablestore.BlockCache {
	if tier == nil {
		return nil
	}
	return blockCache{tier}
}
