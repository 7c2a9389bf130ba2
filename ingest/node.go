package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
)

// Node is the shards of one ingest node. Shard i of n owns the i-th of n
// equal slices of the token ring, so a partition always goes to the same
// shard, and token-range reads meet few shards.
type Node struct {
	shards []*Shard
	marker CommitMarker // nil if the committer keeps no mark
	ranges int          // NodeDeps.Ranges

	// adopting are the ranges whose former owner's log is being replayed
	// into the node: reads of them would miss its writes.
	adoptMu  sync.Mutex
	adopting map[int]bool
}

// shardsFile records the shard count in the commitlog directory: a commitlog
// holds the partitions of its shard's slice, so the slices must not change
// while any log holds records.
const shardsFile = "SHARDS"

// OpenNode opens cfg.Shards shards, their commitlogs in subdirectories of
// cfg.Commitlog.Dir, replaying them in parallel.
func OpenNode(ctx context.Context, cfg Config, deps NodeDeps) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.FS == nil {
		deps.FS = vfs.Default
	}
	if err := checkShardCount(deps.FS, cfg.Commitlog.Dir, cfg.Shards); err != nil {
		return nil, err
	}
	n := &Node{shards: make([]*Shard, cfg.Shards), ranges: max(deps.Ranges, 1)}
	n.marker, _ = deps.Committer.(CommitMarker)
	errs := make([]error, cfg.Shards)
	var wg sync.WaitGroup
	for i := range n.shards {
		wg.Go(func() { n.shards[i], errs[i] = Open(ctx, cfg, uint32(i), deps) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// checkShardCount refuses a shard count other than the one the commitlogs
// were written with, and records it for a new directory.
func checkShardCount(fsys vfs.FS, dir string, shards int) error {
	name := filepath.Join(dir, shardsFile)
	f, err := fsys.Open(name)
	if err == nil {
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("ingest: read %s: %w", name, err)
		}
		had, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("ingest: %s holds %q", name, b)
		}
		if had != shards {
			return fmt.Errorf("ingest: the commitlogs in %s belong to %d shards, not %d: flush them with the old count first", dir, had, shards)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ingest: %w", err)
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	// The directory itself must outlive a crash along with the file.
	if err := fsys.SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	if err := vfs.WriteFileAtomic(fsys, dir, shardsFile, []byte(strconv.Itoa(shards)+"\n")); err != nil {
		return fmt.Errorf("ingest: write %s: %w", name, err)
	}
	return nil
}

// ShardOf returns the index of the shard that owns tok.
func (n *Node) ShardOf(tok int64) int { return token.Shard(tok, len(n.shards)) }

// Shard returns shard i.
func (n *Node) Shard(i int) *Shard { return n.shards[i] }

// Shards returns the number of shards.
func (n *Node) Shards() int { return len(n.shards) }

func (n *Node) shardOfKey(key []byte) (int, error) {
	tok, err := keys.Token(key)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", storage.ErrInvalidMutation, err)
	}
	return n.ShardOf(tok), nil
}

// Apply writes m. Entries of partitions on different shards are applied
// by each shard separately: each partition's entries are atomic, as in
// Cassandra, not the whole mutation. An invalid mutation is refused whole.
func (n *Node) Apply(ctx context.Context, m *storage.Mutation) error {
	// Before the split, or a shard could apply its part while another
	// refuses an invalid entry.
	if err := validate(m); err != nil {
		return err
	}
	first, err := n.shardOfKey(firstKey(m))
	if err != nil {
		return err
	}
	split := false
	for _, e := range m.Entries {
		i, err := n.shardOfKey(e.Key)
		if err != nil {
			return err
		}
		split = split || i != first
	}
	if !split {
		return n.shards[first].Apply(ctx, m)
	}
	parts := map[int]*storage.Mutation{}
	for _, e := range m.Entries {
		i, _ := n.shardOfKey(e.Key)
		if parts[i] == nil {
			parts[i] = &storage.Mutation{Table: m.Table}
		}
		parts[i].Entries = append(parts[i].Entries, e)
	}
	errs := make(chan error, len(parts))
	for i, p := range parts {
		go func() { errs <- n.shards[i].Apply(ctx, p) }()
	}
	var all []error
	for range parts {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

func firstKey(m *storage.Mutation) []byte {
	if len(m.Entries) == 0 {
		return nil
	}
	return m.Entries[0].Key
}

// ApplyIf applies m, whose entries belong to one partition, on its shard if
// cond holds; see Shard.ApplyIf.
func (n *Node) ApplyIf(ctx context.Context, m *storage.Mutation, cond func(current kv.Iterator) (bool, error)) (bool, error) {
	i, err := n.shardOfKey(firstKey(m))
	if err != nil {
		return false, err
	}
	return n.shards[i].ApplyIf(ctx, m, cond)
}

// Truncate removes every entry of table written before it from the
// memtables of every shard, durably; see Shard.Truncate. The shards truncate
// at once, so writes concurrent with Truncate may or may not survive it.
func (n *Node) Truncate(ctx context.Context, table storage.TableID) error {
	errs := make([]error, len(n.shards))
	var wg sync.WaitGroup
	for i, s := range n.shards {
		wg.Go(func() { errs[i] = s.Truncate(ctx, table) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// NewIter returns an iterator over the memtables of every shard whose
// slice of the ring meets [lower, upper); see Shard.NewIter.
func (n *Node) NewIter(table storage.TableID, lower, upper []byte) kv.Iterator {
	lo, hi := 0, len(n.shards)-1
	if tok, err := keys.Token(lower); err == nil {
		lo = n.ShardOf(tok)
	}
	if tok, err := keys.Token(upper); err == nil {
		hi = n.ShardOf(tok)
	}
	its := make([]kv.Iterator, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		its = append(its, n.shards[i].NewIter(table, lower, upper))
	}
	return kv.Merging(model.Merge, its...)
}

// CommitMark returns the mark of NodeDeps.Committer, if it is a CommitMarker,
// or 0. Read after a memtable read, it covers every memtable the read did
// not see because a flush had dropped it.
func (n *Node) CommitMark() uint64 {
	if n.marker == nil {
		return 0
	}
	return n.marker.CommitMark()
}

// Flush flushes every shard at once; see Shard.Flush. A node stopping for
// good or for a restart flushes first, so that nothing is left to replay.
func (n *Node) Flush(ctx context.Context) error {
	errs := make([]error, len(n.shards))
	var wg sync.WaitGroup
	for i, s := range n.shards {
		wg.Go(func() {
			if err := s.Flush(ctx); err != nil {
				errs[i] = fmt.Errorf("ingest: flush shard %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close closes every shard.
func (n *Node) Close() error {
	var errs []error
	for _, s := range n.shards {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// errAdopting refuses a read of a range being taken over, retriably.
var errAdopting = fmt.Errorf("ingest: range being taken over from its former owner (%w)", storage.ErrUnavailable)

// adopt marks ranges as being taken over (on) or done (off).
func (n *Node) adopt(ranges []int, on bool) {
	n.adoptMu.Lock()
	defer n.adoptMu.Unlock()
	if n.adopting == nil {
		n.adopting = map[int]bool{}
	}
	for _, r := range ranges {
		if on {
			n.adopting[r] = true
		} else {
			delete(n.adopting, r)
		}
	}
}

// readable fails with errAdopting if [lower, upper) (nil bounds are open)
// meets a range being taken over.
func (n *Node) readable(lower, upper []byte) error {
	n.adoptMu.Lock()
	defer n.adoptMu.Unlock()
	if len(n.adopting) == 0 {
		return nil
	}
	lo, hi := 0, n.ranges-1
	if tok, err := keys.Token(lower); err == nil {
		lo = manifest.RangeOf(tok, n.ranges)
	}
	if tok, err := keys.Token(upper); err == nil {
		hi = manifest.RangeOf(tok, n.ranges)
	}
	for r := lo; r <= hi; r++ {
		if n.adopting[r] {
			return errAdopting
		}
	}
	return nil
}
