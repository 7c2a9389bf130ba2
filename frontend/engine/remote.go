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

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// ErrNoOwner means the View names no reachable owner for a token range:
// the range is free, or its owner is not in the member list. Ownership
// moves, so it is a storage.ErrUnavailable, which storage.Retriable accepts.
var ErrNoOwner = fmt.Errorf("engine: token range has no owner (%w)", storage.ErrUnavailable)

// RemoteConfig is what Remote works with.
type RemoteConfig struct {
	// View lists the committed SSTables, the owner of every token range
	// and the members' addresses.
	View *manifest.View
	// Store is the bucket holding the SSTables.
	Store objectstore.Store
	// Tier caches SSTable blocks; nil reads every block from Store.
	Tier cache.Tier
	// Readers is how many opened SSTable readers are kept; 1024 if 0.
	Readers int
	// RPC tunes the clients of the ingest nodes.
	RPC rpc.Options
}

// Remote is the Engine of a process without an ingest node, a frontend:
// writes go over RPC to the node that owns their token range, as the View
// says, and reads merge the owners' memtable pages with the SSTables the View
// lists, as Local does.
//
// A read sees every acknowledged write even when the View trails the owning
// node's: a node drops a flushed memtable once its own View shows the flush
// (ingest.ViewCommitter), and every memtable page it answers carries the sstables
// revision its View had reached then (rpc.Page.Mark), so a read first waits,
// bounded by its context, for this View to reach the highest mark of the
// pages it has before choosing SSTables. A scan fetches its later pages as
// it moves on; one whose mark passed the SSTables' revision fails with
// storage.ErrFlushRaced rather than miss the entries its node dropped
// meanwhile, and Read and Scan then start again, choosing SSTables anew (a
// few times; then the error, retriable, reaches the caller).
//
// A conditional write (ApplyIf) reads the partition as Read does and sends
// its write with the digest of what it read; the owner applies it only if
// the partition's digest is still the same, and on a conflict ApplyIf reads
// again and retries (optimistic concurrency; see ApplyIf).
//
// Remote never resends a write whose fate is unknown: a write that failed
// with an error storage.Retriable accepts may be sent again by the caller (see
// storage.ErrTimeout).
type Remote struct {
	view *manifest.View
	opts rpc.Options
	rp   readPath

	mu      sync.Mutex
	clients map[string]*rpc.Client // by address, one per peer
	closed  bool
}

var _ Engine = (*Remote)(nil)

// NewRemote returns a Remote engine. Close it to close its connections.
func NewRemote(cfg RemoteConfig) (*Remote, error) {
	if cfg.View == nil || cfg.Store == nil {
		return nil, errors.New("engine: Remote needs a view and a store")
	}
	r := &Remote{view: cfg.View, opts: cfg.RPC, clients: map[string]*rpc.Client{}}
	r.rp = readPath{mem: remoteMemtables{r}, view: cfg.View, readers: tablestore.NewReaderCache(cfg.Store, blocksOf(cfg.Tier), cfg.Readers)}
	return r, nil
}

// Close closes the clients of every peer.
func (r *Remote) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	var errs []error
	for _, c := range r.clients {
		errs = append(errs, c.Close())
	}
	clear(r.clients)
	return errors.Join(errs...)
}

