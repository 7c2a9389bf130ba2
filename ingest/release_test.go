package ingest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/manifest"
)

// TestManifestRelease: a node flushes, releases its ranges and can no
// longer commit to them; another node claims them.
func TestManifestRelease(t *testing.T) {
	c := newCluster(t)
	e := newEnv(t)
	mc := c.node("n1")
	if got := mc.Owned(); len(got) != clusterRanges {
		t.Fatalf("n1 owns %v, want all %d ranges", got, clusterRanges)
	}
	s := c.open(e, mc)
	defer s.Close()
	ctx := context.Background()
	acked := newAcked(c)
	for i := range 50 {
		writeBoth(t, c, s, i, acked)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, id := range c.tables {
		stored += c.stored(id)
	}
	if stored == 0 {
		t.Fatal("Flush committed nothing")
	}
	for r := range clusterRanges {
		if err := mc.Release(ctx, r); err != nil {
			t.Fatal(err)
		}
		o, err := c.m.Ownership(ctx, r)
		if err != nil || o.Owner != "" {
			t.Fatalf("range %d after release: %+v, %v", r, o, err)
		}
	}
	if got := mc.Owned(); len(got) != 0 {
		t.Fatalf("n1 still owns %v after releasing", got)
	}
	// The released node's next flush is fenced.
	err := mc.Commit(ctx, Flush{Shard: 7, Through: commitlog.Position{Segment: 9, Offset: 1},
		Tables: []SSTable{{Table: storage.TableIDOf(c.tables[0]), Range: 0, Key: "x"}}})
	if !errors.Is(err, storage.ErrFenced) {
		t.Fatalf("commit after release: %v, want ErrFenced", err)
	}
	// Another node claims the ranges; n1 cannot release them again.
	n2 := c.node("n2")
	if got := n2.Owned(); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("n2 owns %v", got)
	}
	if err := mc.Release(ctx, 0); !errors.Is(err, manifest.ErrFenced) {
		t.Fatalf("release of n2's range by n1: %v, want manifest.ErrFenced", err)
	}
	after := 0
	for _, id := range c.tables {
		after += c.stored(id)
	}
	if after != stored {
		t.Fatalf("%d entries stored after the handover, %d before", after, stored)
	}
}
