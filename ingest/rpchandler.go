package ingest

import (
	"bytes"
	"context"
	"fmt"

	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/storage"
)

// pageBytes is roughly where an RPCHandler ends a page of a memtable scan:
// keys and values past it go to the next page.
const pageBytes = 1 << 20

// RPCHandler serves n's writes and memtable reads over package rpc: give
// it to rpc.NewServer, or call it in process where the node runs.
func RPCHandler(n *Node) rpc.Handler { return &rpcHandler{node: n, pageBytes: pageBytes} }

type rpcHandler struct {
	node      *Node
	pageBytes int
}

var _ rpc.Handler = (*rpcHandler)(nil)

func (h *rpcHandler) Apply(ctx context.Context, m *storage.Mutation) error {
	return h.node.Apply(ctx, m)
}

func (h *rpcHandler) ApplyIf(ctx context.Context, m *storage.Mutation, want rpc.Digest) (bool, error) {
	if len(m.Entries) == 0 {
		return false, fmt.Errorf("%w: conditional mutation without entries", storage.ErrInvalidMutation)
	}
	n, err := keys.PartitionPrefixLen(m.Entries[0].Key)
	if err != nil {
		return false, fmt.Errorf("%w: key %x: %w", storage.ErrInvalidMutation, m.Entries[0].Key, err)
	}
	prefix := m.Entries[0].Key[:n]
	if err := h.node.readable(prefix, prefix); err != nil {
		return false, err
	}
	return h.node.ApplyIf(ctx, m, func(current kv.Iterator) (bool, error) {
		d, err := rpc.PartitionDigest(current, prefix)
		return err == nil && d == want, err
	})
}

func (h *rpcHandler) Truncate(ctx context.Context, table storage.TableID) error {
	return h.node.Truncate(ctx, table)
}

func (h *rpcHandler) Flush(ctx context.Context) error {
	return h.node.Flush(ctx)
}

// Scan reads a snapshot of the memtables of the shards the bounds meet.
// A page always holds at least one entry unless the range is empty, so a
// scan always makes progress.
func (h *rpcHandler) Scan(ctx context.Context, r rpc.ScanRequest) (*rpc.Page, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := h.node.readable(r.Lower, r.Upper); err != nil {
		return nil, err
	}
	it := h.node.NewIter(r.Table, r.Lower, r.Upper)
	first, next := it.First, it.Next
	if r.Reverse {
		first, next = it.Last, it.Prev
	}
	p := &rpc.Page{}
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
