package manifest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Member is a running node, stored under "m.<escaped id>" in the members
// bucket and rewritten by the node at every heartbeat.
type Member struct {
	ID    string   `json:"id"`
	Roles []string `json:"roles"`
	// Addr is where other nodes reach the member (host:port).
	Addr   string `json:"addr"`
	Shards int    `json:"shards"`
	// Heartbeat is when the member last announced itself.
	Heartbeat time.Time `json:"heartbeat"`
	// Unflushed maps a table's ShortID (8 hex digits, as SSTable object
	// names show it) to the smallest write
	// timestamp an ingest node holds unflushed for it, as of Heartbeat: the
	// purge bound of compaction (ingest.OldestUnflushed). Empty, not nil,
	// when the node holds nothing; nil from nodes that do not report it.
	Unflushed map[string]int64 `json:"unflushed"`
}

// Live reports whether m heartbeat within maxAge before now.
func (mem Member) Live(now time.Time, maxAge time.Duration) bool {
	return now.Sub(mem.Heartbeat) <= maxAge
}

func memberKey(id string) string { return "m." + escapeName(id) }

// Heartbeat announces mem, stamped with the current time.
func (m *Manifest) Heartbeat(ctx context.Context, mem Member) error {
	if mem.ID == "" || mem.Addr == "" {
		return fmt.Errorf("%w: member needs an ID and an address", ErrInvalid)
	}
	mem.Roles = slices.Clone(mem.Roles)
	mem.Heartbeat = m.opts.Now().UTC()
	return mutateJSON(ctx, m, m.members, memberKey(mem.ID), func(*Member) (*Member, error) {
		return &mem, nil
	})
}

// Leave removes a member, as a node does when it stops cleanly.
func (m *Manifest) Leave(ctx context.Context, id string) error {
	return mutateJSON(ctx, m, m.members, memberKey(id), func(*Member) (*Member, error) { return nil, nil })
}

// Members returns every member that has not left, live or not, by ID.
func (m *Manifest) Members(ctx context.Context) ([]Member, error) {
	docs, err := list(ctx, m.members)
	if err != nil {
		return nil, err
	}
	out := make([]Member, 0, len(docs))
	for k, raw := range docs {
		var mem Member
		if err := decodeDoc(raw, &mem); err != nil {
			return nil, fmt.Errorf("%s/%s: %w", m.members.name, k, err)
		}
		out = append(out, mem)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Lease is a named, expiring claim, such as the compaction planner's.
type Lease struct {
	Name   string    `json:"name"`
	Holder string    `json:"holder"`
	Expiry time.Time `json:"expiry"`
}

func leaseKey(name string) string { return "l." + escapeName(name) }

// AcquireLease takes or renews lease name for holder until now+ttl. It fails
// with ErrLeaseHeld while another holder's lease has not expired.
func (m *Manifest) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error) {
	if name == "" || holder == "" || ttl <= 0 {
		return Lease{}, fmt.Errorf("%w: lease needs a name, a holder and a positive TTL", ErrInvalid)
	}
	var out Lease
	err := mutateJSON(ctx, m, m.leases, leaseKey(name), func(cur *Lease) (*Lease, error) {
		now := m.opts.Now()
		if cur != nil && cur.Holder != holder && now.Before(cur.Expiry) {
			return nil, fmt.Errorf("%w: %q by %q until %s", ErrLeaseHeld, name, cur.Holder, cur.Expiry.Format(time.RFC3339Nano))
		}
		out = Lease{Name: name, Holder: holder, Expiry: now.Add(ttl).UTC()}
		return &out, nil
	})
	return out, err
}

// ReleaseLease gives up holder's lease; releasing a lease one does not hold
// is ErrLeaseHeld, releasing an absent one is a no-op.
func (m *Manifest) ReleaseLease(ctx context.Context, name, holder string) error {
	return mutateJSON(ctx, m, m.leases, leaseKey(name), func(cur *Lease) (*Lease, error) {
		if cur != nil && cur.Holder != holder {
			return nil, fmt.Errorf("%w: %q by %q", ErrLeaseHeld, name, cur.Holder)
		}
		return nil, nil
	})
}

// Lease returns lease name, expired or not; ErrNotFound if absent.
func (m *Manifest) Lease(ctx context.Context, name string) (Lease, error) {
	l, err := getJSON[Lease](ctx, m.leases, leaseKey(name))
	if err == nil && l == nil {
		err = fmt.Errorf("%w: lease %q", ErrNotFound, name)
	}
	if err != nil {
		return Lease{}, err
	}
	return *l, nil
}
