package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/storage"
)

// ErrContended means a conditional write of Remote lost the race for its
// partition to other writes casAttempts times in a row and gave up. Nothing
// was written. It also matches storage.ErrOverloaded: the caller may retry
// later, as after a refusal of an overloaded node (CQL's WriteTimeout of
// type CAS is the closest answer a driver knows).
var ErrContended = errors.New("engine: conditional write contended")

// Bounds of Remote.ApplyIf's retries. The jittered, growing pause after a
// conflict spreads out writers that keep colliding on one partition.
const (
	casAttempts   = 16
	casMinBackoff = 500 * time.Microsecond
	casMaxBackoff = 50 * time.Millisecond
)

// ApplyIf implements Engine with optimistic concurrency, as the condition
// is Go code that cannot travel to the node. Each attempt reads the
// partition as Read does (the owner's memtable pages, then the View's
// SSTables once the View reaches the pages' commit mark), takes the
// rpc.PartitionDigest of its merged entries, decides cond on its live view
// at now, and, if cond holds, sends m with that digest to the owner
// (rpc.Client.ApplyIf), which writes m only if its own digest of the
// partition is the same, with no other write of the partition between its
// check and the write. On a conflict the partition changed since the read,
// and the attempt starts over.
//
// Equal digests mean equal stored entries, so cond saw what m lands on.
// The digest does not depend on where the data sits: model.Merge is
// deterministic byte for byte, associative and commutative, so a partition
// merged from memtables and SSTables has the same bytes after a flush or a
// compaction moved it. Compactions that drop data (purged tombstones) do
// change the digest, which costs one retry, never a wrong answer.
//
// cond may thus run several times, once per attempt, and must not have
// effects beyond its answer. After casAttempts conflicts ApplyIf fails with
// ErrContended. Like Apply, it never resends a write whose fate is unknown:
// an error matching storage.ErrTimeout may hide an applied write.
func (r *Remote) ApplyIf(ctx context.Context, m *Mutation, now int64, cond Condition) (bool, error) {
	prefix, err := casPartition(m)
	if err != nil {
		return false, err
	}
	tok, err := keys.Token(prefix)
	if err != nil {
		return false, fmt.Errorf("%w: %w", storage.ErrInvalidMutation, err)
	}
	im := toIngest(m)
	backoff := casMinBackoff
	for attempt := 0; ; attempt++ {
		if attempt == casAttempts {
			return false, fmt.Errorf("%w (%w): %d conflicts on partition %x", ErrContended, storage.ErrOverloaded, attempt, prefix)
		}
		if attempt > 0 {
			if err := sleep(ctx, rand.N(backoff)); err != nil {
				return false, err
			}
			backoff = min(2*backoff, casMaxBackoff)
		}
		p, digest, err := r.readDigest(ctx, m.Table, tok, prefix, now)
		if err != nil {
			return false, err
		}
		ok, err := cond(p)
		if err != nil || !ok {
			return false, err
		}
		c, err := r.owner(tok)
		if err != nil {
			return false, err
		}
		applied, err := c.ApplyIf(ctx, im, digest)
		if err != nil || applied {
			return applied, err
		}
	}
}

// casPartition checks that m's entries belong to one partition and returns
// its prefix.
func casPartition(m *Mutation) ([]byte, error) {
	if m == nil || len(m.Entries) == 0 {
		return nil, fmt.Errorf("%w: conditional mutation without entries", storage.ErrInvalidMutation)
	}
	var prefix []byte
	for i, e := range m.Entries {
		n, err := keys.PartitionPrefixLen(e.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: key %x: %w", storage.ErrInvalidMutation, e.Key, err)
		}
		if i == 0 {
			prefix = e.Key[:n]
		} else if string(e.Key[:n]) != string(prefix) {
			return nil, fmt.Errorf("%w: conditional mutation spans partitions", storage.ErrInvalidMutation)
		}
	}
	return prefix, nil
}

// readDigest reads the partition with the given prefix through the read
// path and returns its live view at now and the digest of its merged
// entries, both from one snapshot.
func (r *Remote) readDigest(ctx context.Context, table uuid.UUID, tok int64, prefix []byte, now int64) (*Partition, rpc.Digest, error) {
	end := keys.AppendPartitionEnd(nil, prefix)
	it, err := r.rp.newIter(ctx, table, tok, tok, prefix, end, prefix)
	if err != nil {
		return nil, rpc.Digest{}, err
	}
	defer it.Close()
	d, err := rpc.PartitionDigest(it, prefix)
	if err != nil {
		return nil, rpc.Digest{}, err
	}
	p, err := readPartition(it, prefix, nil, nil, false, 0, now)
	return p, d, err
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
