package main

import (
	"context"
	"errors"
	"fmt"
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

// gathered sums the samples of the counter or gauge name in reg.
func gathered(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// TestCompactorCompacts runs every role in one process with two
// compaction workers and a fast planner: rows written in several flushes
// pile up in L0, get compacted into L1, and read the same.
func TestCompactorCompacts(t *testing.T) {
	dataDir := t.TempDir()
	ctx := context.Background()
	p := startProcess(t, dataDir,
		"-node.heartbeat-interval=50ms",
		"-ingest.shards=1", "-ingest.ranges=2",
		"-ingest.flush-age=50ms",
		"-compaction.workers=2",
		"-compaction.plan-interval=100ms",
		"-compaction.ack-wait=5s",
	)
	p.waitReady(t)
	s := cqlSession(t, p, "")
	execCQL(t, s,
		"CREATE KEYSPACE c WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE c.kv (k int PRIMARY KEY, v text)",
	)
	reg := p.s.reg
	const rows, flushes = 40, 5
	for f := range flushes {
		before := gathered(t, reg, "sediment_ingest_flushes_total")
		for k := range rows {
			if err := s.Query("INSERT INTO c.kv (k, v) VALUES (?, ?)", k, fmt.Sprintf("v%d-%d", k, f)).Exec(); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		for gathered(t, reg, "sediment_ingest_flushes_total") == before {
			if time.Now().After(deadline) {
				t.Fatalf("no flush within 20s\n%s", p.log)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	m, _ := openManifest(t, p, dataDir)
	table := p.s.view.Table("c", "kv")
	if table == nil {
		t.Fatal("no table c.kv")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ssts, err := m.SSTables(ctx, table.ID)
		if err != nil {
			t.Fatal(err)
		}
		l0 := map[int]int{} // by range
		for _, sst := range ssts {
			if sst.Level == 0 {
				l0[manifest.RangeOf(sst.MinToken, 2)]++
			}
		}
		// The strategy compacts a range's L0 from 4 SSTables on: once
		// every range is below that, compaction has caught up.
		if max(l0[0], l0[1]) < 4 && gathered(t, reg, "sediment_compaction_jobs_committed_total") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no compaction within 60s: L0 SSTables by range %v\n%s", l0, p.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for k := range rows {
		var v string
		if err := s.Query("SELECT v FROM c.kv WHERE k = ?", k).Scan(&v); err != nil || v != fmt.Sprintf("v%d-%d", k, flushes-1) {
			t.Fatalf("SELECT k=%d: %q %v", k, v, err)
		}
	}
	gs, err := m.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, g := range gs {
		if g.Reason == manifest.ReasonRemoved {
			removed++
		}
	}
	if removed < 4 {
		t.Fatalf("%d compaction inputs on the garbage list", removed)
	}
	if gathered(t, reg, "sediment_compaction_read_bytes_total") == 0 || gathered(t, reg, "sediment_compaction_written_bytes_total") == 0 {
		t.Fatal("bytes read or written not counted")
	}
	if gathered(t, reg, "sediment_compaction_planner_lease_held") != 1 {
		t.Fatal("the planner does not hold its lease")
	}
}
