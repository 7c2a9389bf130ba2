package ingest

import (
	"bytes"
	"context"
	"strconv"
	"testing"

	"github.com/sedimentdb/sediment/ingest/rpc"
)

// The RPC handler is tested over the wire in package ingest/rpc; this test
// sets its page size.

// TestScanPageBytes ends pages by size, and never with no entry.
func TestScanPageBytes(t *testing.T) {
	e := newEnv(t)
	e.cfg.Shards = 1
	n, err := e.openNode()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx := context.Background()
	big := string(bytes.Repeat([]byte{'x'}, 1000))
	for i := range 20 {
		if err := n.Apply(ctx, rowMutation(1, "p"+strconv.Itoa(i), 0, 1, big)); err != nil {
			t.Fatal(err)
		}
	}
	h := &rpcHandler{node: n, pageBytes: 2500}
	total := 0
	for req := (rpc.ScanRequest{Table: 1}); ; {
		p, err := h.Scan(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Entries) != 3 && p.Next != nil {
			t.Fatalf("page of %d entries of about 1 KB with a 2.5 KB budget", len(p.Entries))
		}
		total += len(p.Entries)
		if p.Next == nil {
			break
		}
		req = req.Resume(p)
	}
	if total != 20 {
		t.Fatalf("scanned %d entries, want 20", total)
	}
	h.pageBytes = 1
	if p, err := h.Scan(ctx, rpc.ScanRequest{Table: 1}); err != nil || len(p.Entries) != 1 {
		t.Fatalf("page under a tiny budget: %v entries, %v", len(p.Entries), err)
	}
}
