package exec_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltest"
	"github.com/sedimentdb/sediment/manifest"
)

// TestWatchEvents checks the events of a schema changed through the
// manifest, as another frontend would change it, and of a frontend joining.
func TestWatchEvents(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Executor.Watch(ctx, func(ev *wire.Event) {
			mu.Lock()
			defer mu.Unlock()
			if ev.Type == wire.SchemaChanged {
				got = append(got, ev.Schema.Change+" "+ev.Schema.Target+" "+ev.Schema.Keyspace+"."+ev.Schema.Name)
			} else {
				got = append(got, ev.Type+" "+ev.Change+" "+ev.Addr.String())
			}
		})
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(50 * time.Millisecond) // let Watch take its first snapshot

	m := srv.Manifest
	if err := m.CreateKeyspace(ctx, "other", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, true); err != nil {
		t.Fatal(err)
	}
	wait := func(want ...string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			ok := true
			for _, w := range want {
				ok = ok && slices.Contains(got, w)
			}
			snapshot := slices.Clone(got)
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("events %q, want %q among them", snapshot, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait("CREATED KEYSPACE other.")
	if _, err := m.CreateTable(ctx, manifest.TableSpec{Keyspace: "other", Name: "t",
		Columns: []manifest.ColumnSpec{{Name: "k", Type: "int"}}, PartitionKey: []string{"k"}}); err != nil {
		t.Fatal(err)
	}
	wait("CREATED TABLE other.t")
	if err := m.Heartbeat(ctx, manifest.Member{ID: "fe-9", Roles: []string{exec.RoleFrontend}, Addr: "127.0.0.9:9042"}); err != nil {
		t.Fatal(err)
	}
	wait(wire.TopologyChange+" NEW_NODE 127.0.0.9:9042", wire.StatusChange+" UP 127.0.0.9:9042")
	if err := m.Leave(ctx, "fe-9"); err != nil {
		t.Fatal(err)
	}
	if err := m.DropKeyspace(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	wait(wire.TopologyChange+" REMOVED_NODE 127.0.0.9:9042", "DROPPED KEYSPACE other.")
}