// Apply implements Engine. Each mutation's entries are split by owning
// node, and every part is sent at once; each part is applied or fails on
// its own, and a partition's entries always travel together. Nothing is sent
// if an entry's owner cannot be found.
func (r *Remote) Apply(ctx context.Context, ms ...*Mutation) error {
	if slices.Contains(ms, nil) {
		return fmt.Errorf("%w: nil mutation", storage.ErrInvalidMutation)
	}
	type part struct {
		c *rpc.Client
		m *storage.Mutation
	}
	var parts []part
	for _, m := range ms {
		if len(m.Entries) == 0 {
			return fmt.Errorf("%w: no entries", storage.ErrInvalidMutation)
		}
		byClient := map[*rpc.Client]*storage.Mutation{}
		for _, e := range m.Entries {
			tok, err := keys.Token(e.Key)
			if err != nil {
				return fmt.Errorf("%w: key %x: %w", storage.ErrInvalidMutation, e.Key, err)
			}
			c, err := r.owner(tok)
			if err != nil {
				return err
			}
			im, ok := byClient[c]
			if !ok {
				im = &storage.Mutation{Table: storage.TableIDOf(m.Table)}
				byClient[c] = im
				parts = append(parts, part{c, im})
			}
			im.Entries = append(im.Entries, e)
		}
	}
	if len(parts) == 1 {
		return parts[0].c.Apply(ctx, parts[0].m)
	}
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() { errs[i] = p.c.Apply(ctx, p.m) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Read implements Engine.
func (r *Remote) Read(ctx context.Context, s Slice) (*Partition, error) {
	return retryRaced(ctx, func() (*Partition, error) { return r.rp.read(ctx, s) })
}

// Scan implements Engine.
func (r *Remote) Scan(ctx context.Context, s Scan) (*Page, error) {
	return retryRaced(ctx, func() (*Page, error) { return r.rp.scan(ctx, s) })
}

// raceRetries bounds how often Read and Scan start again after
// storage.ErrFlushRaced. Each new attempt chooses SSTables after the flush
// that raced the last, so only a stream of flushes, one per attempt,
// exhausts them.
const raceRetries = 8

// retryRaced runs read again while it fails with storage.ErrFlushRaced, at most
// raceRetries more times, and returns its last result.
func retryRaced[T any](ctx context.Context, read func() (T, error)) (T, error) {
	for i := 0; ; i++ {
		v, err := read()
		if err == nil || !errors.Is(err, storage.ErrFlushRaced) || i == raceRetries || ctx.Err() != nil {
			return v, err
		}
	}
}

// eachNode calls fn once on the client of every node that owns at least one
// range, all at once, and returns their errors joined. Free ranges are
// skipped, as no node holds their writes; nothing is called if an owner's
// address cannot be found.
func (r *Remote) eachNode(ctx context.Context, fn func(*rpc.Client) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var cs []*rpc.Client
	for rg := range r.view.RangeCount() {
		if o, ok := r.view.Ownership(rg); !ok || o.Owner == "" {
			continue
		}
		c, err := r.rangeOwner(rg)
		if err != nil {
			return err
		}
		if !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = fn(c) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// owner returns the client of the node that owns tok's range.
func (r *Remote) owner(tok int64) (*rpc.Client, error) {
	return r.rangeOwner(manifest.RangeOf(tok, max(r.view.RangeCount(), 1)))
}

// rangeOwner returns the client of the node that owns range rg.
func (r *Remote) rangeOwner(rg int) (*rpc.Client, error) {
	if r.view.RangeCount() == 0 {
		return nil, fmt.Errorf("%w: the cluster's ranges are not set", ErrNoOwner)
	}
	o, ok := r.view.Ownership(rg)
	if !ok || o.Owner == "" {
		return nil, fmt.Errorf("%w: range %d is free", ErrNoOwner, rg)
	}
	members := r.view.Members()
	i := slices.IndexFunc(members, func(m manifest.Member) bool { return m.ID == o.Owner })
	if i < 0 || members[i].Addr == "" {
		return nil, fmt.Errorf("%w: range %d: owner %s is not a member", ErrNoOwner, rg, o.Owner)
	}
	return r.client(members[i].Addr, members)
}

// client returns the pooled client of addr. Making one closes those of
// addresses no member has any more, such as a restarted node's old port.
func (r *Remote) client(addr string, members []manifest.Member) (*rpc.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, rpc.ErrClosed
	}
	if c, ok := r.clients[addr]; ok {
		return c, nil
	}
	for a, c := range r.clients {
		if !slices.ContainsFunc(members, func(m manifest.Member) bool { return m.Addr == a }) {
			c.Close()
			delete(r.clients, a)
		}
	}
	c := rpc.Dial(addr, r.opts)
	r.clients[addr] = c
	return c, nil
}

// remoteMemtables reads the owners' memtables page by page.
type remoteMemtables struct{ r *Remote }

// iter asks each owner of the ranges [first, last] span for its entries in
// [lower, upper), one run of requests per run of ranges with the same owner:
// ranges and their keys are in token order, so the runs' entries simply
// follow each other. A partition's entries are fetched at once, as its read
// seeks both ways; a scan's are fetched a page at a time as it moves on,
// so that a page of a scan costs about a memtable page, not the range.
func (m remoteMemtables) iter(ctx context.Context, table uuid.UUID, first, last int64, lower, upper, partition []byte) (kv.Iterator, error) {
	n := max(m.r.view.RangeCount(), 1)
	var segs []segment
	for rg, end := manifest.RangeOf(first, n), manifest.RangeOf(last, n); rg <= end; {
		c, err := m.r.rangeOwner(rg)
		if err != nil {
			return nil, err
		}
		next := rg + 1
		for next <= end {
			cn, err := m.r.rangeOwner(next)
			if err != nil || cn != c {
				break
			}
			next++
		}
		lo, hi := clip(lower, upper, rg, next-1, n)
		segs = append(segs, segment{c: c, lo: lo, hi: hi})
		rg = next
	}
	it := &remoteIter{ctx: ctx, table: storage.TableIDOf(table), segs: segs}
	if partition != nil {
		if err := it.loadAll(); err != nil {
			return nil, err
		}
		return it, nil
	}
	// A scan's first page now, so that its commit mark is known before
	// the SSTables are chosen (see marked).
	if err := it.prime(); err != nil {
		return nil, err
	}
	return it, nil
}

// clip narrows [lower, upper) to the keys of ranges [from, to] of n.
func clip(lower, upper []byte, from, to, n int) (lo, hi []byte) {
	lo, hi = lower, upper
	if f, _ := manifest.RangeBounds(from, n); lo == nil || bytes.Compare(keys.AppendToken(nil, f), lo) > 0 {
		lo = keys.AppendToken(nil, f)
	}
	if _, l := manifest.RangeBounds(to, n); l < math.MaxInt64 {
		if b := keys.AppendToken(nil, l+1); hi == nil || bytes.Compare(b, hi) < 0 {
			hi = b
		}
	}
	return lo, hi
}

// fetch appends to dst the entries of table in [lo, hi) that c's memtables
// hold, page by page, each checked by checkPage, and returns the highest
// commit mark of the pages.
func fetch(ctx context.Context, c scanner, table storage.TableID, lo, hi []byte, dst []storage.Entry) ([]storage.Entry, uint64, error) {
	req := rpc.ScanRequest{Table: table, Lower: lo, Upper: hi}
	var mark uint64
	for {
		p, err := c.Scan(ctx, req)
		if err != nil {
			return dst, mark, err
		}
		if err := checkPage(p, req, hi); err != nil {
			return dst, mark, err
		}
		dst = append(dst, p.Entries...)
		mark = max(mark, p.Mark)
		if p.Next == nil {
			return dst, mark, nil
		}
		req = req.Resume(p)
	}
}
