package main

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/manifest"
)

// remoteRows scans the whole ring through e and returns v of every row, by
// storage key.
func remoteRows(t *testing.T, e engine.Engine, table manifest.Table, col uint32) map[string]string {
	t.Helper()
	out := map[string]string{}
	var after []byte
	for {
		page, err := e.Scan(context.Background(), engine.Scan{Table: table.ID, First: -1 << 63, Last: 1<<63 - 1, After: after, Limit: 7, Now: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Partitions {
			for _, r := range p.Rows {
				for _, c := range r.Row.Cells {
					if c.Column == col {
						out[string(r.Key)] = string(c.Value)
					}
				}
			}
		}
		if after = page.Next; after == nil {
			return out
		}
	}
}

// TestRunIngestServesRPC writes and reads through a Remote engine, as a
// frontend in another process would: over the node's RPC address, as the
// member list announces it, before and after a flush, and not after a stop.
func TestRunIngestServesRPC(t *testing.T) {
	ctx := context.Background()
	p := startProcess(t, t.TempDir(), ingestFlags...)
	p.waitReady(t)
	s := p.s
	if mem := member(t, s.manifest, s.ingester.NodeID()); mem.Addr != s.ingester.RPCAddr() {
		t.Fatalf("member address %s, want the rpc address %s", mem.Addr, s.ingester.RPCAddr())
	}
	tt := createTable(t, s.manifest)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.view.WaitFor(wctx, func(v *manifest.View) bool { return v.Table("ks", "t") != nil && len(nodeMembers(v.Members())) == 1 }); err != nil {
		t.Fatal(err)
	}
	table := *s.view.Table("ks", "t")
	e, err := engine.NewRemote(engine.RemoteConfig{View: s.view, Store: s.store})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	want := map[string]string{}
	for i := range 30 {
		m := tt.row(t, fmt.Sprintf("p%d", i%7), int64(i), fmt.Sprintf("v%d", i))
		if err := e.Apply(ctx, &engine.Mutation{Table: table.ID, Entries: m.Entries}); err != nil {
			t.Fatal(err)
		}
		want[string(m.Entries[0].Key)] = fmt.Sprintf("v%d", i)
	}
	if got := memtables(t, s, tt); !maps.Equal(got, want) {
		t.Fatalf("the node's memtables hold %d rows, want %d", len(got), len(want))
	}
	if got := remoteRows(t, e, table, tt.col); !maps.Equal(got, want) {
		t.Fatalf("remote scan before flush: %d rows, want %d", len(got), len(want))
	}
	if err := s.ingester.Node().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := memtables(t, s, tt); len(got) != 0 {
		t.Fatalf("%d rows left in the memtables after a flush", len(got))
	}
	// The flush returned once the View showed it (ViewCommitter): the
	// rows are read from the SSTables at once.
	if got := remoteRows(t, e, table, tt.col); !maps.Equal(got, want) {
		t.Fatalf("remote scan after flush: %d rows, want %d", len(got), len(want))
	}

	p.stop(t)
	m := tt.row(t, "late", 1, "x")
	if err := e.Apply(ctx, &engine.Mutation{Table: table.ID, Entries: m.Entries}); err == nil || !storage.Retriable(err) {
		t.Fatalf("write to a stopped node: %v, want a retriable error", err)
	}
}

// TestRunIngestNeedsAnAddressToAnnounce: a node listening on every interface
// cannot tell the others where to reach it without -node.address.
func TestRunIngestNeedsAnAddressToAnnounce(t *testing.T) {
	p := startProcess(t, t.TempDir(), append(ingestFlags, "-ingest.rpc-address=0.0.0.0:0")...)
	select {
	case err := <-p.done:
		p.done <- err
		if err == nil || !strings.Contains(err.Error(), "-node.address") {
			t.Fatalf("run returned %v, want an error naming -node.address", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not fail\n%s", p.log)
	}
}
