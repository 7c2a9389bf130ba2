package rpc

import (
	"bytes"
	"context"
	"fmt"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/storage"
)

// Handler is what an ingest node serves: the server calls it for each
// request, and a Client implements it too, so a frontend works the same
// against a node in its process (NodeHandler) or across the network.
type Handler interface {
	// Apply writes m and returns once it is durable (ingest.Node.Apply).
	Apply(ctx context.Context, m *storage.Mutation) error
	// Scan returns a page of the node's memtables' entries of a table.
	Scan(ctx context.Context, r ScanRequest) (*Page, error)
	// ApplyIf applies m, whose entries belong to one partition, if that
	// partition's PartitionDigest, over the node's memtables merged with
	// its committed SSTables, is want; no other write to the partition
	// comes between the check and the write (ingest.Node.ApplyIf). It
	// reports whether m was applied: false is a conflict, the partition
	// changed since the caller read it.
	ApplyIf(ctx context.Context, m *storage.Mutation, want Digest) (bool, error)
	// Truncate removes every entry of table written before it from the
	// node's memtables, durably (ingest.Node.Truncate).
	Truncate(ctx context.Context, table storage.TableID) error
	// Flush flushes every shard of the node and returns once the flushed
	// memtables are committed to the manifest (ingest.Node.Flush): every
	// write acknowledged before the call is then in an SSTable. An
	// operator's tool asks for it (sediment admin flush).
	Flush(ctx context.Context) error
}

// ScanRequest asks for entries of one table in [Lower, Upper) from an
// ingest node's memtables: a page of them, which the caller merges with
// the table's SSTables.
type ScanRequest struct {
	Table storage.TableID
	// Lower and Upper bound the keys, Lower <= key < Upper; nil is open.
	Lower, Upper []byte
	// Reverse returns the page in descending key order, from Upper down.
	Reverse bool
	// Limit bounds the entries of the page; 0 leaves the bound to the
	// server, which also ends a page at a size in bytes.
	Limit int
}

// Page is one page of a scan.
type Page struct {
	Entries []storage.Entry
	// Next is nil when the page ends the scan; otherwise Resume builds the
	// request for the next page from it.
	Next []byte
	// Mark is the node's ingest.Node.CommitMark, read after the page: the
	// manifest sstables revision a reader's View must reach before it
	// chooses the SSTables to merge with the page, since the node may have
	// dropped flushed memtables from the page that only those list. 0
	// asks for nothing.
	Mark uint64
}

// Resume returns the request for the page after p: forward scans resume
// at Next (inclusive), reverse scans below it (exclusive).
func (r ScanRequest) Resume(p *Page) ScanRequest {
	if r.Reverse {
		r.Upper = p.Next
	} else {
		r.Lower = p.Next
	}
	return r
}

// DefaultPageBytes is roughly where NodeHandler ends a page: keys and
// values past it go to the next page.
const DefaultPageBytes = 1 << 20

// NodeHandler serves an ingest node's writes and memtable reads.
func NodeHandler(n *ingest.Node) Handler { return &nodeHandler{node: n, pageBytes: DefaultPageBytes} }

type nodeHandler struct {
	node      *ingest.Node
	pageBytes int
}

var _ Handler = (*nodeHandler)(nil)

func (h *nodeHandler) Apply(ctx context.Context, m *storage.Mutation) error {
	return h.node.Apply(ctx, m)
}

func (h *nodeHandler) ApplyIf(ctx context.Context, m *storage.Mutation, want Digest) (bool, error) {
	if len(m.Entries) == 0 {
		return false, fmt.Errorf("%w: conditional mutation without entries", storage.ErrInvalidMutation)
	}
	n, err := keys.PartitionPrefixLen(m.Entries[0].Key)
	if err != nil {
		return false, fmt.Errorf("%w: key %x: %w", storage.ErrInvalidMutation, m.Entries[0].Key, err)
	}
	prefix := m.Entries[0].Key[:n]
	return h.node.ApplyIf(ctx, m, func(current kv.Iterator) (bool, error) {
		d, err := PartitionDigest(current, prefix)
		return err == nil && d == want, err
	})
}

func (h *nodeHandler) Truncate(ctx context.Context, table storage.TableID) error {
	return h.node.Truncate(ctx, table)
}

func (h *nodeHandler) Flush(ctx context.Context) error {
	return h.node.Flush(ctx)
}

// Scan reads a snapshot of the memtables of the shards the bounds meet.
// A page always holds at least one entry unless the range is empty, so a
// scan always makes progress.
func (h *nodeHandler) Scan(ctx context.Context, r ScanRequest) (*Page, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	it := h.node.NewIter(r.Table, r.Lower, r.Upper)
	first, next := it.First, it.Next
	if r.Reverse {
		first, next = it.Last, it.Prev
	}
	p := &Page{}
	// One buffer holds the page's keys and values: an allocation per page,
	// not per entry.
	var buf []byte
	type span struct{ k0, k1, v1 int }
	var spans []span
	ok := first()
	for ; ok; ok = next() {
		if (r.Limit > 0 && len(spans) == r.Limit) || (len(spans) > 0 && len(buf) >= h.pageBytes) {
			p.Next = bytes.Clone(it.Key())
			if r.Reverse {
				// Resume below the last key returned: Next is the
				// exclusive upper bound of the rest.
				p.Next = bytes.Clone(buf[spans[len(spans)-1].k0:spans[len(spans)-1].k1])
			}
			break
		}
		k0 := len(buf)
		buf = append(buf, it.Key()...)
		k1 := len(buf)
		buf = append(buf, it.Value()...)
		spans = append(spans, span{k0, k1, len(buf)})
	}
	err := it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	// After the read: any memtable it missed was dropped after its flush's
	// commit raised the mark.
	p.Mark = h.node.CommitMark()
	p.Entries = make([]storage.Entry, len(spans))
	for i, s := range spans {
		p.Entries[i] = storage.Entry{Key: buf[s.k0:s.k1:s.k1], Value: buf[s.k1:s.v1:s.v1]}
	}
	return p, nil
}
