package rpc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// countingCommitter marks each commit with its count.
type countingCommitter struct {
	*ingest.MemCommitter
	n atomic.Uint64
}

var _ ingest.CommitMarker = (*countingCommitter)(nil)

func (c *countingCommitter) Commit(ctx context.Context, f ingest.Flush) error {
	if err := c.MemCommitter.Commit(ctx, f); err != nil {
		return err
	}
	c.n.Add(1)
	return nil
}

func (c *countingCommitter) CommitMark() uint64 { return c.n.Load() }

// TestPageCarriesCommitMark: a page answered after a flush carries the mark
// the node's committer reached, across the wire.
func TestPageCarriesCommitMark(t *testing.T) {
	bucket, err := objectstore.NewFile(vfs.NewMem(), "bucket", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ingest.DefaultConfig()
	cfg.Shards = 1
	cfg.FlushAge = time.Hour
	cfg.Commitlog.Dir = "log"
	c := &countingCommitter{MemCommitter: ingest.NewMemCommitter(bucket)}
	n, err := ingest.OpenNode(context.Background(), cfg, ingest.NodeDeps{
		FS: vfs.NewMem(), Store: bucket, Committer: c, Reader: c,
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	addr, _ := serve(t, ingest.RPCHandler(n), rpc.Options{})
	cl := dial(t, addr, rpc.Options{})
	ctx := context.Background()
	p, err := cl.Scan(ctx, rpc.ScanRequest{Table: 1})
	if err != nil || p.Mark != 0 {
		t.Fatalf("before any flush: mark %d, err %v", p.Mark, err)
	}
	if err := cl.Apply(ctx, rowMutation(1, pk(1), 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
	if err := n.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p, err = cl.Scan(ctx, rpc.ScanRequest{Table: 1})
	if err != nil || len(p.Entries) != 0 || p.Mark != c.CommitMark() || p.Mark == 0 {
		t.Fatalf("after a flush: %d entries, mark %d (committer at %d), err %v", len(p.Entries), p.Mark, c.CommitMark(), err)
	}
}
