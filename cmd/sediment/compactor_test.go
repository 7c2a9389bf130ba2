package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/compactor/gc"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
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
	// A compactor alone is a member, with its role and HTTP address.
	mems, err := m.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(mems) != 1 || mems[0].ID != l.Holder || !slices.Equal(mems[0].Roles, []string{Compactor}) || mems[0].Addr != p.s.httpAddr {
		t.Fatalf("members of a compactor-only process: %+v, want one compactor at %s", mems, p.s.httpAddr)
	}
	p.stop(t)

	// The stopped collector gave its lease up, and left the members.
	p2 := startProcess(t, dataDir, "-target=ingest")
	p2.waitReady(t)
	m2, _ := openManifest(t, p2, dataDir)
	mems, err = m2.Members(ctx)
	if err != nil || slices.ContainsFunc(mems, func(mem manifest.Member) bool {
		return slices.Contains(mem.Roles, Compactor) && !slices.Contains(mem.Roles, Ingest)
	}) {
		t.Fatalf("members after the compactor stopped: %+v, %v", mems, err)
	}
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
		"-compactor.workers=2",
		"-compactor.plan-interval=100ms",
		"-compactor.ack-wait=5s",
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

// sstStats sums the entries and tombstones of SSTables, read from the
// objects themselves.
type sstStats struct{ entries, tombstones uint64 }

