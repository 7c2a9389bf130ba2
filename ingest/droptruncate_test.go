package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/manifest"
)

// TestManifestTruncateThenDrop truncates one of two tables written by the
// same flushes and drops its SSTables, as engine.Truncate does. The drop
// leaves those flushes recorded in part (their other table's SSTables stay
// live), so a restart may replay more of the log: the truncated table must
// still read empty, save what was written after, and the other table whole.
func TestManifestTruncateThenDrop(t *testing.T) {
	c := newCluster(t)
	e := newEnv(t)
	mc := c.node("n1")
	s := c.open(e, mc)
	ctx := context.Background()
	acked := newAcked(c)
	for i := range 600 { // several flushes, each with both tables
		writeBoth(t, c, s, i, acked)
	}
	testwait.For(t, "flushes", func() bool { return s.flushing() == 0 })
	if c.stored(c.tables[0]) == 0 {
		t.Fatal("nothing of the first table was flushed")
	}
	if err := s.Truncate(ctx, storage.TableIDOf(c.tables[0])); err != nil {
		t.Fatal(err)
	}
	if _, err := c.m.DropSSTables(ctx, c.tables[0]); err != nil {
		t.Fatal(err)
	}
	acked[0] = map[string]string{}
	// The flushes that wrote both tables now have fewer live SSTables than
	// parts.
	live := map[manifest.LogPosition]int{}
	for _, id := range c.tables {
		ssts, err := c.m.SSTables(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, sst := range ssts {
			for _, p := range sst.Covers {
				live[p]++
			}
		}
	}
	partial := 0
	for p, n := range live {
		if n < p.Parts {
			partial++
		}
	}
	if partial == 0 {
		t.Fatal("no flush is left recorded in part by the drop")
	}
	m := rowMutation(storage.TableIDOf(c.tables[0]), "after", 1, 2, "new")
	if err := s.Apply(ctx, m); err != nil {
		t.Fatal(err)
	}
	acked[0][string(m.Entries[0].Key)] = "new"
	checkContents(t, c, s, mc, acked)

	// A crash, and a restart that flushes everything.
	s.Close()
	e.fs = e.fs.CrashClone()
	mc = c.node("n1")
	s = c.open(e, mc)
	checkContents(t, c, s, mc, acked)
	s.Close()
	e.cfg.FlushAge = 20 * time.Millisecond
	s = c.open(e, mc)
	defer s.Close()
	testwait.For(t, "every memtable flushed", func() bool {
		n := 0
		for _, id := range c.tables {
			n += count(t, s.NewIter(storage.TableIDOf(id), nil, nil))
		}
		return n == 0 && s.flushing() == 0
	})
	checkContents(t, c, s, mc, acked)
	if got := c.stored(c.tables[0]); got != 1 {
		t.Fatalf("the truncated table stores %d entries, want the one written after", got)
	}
}
