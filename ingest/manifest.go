package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// errAmbiguousTable means two tables of the schema share a storage.TableID.
var errAmbiguousTable = errors.New("ingest: two tables share a table ID")

// ManifestCommitter is the FlushCommitter and TableReader of a node in a
// cluster: it records each flush in the manifest as one commit per SSTable,
// that is per table and token range, fenced by the node's ownership epoch of
// the range.
//
// A flush is thus several manifest commits, and a crash may land between
// them. Each SSTable's Covers names the flush (node, shard, Through) and its
// number of SSTables, and Flushed returns the Through of the newest flush
// whose SSTables are all live: a partly committed flush never advances it,
// so restart replays every record of that flush. The replayed memtable
// starts where the partial flush's did; if it also ends where it did, its
// SSTables have the same object keys and the flush reuses those already
// committed (Recorded); otherwise they are committed again under new keys,
// and reads merge the copies (merging is idempotent), so every write still
// reads exactly once.
//
// Tables are named by TableIDOf. A flush's entries of a table the schema no
// longer holds (dropped) are not committed.
type ManifestCommitter struct {
	m     *manifest.Manifest
	store objectstore.Store
	node  string

	mu     sync.Mutex
	epochs map[int]uint64

	// afterPart, if set, runs after each SSTable commit (tests).
	afterPart func() error
}

var (
	_ FlushCommitter = (*ManifestCommitter)(nil)
	_ TableReader    = (*ManifestCommitter)(nil)
)

// NewManifestCommitter returns a committer for node, reading SSTables from
// store. It owns no range until Own or Claim.
func NewManifestCommitter(m *manifest.Manifest, store objectstore.Store, node string) *ManifestCommitter {
	return &ManifestCommitter{m: m, store: store, node: node, epochs: map[int]uint64{}}
}

// Own records that the node owns o.Range under o.Epoch: flushes commit to
// the range fenced by that epoch.
func (c *ManifestCommitter) Own(o manifest.Ownership) error {
	if o.Owner != c.node {
		return fmt.Errorf("ingest: range %d is owned by %q, not %q", o.Range, o.Owner, c.node)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epochs[o.Range] = o.Epoch
	return nil
}

// Claim assigns range r to the node under a new epoch, fencing out its
// former owner, and owns it.
func (c *ManifestCommitter) Claim(ctx context.Context, r int) (manifest.Ownership, error) {
	o, err := c.m.Assign(ctx, r, c.node)
	if err != nil {
		return manifest.Ownership{}, err
	}
	return o, c.Own(o)
}

// ClaimAll claims every range, as a node alone in its cluster does.
func (c *ManifestCommitter) ClaimAll(ctx context.Context) error {
	n, err := c.m.RangeCount(ctx)
	if err != nil {
		return err
	}
	for r := range n {
		if _, err := c.Claim(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// Owned returns the ranges the node owns, in order.
func (c *ManifestCommitter) Owned() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.epochs))
}

// Release gives up range r in the manifest (manifest.Release), leaving it
// free for another node to claim; the node no longer owns it, so a later
// flush into it is fenced. Only a node leaving for good releases its
// ranges, and only after flushing: a record left in its commitlog for r
// could never be committed.
func (c *ManifestCommitter) Release(ctx context.Context, r int) error {
	if _, err := c.m.Release(ctx, r, c.node); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.epochs, r)
	return nil
}

// tableOf returns the table of s that id names, nil if none does. Two
// tables that share id are an error: guessing could mix their data.
func tableOf(s *manifest.Schema, id storage.TableID) (*manifest.Table, error) {
	switch ts := s.TablesByShortID(uint32(id)); len(ts) {
	case 0:
		return nil, nil
	case 1:
		return ts[0], nil
	default:
		return nil, fmt.Errorf("%w: %08x", errAmbiguousTable, uint32(id))
	}
}

// table returns the table id names in the current schema, or nil.
func (c *ManifestCommitter) table(ctx context.Context, id storage.TableID) (*manifest.Table, error) {
	s, err := c.m.Schema(ctx)
	if err != nil {
		return nil, err
	}
	return tableOf(s, id)
}

