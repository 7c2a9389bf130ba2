package rpc

import (
	"context"

	"github.com/sedimentdb/sediment/internal/storage"
)

// Handler is what an ingest node serves: the server calls it for each
// request, and a Client implements it too, so a frontend works the same
// against a node in its process (ingest.RPCHandler) or across the network.
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
