package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/manifest"
)

// TestAdminSnapshot takes a snapshot, writes over it (flushed, compacted
// and unflushed writes), restores it, and drops it.
func TestAdminSnapshot(t *testing.T) {
	dataDir := t.TempDir()
	ctx := context.Background()
	p := startProcess(t, dataDir,
		"-node.heartbeat-interval=50ms",
		"-ingest.shards=1", "-ingest.ranges=2",
		"-ingest.flush-age=1h",
		"-compactor.plan-interval=100ms",
	)
	p.waitReady(t)
	s := cqlSession(t, p, "")
	execCQL(t, s,
		"CREATE KEYSPACE sn WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE sn.kv (k int PRIMARY KEY, v text)",
		"CREATE TABLE sn.other (k int PRIMARY KEY)",
	)
	n := p.natsPort
	const rows = 20
	write := func(v string, from, to int) {
		t.Helper()
		for k := from; k < to; k++ {
			if err := s.Query("INSERT INTO sn.kv (k, v) VALUES (?, ?)", k, v).Exec(); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func() map[int]string {
		t.Helper()
		got := map[int]string{}
		it := s.Query("SELECT k, v FROM sn.kv").Iter()
		var k int
		var v string
		for it.Scan(&k, &v) {
			got[k] = v
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	write("old", 0, rows)
	var fl FlushReport
	adminJSON(t, n, dataDir, &fl, "flush")
	want := read()
	if len(want) != rows {
		t.Fatalf("%d rows before the snapshot", len(want))
	}

	var snap SnapshotsReport
	adminJSON(t, n, dataDir, &snap, "snapshot", "-table", "sn.kv", "before")
	kv := p.s.view.Table("sn", "kv")
	if len(snap.Snapshots) != 1 || snap.Snapshots[0].ID != kv.ID || snap.Snapshots[0].SSTables != 2 || snap.Snapshots[0].Bytes == 0 {
		t.Fatalf("snapshot %+v", snap)
	}
	if code, _, errOut := runAdmin(t, n, dataDir, "snapshot", "-table", "sn.kv", "before"); code != 1 || !strings.Contains(errOut, "clearsnapshot -table sn.kv before") {
		t.Errorf("snapshot twice: exit %d, %s", code, errOut)
	}

	// Writes after the snapshot: flushed and compacted, then unflushed.
	write("new", 0, rows/2)
	write("added", 100, 105)
	adminJSON(t, n, dataDir, &fl, "flush")
	var comp CompactReport
	adminJSON(t, n, dataDir, &comp, "compact", "-table", "sn.kv", "-timeout=60s")
	write("unflushed", 200, 203)
	if got := read(); len(got) != rows+8 || got[0] != "new" {
		t.Fatalf("rows before the restore: %v", got)
	}
	m, _ := openManifest(t, p, dataDir)
	pinned, err := m.PinnedKeys(ctx)
	if err != nil || len(pinned) != 2 {
		t.Fatalf("pinned %v, %v", pinned, err)
	}
	gs, err := m.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	garbage := 0
	for _, g := range gs {
		if pinned[g.Key] {
			garbage++
		}
	}
	if garbage != 2 {
		t.Fatalf("the compaction left %d of the snapshot's SSTables as garbage, want 2: %+v", garbage, gs)
	}

	if code, _, errOut := runAdmin(t, n, dataDir, "restore-snapshot", "before"); code != 1 || !strings.Contains(errOut, "pass -yes") {
		t.Fatalf("restore-snapshot without -yes: exit %d, %s", code, errOut)
	}
	var rest SnapshotsReport
	adminJSON(t, n, dataDir, &rest, "restore-snapshot", "-yes", "before")
	if len(rest.Snapshots) != 1 || rest.Snapshots[0].Name != "before" {
		t.Fatalf("restore-snapshot %+v", rest)
	}
	// The frontend's view follows the manifest's change.
	if err := p.s.view.WaitFor(ctx, func(v *manifest.View) bool { return len(v.SSTables(kv.ID)) == 2 }); err != nil {
		t.Fatal(err)
	}
	if got := read(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows after the restore: %v\nwant %v", got, want)
	}
	// The unflushed writes were truncated: a flush brings none back.
	adminJSON(t, n, dataDir, &fl, "flush")
	if got := read(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows after the restore and a flush: %v", got)
	}

	var list SnapshotsReport
	adminJSON(t, n, dataDir, &list, "snapshots")
	if len(list.Snapshots) != 1 || list.Snapshots[0].Keyspace != "sn" || list.Snapshots[0].Table != "kv" {
		t.Fatalf("snapshots %+v", list)
	}
	code, out, _ := runAdmin(t, n, dataDir, "snapshots")
	if code != 0 || !strings.Contains(out, "before") || !strings.Contains(out, "sn.kv") || !strings.Contains(out, "KiB") && !strings.Contains(out, " B") {
		t.Errorf("text snapshots (exit %d):\n%s", code, out)
	}
	var cleared SnapshotsReport
	adminJSON(t, n, dataDir, &cleared, "clearsnapshot", "before")
	if len(cleared.Snapshots) != 1 {
		t.Fatalf("clearsnapshot %+v", cleared)
	}
	if pinned, err := m.PinnedKeys(ctx); err != nil || len(pinned) != 0 {
		t.Fatalf("pinned after clearsnapshot: %v, %v", pinned, err)
	}
	if code, _, errOut := runAdmin(t, n, dataDir, "clearsnapshot", "before"); code != 1 || !strings.Contains(errOut, `no snapshot "before"`) {
		t.Errorf("clearsnapshot twice: exit %d, %s", code, errOut)
	}
}