// Commit implements FlushCommitter: one fenced manifest commit per SSTable.
// A range whose epoch the node does not hold, or whose epoch has moved on,
// fails with an error matching both ErrFenced and, in the second case,
// manifest.ErrFenced.
func (c *ManifestCommitter) Commit(ctx context.Context, f Flush) error {
	s, err := c.m.Schema(ctx)
	if err != nil {
		return err
	}
	parts := f.Tables[:0:0]
	var tables []*manifest.Table // of parts
	for _, t := range f.Tables {
		tbl, err := tableOf(s, t.Table)
		if err != nil {
			return err
		}
		if tbl != nil {
			parts, tables = append(parts, t), append(tables, tbl)
		}
	}
	cover := manifest.LogPosition{
		Node: c.node, Shard: int(f.Shard), Segment: f.Through.Segment, Offset: f.Through.Offset, Parts: len(parts),
	}
	for i, t := range parts {
		c.mu.Lock()
		epoch, ok := c.epochs[t.Range]
		c.mu.Unlock()
		if !ok {
			return fmt.Errorf("%w: node %q holds no epoch of range %d", storage.ErrFenced, c.node, t.Range)
		}
		id := tables[i].ID
		sst := toManifest(t, cover)
		_, err := c.m.CommitSSTables(ctx, manifest.Commit{Table: id, Range: t.Range, Add: []manifest.SSTable{sst}, Epoch: epoch})
		if errors.Is(err, manifest.ErrExists) {
			// The same object committed by an earlier attempt at this
			// flush, perhaps with another part count: the same entries.
			if _, live, lerr := c.live(ctx, id, t.Range, t.Key); lerr != nil {
				return lerr
			} else if live {
				err = nil
			}
		}
		if errors.Is(err, manifest.ErrFenced) {
			return fmt.Errorf("%w: %w", storage.ErrFenced, err)
		}
		if err != nil {
			return fmt.Errorf("ingest: commit %s: %w", t.Key, err)
		}
		if c.afterPart != nil {
			if err := c.afterPart(); err != nil {
				return err
			}
		}
	}
	return nil
}

// live returns the live SSTable with object key key of table id in range r.
func (c *ManifestCommitter) live(ctx context.Context, id uuid.UUID, r int, key string) (manifest.SSTable, bool, error) {
	ssts, err := c.m.SSTablesInRange(ctx, id, r)
	if err != nil {
		return manifest.SSTable{}, false, err
	}
	for _, s := range ssts {
		if s.Key == key {
			return s, true, nil
		}
	}
	return manifest.SSTable{}, false, nil
}

// Recorded implements FlushCommitter.
func (c *ManifestCommitter) Recorded(ctx context.Context, t SSTable) (SSTable, bool, error) {
	tbl, err := c.table(ctx, t.Table)
	if err != nil || tbl == nil {
		return SSTable{}, false, err
	}
	s, ok, err := c.live(ctx, tbl.ID, t.Range, t.Key)
	if err != nil || !ok {
		return SSTable{}, false, err
	}
	return fromManifest(t.Table, t.Range, s), true, nil
}

// Flushed implements FlushCommitter: the Through of the newest flush of the
// shard whose SSTables are all live. It reads every SSTable of the schema's
// tables. SSTables of dropped tables, or dropped from the manifest by a
// truncation (manifest.DropSSTables), no longer count, which can only make
// it go back: safe, as replayed records merge idempotently, and a
// truncation's log record is released only with every record before it,
// so replay never meets a truncated entry without its truncation.
func (c *ManifestCommitter) Flushed(ctx context.Context, shard uint32) (commitlog.Position, error) {
	return c.FlushedOf(ctx, c.node, shard)
}

// FlushedOf is Flushed for the shard of another node: where a node taking
// over its ranges starts replaying its log.
func (c *ManifestCommitter) FlushedOf(ctx context.Context, node string, shard uint32) (commitlog.Position, error) {
	done, _, err := c.flushes(ctx, node, shard)
	return done, err
}

// Partial implements FlushCommitter.
func (c *ManifestCommitter) Partial(ctx context.Context, shard uint32) ([]commitlog.Position, error) {
	_, partial, err := c.flushes(ctx, c.node, shard)
	return partial, err
}

