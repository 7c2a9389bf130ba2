package main

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/ingest"
)

// TestRunIngestPublishesUnflushed checks that an ingest node's heartbeats
// carry the oldest write timestamp its memtables hold per table, and that a
// flush clears it: compaction's purge bound.
func TestRunIngestPublishesUnflushed(t *testing.T) {
	p := startProcess(t, t.TempDir(), ingestFlags...)
	p.waitReady(t)
	defer p.stop(t)
	ctx := context.Background()
	m, id := p.s.manifest, p.s.ingester.NodeID()
	if u := member(t, m, id).Unflushed; u == nil || len(u) != 0 {
		t.Fatalf("an idle node reports unflushed %v, want an empty map", u)
	}
	tt := createTable(t, m)
	schema, err := m.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	table, found := schema.Table("ks", "t")
	if !found {
		t.Fatal("no table ks.t")
	}
	for ck := int64(5); ck < 25; ck++ { // the row helper writes at 1+ck
		if err := p.s.ingester.Node().Apply(ctx, tt.row(t, fmt.Sprintf("p%d", ck), ck, "v")); err != nil {
			t.Fatal(err)
		}
	}
	oldest := func() int64 {
		since := time.Now()
		var ts int64
		// The heartbeats after since cover every write before it.
		waitFor(t, "a heartbeat", func() bool {
			mems, err := m.Members(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var known bool
			ts, known = ingest.OldestUnflushed(mems, table.ID, since)
			return known
		})
		return ts
	}
	waitFor(t, "the heartbeat to report the oldest write", func() bool { return oldest() == 6 })
	if err := p.s.ingester.Node().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the heartbeat to report the flush", func() bool { return oldest() == math.MaxInt64 })
}
