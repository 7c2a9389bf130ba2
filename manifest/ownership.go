package manifest

import (
	"context"
	"fmt"
	"math"
	"math/bits"
)

// MaxRanges bounds the number of token ranges of a cluster.
const MaxRanges = 1 << 16

// Ranges is the cluster's fixed split of the token ring, stored once under
// "ranges" in the ownership bucket.
type Ranges struct {
	Count int `json:"count"`
}

// Ownership says which node owns token range Range; no node does if Owner
// is empty (released). Epoch grows with every assignment and release, which
// is what fences a former owner out.
type Ownership struct {
	Range int    `json:"range"`
	Owner string `json:"owner"`
	Epoch uint64 `json:"epoch"`
}

const rangesKey = "ranges"

func rangeKey(r int) string { return fmt.Sprintf("range.%05d", r) }

// RangeOf returns the range of n that holds token tok. The ring is cut into
// n ranges of equal width, in token order.
func RangeOf(tok int64, n int) int {
	hi, _ := bits.Mul64(uint64(tok)^(1<<63), uint64(n))
	return int(hi)
}

// RangeBounds returns the first and last token of range r of n.
func RangeBounds(r, n int) (first, last int64) {
	start := func(r int) uint64 { // ceil(r * 2^64 / n)
		q, rem := bits.Div64(uint64(r), 0, uint64(n))
		if rem != 0 {
			q++
		}
		return q
	}
	lo := start(r)
	hi := uint64(math.MaxUint64)
	if r+1 < n {
		hi = start(r+1) - 1
	}
	return int64(lo ^ 1<<63), int64(hi ^ 1<<63)
}

// InitRanges fixes the number of token ranges. It is idempotent for the same
// count; a different count than the stored one is ErrInvalid.
func (m *Manifest) InitRanges(ctx context.Context, count int) error {
	if count < 1 || count > MaxRanges {
		return fmt.Errorf("%w: range count %d (want 1 to %d)", ErrInvalid, count, MaxRanges)
	}
	return mutateJSON(ctx, m, m.ownership, rangesKey, func(cur *Ranges) (*Ranges, error) {
		if cur == nil {
			return &Ranges{Count: count}, nil
		}
		if cur.Count != count {
			return nil, fmt.Errorf("%w: cluster has %d ranges, not %d", ErrInvalid, cur.Count, count)
		}
		return nil, errUnchanged
	})
}

// RangeCount returns the number of token ranges; ErrNotFound before InitRanges.
// The count never changes once set, so it is read from NATS only once.
func (m *Manifest) RangeCount(ctx context.Context) (int, error) {
	if n := m.rangeCount.Load(); n > 0 {
		return int(n), nil
	}
	r, err := getJSON[Ranges](ctx, m.ownership, rangesKey)
	if err == nil && r == nil {
		err = fmt.Errorf("%w: ranges not initialized", ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	if r.Count < 1 || r.Count > MaxRanges {
		return 0, fmt.Errorf("%w: range count %d", ErrCorrupt, r.Count)
	}
	m.rangeCount.Store(int64(r.Count))
	return r.Count, nil
}

// Assign gives range r to owner under a new epoch and returns the new
// ownership. Any commit fenced with an older epoch fails from then on.
func (m *Manifest) Assign(ctx context.Context, r int, owner string) (Ownership, error) {
	n, err := m.RangeCount(ctx)
	if err != nil {
		return Ownership{}, err
	}
	if r < 0 || r >= n || owner == "" {
		return Ownership{}, fmt.Errorf("%w: assign range %d of %d to %q", ErrInvalid, r, n, owner)
	}
	var out Ownership
	err = mutateJSON(ctx, m, m.ownership, rangeKey(r), func(cur *Ownership) (*Ownership, error) {
		out = Ownership{Range: r, Owner: owner, Epoch: 1}
		if cur != nil {
			out.Epoch = cur.Epoch + 1
		}
		return &out, nil
	})
	return out, err
}

// Release gives up owner's range r: it clears the owner under a new epoch,
// which fences out owner's commits, and leaves the range free for any node
// to Assign. A node leaving the cluster for good releases its ranges once
// its writes are flushed. Releasing a free range changes nothing; a range
// another node owns is ErrFenced, as owner has lost it already.
func (m *Manifest) Release(ctx context.Context, r int, owner string) (Ownership, error) {
	n, err := m.RangeCount(ctx)
	if err != nil {
		return Ownership{}, err
	}
	if r < 0 || r >= n || owner == "" {
		return Ownership{}, fmt.Errorf("%w: release range %d of %d by %q", ErrInvalid, r, n, owner)
	}
	out := Ownership{Range: r}
	err = mutateJSON(ctx, m, m.ownership, rangeKey(r), func(cur *Ownership) (*Ownership, error) {
		switch {
		case cur == nil:
			return nil, errUnchanged
		case cur.Owner == "":
			out = *cur
			return nil, errUnchanged
		case cur.Owner != owner:
			return nil, fmt.Errorf("%w: range %d is owned by %q at epoch %d, not by %q", ErrFenced, r, cur.Owner, cur.Epoch, owner)
		}
		out = Ownership{Range: r, Epoch: cur.Epoch + 1}
		return &out, nil
	})
	if err != nil {
		return Ownership{}, err
	}
	return out, nil
}

// Ownership returns the current owner of range r; ErrNotFound if it was
// never assigned.
func (m *Manifest) Ownership(ctx context.Context, r int) (Ownership, error) {
	o, err := getJSON[Ownership](ctx, m.ownership, rangeKey(r))
	if err == nil && o == nil {
		err = fmt.Errorf("%w: range %d is not assigned", ErrNotFound, r)
	}
	if err != nil {
		return Ownership{}, err
	}
	return *o, nil
}

// checkFence fails with ErrFenced unless epoch is range r's current one.
func (m *Manifest) checkFence(ctx context.Context, r int, epoch uint64) error {
	o, err := m.Ownership(ctx, r)
	if err != nil {
		return err
	}
	if o.Epoch != epoch {
		return fmt.Errorf("%w: range %d is at epoch %d (owner %q), commit has %d", ErrFenced, r, o.Epoch, o.Owner, epoch)
	}
	return nil
}
