package manifest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// TestReplicas opens the catalog on a three-server NATS cluster with three
// replicas, kills a server, and changes the catalog on.
func TestReplicas(t *testing.T) {
	c := testserver.NATSClusterOf(t, 3)
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := Open(ctx, js, store, "c1", Options{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []*bucket{m.schema, m.sstables, m.ownership, m.members, m.leases, m.roles} {
		info, err := b.stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Replicas != 3 {
			t.Fatalf("bucket %s has %d replicas, want 3", b.name, info.Config.Replicas)
		}
	}
	// A process of default configuration keeps them.
	if _, err := Open(ctx, js, store, "c1", Options{}); err != nil {
		t.Fatal(err)
	}
	info, err := m.ownership.stream.Info(ctx)
	if err != nil || info.Config.Replicas != 3 {
		t.Fatalf("after an Open with default options the ownership bucket has %+v replicas (%v), want 3", info, err)
	}
	if err := m.InitRanges(ctx, 4); err != nil {
		t.Fatal(err)
	}
	c.Servers[0].Kill()
	for {
		// A request to the dead server's streams goes unanswered until a
		// new leader is elected: each attempt gets a deadline of its own.
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := m.Assign(actx, 1, "n1")
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("assign with one server of three killed: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // a leader election
	}
	if o, err := m.Ownership(ctx, 1); err != nil || o.Owner != "n1" {
		t.Fatalf("ownership %+v, %v", o, err)
	}
}