// tableStats returns the sstStats of the live SSTables of table in level 0
// and in the levels below.
func tableStats(t *testing.T, p *process, table uuid.UUID) (l0, deeper sstStats) {
	t.Helper()
	ctx := context.Background()
	ssts, err := p.s.manifest.SSTables(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ssts {
		r, err := tablestore.Open(ctx, p.s.store, s.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		st := &deeper
		if s.Level == 0 {
			st = &l0
		}
		st.entries += r.Properties().Entries
		st.tombstones += r.Properties().Tombstones
	}
	return l0, deeper
}

// TestCompactorPurges runs every role in one process with tables of
// gc_grace_seconds = 0: compaction drops deleted partitions and expired
// rows from its outputs for the table whose purge bound the ingest node's
// heartbeats give, and keeps the tombstones of the table for which
// another ingest member reports an older unflushed write.
func TestCompactorPurges(t *testing.T) {
	dataDir := t.TempDir()
	ctx := context.Background()
	const beat = 50 * time.Millisecond
	p := startProcess(t, dataDir,
		"-node.heartbeat-interval="+beat.String(),
		"-ingest.shards=1", "-ingest.ranges=1",
		"-ingest.flush-age=50ms",
		"-compactor.plan-interval=100ms",
		"-compactor.ack-wait=5s",
	)
	p.waitReady(t)
	s := cqlSession(t, p, "")
	execCQL(t, s,
		"CREATE KEYSPACE c WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE c.purged (k int PRIMARY KEY, v text) WITH gc_grace_seconds = 0",
		"CREATE TABLE c.kept (k int PRIMARY KEY, v text) WITH gc_grace_seconds = 0",
	)
	purged, kept := p.s.view.Table("c", "purged"), p.s.view.Table("c", "kept")
	if purged == nil || kept == nil {
		t.Fatal("tables not in the view")
	}
	m := p.s.manifest

	// Another ingest member, alive, holds an unflushed write of c.kept
	// older than anything: no tombstone of c.kept may go.
	ghost := manifest.Member{ID: "ghost", Roles: []string{"ingest"}, Addr: "127.0.0.1:1",
		Unflushed: map[string]int64{ingest.UnflushedKey(storage.TableIDOf(kept.ID)): 1}}
	ghostCtx, stopGhost := context.WithCancel(ctx)
	ghostDone := make(chan struct{})
	go func() {
		defer close(ghostDone)
		for ghostCtx.Err() == nil {
			if err := m.Heartbeat(ghostCtx, ghost); err != nil && ghostCtx.Err() == nil {
				t.Errorf("ghost heartbeat: %v", err)
				return
			}
			select {
			case <-ghostCtx.Done():
			case <-time.After(beat):
			}
		}
	}()
	defer func() { stopGhost(); <-ghostDone }()

	reg := p.s.reg
	flushed := func(write func()) {
		t.Helper()
		before := gathered(t, reg, "sediment_ingest_flushes_total")
		write()
		waitFor(t, "a flush", func() bool { return gathered(t, reg, "sediment_ingest_flushes_total") > before })
	}
	exec := func(q string, args ...any) {
		t.Helper()
		for _, tbl := range []string{"purged", "kept"} {
			if err := s.Query(fmt.Sprintf(q, tbl), args...).Exec(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Four flushes, the strategy's L0 trigger: live rows 0-19, partition
	// deletions of 0-9, rows 20-29 with a TTL of 1s, and live rows 30-39
	// written once those have expired and their expiry is over a second
	// old, so that gc_grace_seconds = 0 has passed for it.
	flushed(func() {
		for k := range 20 {
			exec("INSERT INTO c.%s (k, v) VALUES (?, ?)", k, fmt.Sprint("v", k))
		}
	})
	flushed(func() {
		for k := range 10 {
			exec("DELETE FROM c.%s WHERE k = ?", k)
		}
	})
	flushed(func() {
		for k := 20; k < 30; k++ {
			exec("INSERT INTO c.%s (k, v) VALUES (?, ?) USING TTL 1", k, fmt.Sprint("v", k))
		}
	})
	time.Sleep(2100 * time.Millisecond)
	flushed(func() {
		for k := 30; k < 40; k++ {
			exec("INSERT INTO c.%s (k, v) VALUES (?, ?)", k, fmt.Sprint("v", k))
		}
	})
	checkReads := func() {
		t.Helper()
		for _, tbl := range []string{"purged", "kept"} {
			got := map[int]string{}
			iter := s.Query(fmt.Sprintf("SELECT k, v FROM c.%s", tbl)).Iter()
			var k int
			var v string
			for iter.Scan(&k, &v) {
				got[k] = v
			}
			if err := iter.Close(); err != nil {
				t.Fatal(err)
			}
			want := map[int]string{}
			for k := 10; k < 20; k++ {
				want[k] = fmt.Sprint("v", k)
			}
			for k := 30; k < 40; k++ {
				want[k] = fmt.Sprint("v", k)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("c.%s reads %v, want %v", tbl, got, want)
			}
			for _, k := range []int{0, 5, 25} {
				var v string
				if err := s.Query(fmt.Sprintf("SELECT v FROM c.%s WHERE k = ?", tbl), k).Scan(&v); !errors.Is(err, gocql.ErrNotFound) {
					t.Fatalf("c.%s k=%d reads %q, %v; want no row", tbl, k, v, err)
				}
			}
		}
	}
	checkReads()

	// Compaction merges the four flushes, or if the flushes split under
	// load, some of them: more flushes of the same rows 30-39 follow
	// until all is merged.
	deadline := time.Now().Add(45 * time.Second)
	lastRound := time.Now()
	for {
		p0, pd := tableStats(t, p, purged.ID)
		_, kd := tableStats(t, p, kept.ID)
		// c.purged's compacted outputs hold the 20 live rows alone and
		// no tombstone is left anywhere; c.kept's hold the 10 partition
		// deletions and the expired cells of 10 rows as tombstones.
		if pd.entries == 20 && pd.tombstones == 0 && p0.tombstones == 0 && kd.tombstones >= 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("c.purged: L0 %+v, deeper %+v; c.kept: deeper %+v\n%s", p0, pd, kd, p.log)
		}
		if time.Since(lastRound) > 2*time.Second {
			flushed(func() {
				for k := 30; k < 40; k++ {
					exec("INSERT INTO c.%s (k, v) VALUES (?, ?)", k, fmt.Sprint("v", k))
				}
			})
			lastRound = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkReads()
	if gathered(t, reg, "sediment_compaction_jobs_committed_total") < 2 {
		t.Fatal("compaction jobs not counted")
	}

	// The bound itself: the ghost's write while it beats; unknown (no
	// purge) once it stops beating; once it leaves, nothing unflushed
	// but the writes of the window, capped at its start.
	bound := compactor.UnflushedBound(m, 3*beat, time.Now)
	// (Beats may come late on a busy machine, making the bound unknown
	// for a moment.)
	waitFor(t, "the bound to be the live member's unflushed write", func() bool {
		u, err := bound(ctx, kept.ID, 0)
		return err == nil && u == 1
	})
	stopGhost()
	<-ghostDone
	time.Sleep(4 * beat)
	if u, err := bound(ctx, kept.ID, 0); err != nil || u != math.MinInt64 {
		t.Fatalf("bound with a stale member: %d, %v; want math.MinInt64", u, err)
	}
	if err := m.Leave(ctx, ghost.ID); err != nil {
		t.Fatal(err)
	}
	// With nothing unflushed, the bound is the window's start.
	if err := p.s.ingester.Node().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the bound of a flushed node to be the window's start", func() bool {
		lo := time.Now().Add(-3 * beat).UnixMicro()
		u, err := bound(ctx, kept.ID, 0)
		hi := time.Now().Add(-3 * beat).UnixMicro()
		return err == nil && u >= lo && u <= hi
	})
}
