package rpc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// TestFlushOverRPC flushes a node through a client: when Flush returns,
// every acknowledged write has left the memtables for committed SSTables.
func TestFlushOverRPC(t *testing.T) {
	ctx := context.Background()
	n, committed := openNodeCommitter(t, vfs.NewMem(), "log", 2)
	addr, _ := serve(t, ingest.RPCHandler(n), rpc.Options{})
	c := dial(t, addr, rpc.Options{})

	// An empty node flushes at once.
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const rows = 50
	for i := range rows {
		if err := c.Apply(ctx, rowMutation(1, pk(i), 1, 1, "v")); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(readAll(t, n, 1, nil, nil, false)); got != rows {
		t.Fatalf("%d memtable entries before the flush, want %d", got, rows)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(readAll(t, n, 1, nil, nil, false)); got != 0 {
		t.Fatalf("%d memtable entries after the flush, want 0", got)
	}
	sst, err := committed.NewIter(ctx, 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := count(t, sst); got != rows {
		t.Fatalf("%d entries in committed SSTables, want %d", got, rows)
	}

	// A flush already past its deadline fails on the client.
	expired, cancel := context.WithTimeout(ctx, -time.Second)
	defer cancel()
	if err := c.Flush(expired); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("flush past its deadline: %v", err)
	}
}