// flushes returns the Through of the shard's newest wholly recorded flush,
// and those of the later flushes recorded in part, in log order
// (manifest.Flushes.State: a flush whose parts compaction found all dead
// counts as complete through the ranges' watermarks).
func (c *ManifestCommitter) flushes(ctx context.Context, node string, shard uint32) (done commitlog.Position, partial []commitlog.Position, err error) {
	s, err := c.m.Schema(ctx)
	if err != nil {
		return done, nil, err
	}
	var f manifest.Flushes
	for _, t := range s.Tables() {
		if _, err := tableOf(s, storage.TableIDOf(t.ID)); err != nil {
			continue // Commit refuses its flushes, so none counts
		}
		if err := c.m.TableFlushes(ctx, t.ID, &f); err != nil {
			return done, nil, err
		}
	}
	d, ps := f.State(node, int(shard))
	for _, p := range ps {
		partial = append(partial, commitlog.Position{Segment: p.Segment, Offset: p.Offset})
	}
	return commitlog.Position{Segment: d.Segment, Offset: d.Offset}, partial, nil
}

// NewIter implements TableReader: it merges the live SSTables of table
// whose key range meets [lower, upper), reading only one range's when the
// bounds lie in one.
func (c *ManifestCommitter) NewIter(ctx context.Context, table storage.TableID, lower, upper []byte) (kv.Iterator, error) {
	tbl, err := c.table(ctx, table)
	if err != nil {
		return nil, err
	}
	if tbl == nil {
		return kv.Merging(model.Merge), nil
	}
	id := tbl.ID
	var ssts []manifest.SSTable
	n, err := c.m.RangeCount(ctx)
	if err != nil {
		return nil, err
	}
	lo, lerr := keys.Token(lower)
	hi, herr := keys.Token(upper)
	if lerr == nil && herr == nil && manifest.RangeOf(lo, n) == manifest.RangeOf(hi, n) {
		ssts, err = c.m.SSTablesInRange(ctx, id, manifest.RangeOf(lo, n))
	} else {
		ssts, err = c.m.SSTables(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	return mergeSSTables(ctx, ssts, lower, upper, func(ctx context.Context, key string) (*sstable.Reader, error) {
		return tablestore.Open(ctx, c.store, key, nil)
	})
}

// mergeSSTables merges the entries in [lower, upper) of those of ssts whose
// key range meets it, opened by open.
func mergeSSTables(ctx context.Context, ssts []manifest.SSTable, lower, upper []byte, open func(context.Context, string) (*sstable.Reader, error)) (kv.Iterator, error) {
	var its []kv.Iterator
	for _, s := range ssts {
		if (upper != nil && bytes.Compare(s.FirstKey, upper) >= 0) || (lower != nil && bytes.Compare(s.LastKey, lower) < 0) {
			continue
		}
		r, err := open(ctx, s.Key)
		if err != nil {
			for _, it := range its {
				it.Close()
			}
			return nil, err
		}
		its = append(its, r.NewIter(ctx, lower, upper))
	}
	return kv.Merging(model.Merge, its...), nil
}

func toManifest(t SSTable, cover manifest.LogPosition) manifest.SSTable {
	return manifest.SSTable{
		Key: t.Key, Size: t.Size, Level: 0,
		MinToken: t.MinToken, MaxToken: t.MaxToken,
		FirstKey: t.FirstKey, LastKey: t.LastKey,
		MinTimestamp: t.MinTimestamp, MaxTimestamp: t.MaxTimestamp,
		Covers:  []manifest.LogPosition{cover},
		Created: t.Created,
	}
}

func fromManifest(table storage.TableID, r int, s manifest.SSTable) SSTable {
	return SSTable{
		Table: table, Range: r, Key: s.Key, Size: s.Size,
		FirstKey: s.FirstKey, LastKey: s.LastKey,
		MinToken: s.MinToken, MaxToken: s.MaxToken,
		MinTimestamp: s.MinTimestamp, MaxTimestamp: s.MaxTimestamp,
		Created: s.Created,
	}
}
