package compactor

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/grafana/dskit/services"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/compactor/gc"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

// TestRoleStartsWithoutTheBinary starts the compactor role through New, as
// main does, and checks that it runs its parts: the collector deletes an
// object a TRUNCATE put on the garbage list once its grace is over, and
// the role stops cleanly.
func TestRoleStartsWithoutTheBinary(t *testing.T) {
	ctx := context.Background()
	js, _ := manifesttest.JetStream(t)
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Open(ctx, js, store, "role", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := m.CreateTable(ctx, manifest.TableSpec{
		Keyspace: "ks", Name: "t",
		Columns:      []manifest.ColumnSpec{{Name: "pk", Type: "text"}},
		PartitionKey: []string{"pk"},
	})
	if err != nil {
		t.Fatal(err)
	}
	const key = "sst/n1/garbage.sst"
	if _, err := store.Put(ctx, key, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CommitSSTables(ctx, manifest.Commit{Table: tbl.ID, Range: 0, Add: []manifest.SSTable{{Key: key, Size: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DropSSTables(ctx, tbl.ID); err != nil {
		t.Fatal(err)
	}
	view, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()

	var cfg Config
	var gcCfg gc.Config
	f := flag.NewFlagSet("compactor", flag.ContinueOnError)
	cfg.RegisterFlags(f)
	gcCfg.RegisterFlags(f)
	gcCfg.GracePeriod, gcCfg.Interval, gcCfg.OrphanInterval = time.Millisecond, 20*time.Millisecond, 0
	c, err := New(ctx, cfg, gcCfg, Deps{
		JetStream: js, Manifest: m, View: view, Store: store,
		NodeID: "c1", HeartbeatInterval: time.Second,
		Registerer: prometheus.NewRegistry(), Logger: plannerLog(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := services.StartAndAwaitRunning(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the collector to delete the dropped SSTable", func() bool {
		_, err := store.Head(ctx, key)
		return objectstore.IsNotFound(err)
	})
	if err := services.StopAndAwaitTerminated(ctx, c); err != nil {
		t.Fatal(err)
	}
}
