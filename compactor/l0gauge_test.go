package compactor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

const gaugeRanges = 4

// TestL0Gauge checks the gauge against a table whose strategy compacts L0
// at 2 SSTables and stops flushes at 4: each range's pressure follows its
// own L0 count, with the table's options, and follows the View as SSTables
// are committed and compacted away.
func TestL0Gauge(t *testing.T) {
	js, _ := manifesttest.JetStream(t)
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := manifest.Open(ctx, js, store, "c1", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, gaugeRanges); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, false); err != nil {
		t.Fatal(err)
	}
	opts := manifest.DefaultTableOptions()
	opts.Compaction = map[string]string{"class": "UnifiedCompactionStrategy", "l0_compaction_threshold": "2", "l0_limit": "4"}
	tbl, err := m.CreateTable(ctx, manifest.TableSpec{
		Keyspace: "ks", Name: "t",
		Columns:      []manifest.ColumnSpec{{Name: "pk", Type: "text"}, {Name: "v", Type: "text"}},
		PartitionKey: []string{"pk"},
		Options:      &opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	view, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	g := NewL0Gauge(view)
	id := storage.TableIDOf(tbl.ID)

	n := 0
	add := func(r, level int) string {
		t.Helper()
		first, _ := manifest.RangeBounds(r, gaugeRanges)
		n++
		s := manifest.SSTable{Key: fmt.Sprintf("sst/%d", n), Size: 1, Level: level, MinToken: first, MaxToken: first}
		if _, err := m.CommitSSTables(ctx, manifest.Commit{Table: tbl.ID, Range: r, Add: []manifest.SSTable{s}}); err != nil {
			t.Fatal(err)
		}
		return s.Key
	}
	expect := func(r int, want float64) {
		t.Helper()
		waitFor(t, fmt.Sprintf("range %d at pressure %v", r, want), func() bool { return g.L0Pressure(id, r) == want })
	}
	expect(1, 0)
	var l0 []string
	for range 2 {
		l0 = append(l0, add(1, 0))
	}
	add(1, 1) // not L0
	expect(1, 0)
	l0 = append(l0, add(1, 0))
	expect(1, 0.5)
	expect(2, 0)
	l0 = append(l0, add(1, 0), add(1, 0))
	expect(1, 1.5)
	if got := g.L0Pressure(id+1, 1); got != 0 {
		t.Fatalf("unknown table at pressure %v", got)
	}
	// A compaction of L0 into L1 lifts the pressure.
	if _, err := m.CommitSSTables(ctx, manifest.Commit{Table: tbl.ID, Range: 1, Remove: l0}); err != nil {
		t.Fatal(err)
	}
	expect(1, 0)
}

// waitFor polls cond until it holds, failing the test after 30s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
