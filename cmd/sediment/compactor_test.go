package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/gc"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
	"github.com/sedimentdb/sediment/vfs"
)

// TestCompactorCollectsGarbage runs the compactor role alone: it takes the
// collection lease, deletes a dropped table's object once its grace period
// is over, and gives the lease up when it stops.
func TestCompactorCollectsGarbage(t *testing.T) {
	dataDir := t.TempDir()
	ctx := context.Background()
	p := startProcess(t, dataDir, "-target=compactor", "-gc.grace-period=200ms", "-gc.interval=20ms")
	p.waitReady(t)
	m, _ := openManifest(t, p, dataDir)
	store, err := objectstore.NewFile(vfs.Default, filepath.Join(dataDir, "objects"), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, 16); err != nil { // the -ingest.ranges default
		t.Fatal(err)
	}
	table := uuid.New()
	const key = "sst/dropped"
	if _, err := store.Put(ctx, key, []byte("sstable")); err != nil {
		t.Fatal(err)
	}
	lo, hi := manifest.RangeBounds(0, 16)
	sst := manifest.SSTable{Key: key, Size: 7, MinToken: lo, MaxToken: hi}
	if _, err := m.CommitSSTables(ctx, manifest.Commit{Table: table, Range: 0, Add: []manifest.SSTable{sst}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DropSSTables(ctx, table); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := store.Head(ctx, key)
		if objectstore.IsNotFound(err) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("garbage not collected after 20s\n%s", p.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		gs, err := m.Garbage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(gs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("garbage still listed: %+v", gs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	l, err := m.Lease(ctx, gc.LeaseName)
	if err != nil || l.Holder == "" {
		t.Fatalf("collection lease: %+v, %v", l, err)
	}
	if log := p.log.String(); !strings.Contains(log, "deleted garbage object") || !strings.Contains(log, "object="+key) {
		t.Fatalf("the deletion is not logged:\n%s", log)
	}
	p.stop(t)

	// The stopped collector gave its lease up.
	p2 := startProcess(t, dataDir, "-target=ingest")
	p2.waitReady(t)
	m2, _ := openManifest(t, p2, dataDir)
	if l, err := m2.Lease(ctx, gc.LeaseName); !errors.Is(err, manifest.ErrNotFound) {
		t.Fatalf("lease after stop: %+v, %v", l, err)
	}
	p2.stop(t)
}
