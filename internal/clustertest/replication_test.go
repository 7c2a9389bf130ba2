package clustertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/testserver"
)

// replicated are the flags of a process of a cluster whose ingest logs and
// catalog are three-replica streams of a three-server NATS cluster.
var replicated = []string{
	"-ingest.log=jetstream",
	"-ingest.log.replicas=3",
	"-ingest.log.append-timeout=1s",
	"-manifest.replicas=3",
}

// TestReplicatedLog runs two ingest nodes whose shards log to JetStream
// (-ingest.log=jetstream) on a cluster of three nats-servers, and a
// frontend, and takes machines away under gocql writes:
//
//  1. one NATS server killed: writes go on, with only retriable errors;
//  2. a second one stopped: no write is acknowledged, and they fail as
//     Unavailable (or time out);
//  3. both back: writes resume by themselves;
//  4. an ingest node killed with kill -9 and its data directory deleted,
//     then started on an empty one (same node ID): it replays its
//     unflushed writes from the stream.
//
// After each step every acknowledged write reads back with its value, and
// nothing that was never written appears.
func TestReplicatedLog(t *testing.T) {
	bin := buildSediment(t)
	nc := testserver.NATSClusterOf(t, 3)
	ms := testserver.MinIO(t)
	ctx := context.Background()
	obs := newObserverReplicas(t, nc, ms, 3)
	if err := obs.m.InitRanges(ctx, ranges); err != nil {
		t.Fatal(err)
	}
	nodes := []*node{newNode(t, bin, "node-a", nc, ms, cluster), newNode(t, bin, "node-b", nc, ms, cluster)}
	for r := range ranges {
		if _, err := obs.m.Assign(ctx, r, nodes[r%2].id); err != nil {
			t.Fatal(err)
		}
	}
	f := newFrontend(t, bin, "frontend", nc, ms, cluster)
	for _, nd := range append(nodes, f) {
		nd.args = append(nd.args, replicated...)
		nd.start(t)
	}
	createSchema(t, session(t, f, ""))
	s := session(t, f, "ks")
	l := &ledger{attempted: map[string]string{}, acked: map[string]string{}}

	if errs := l.concurrently(s, 0, 400, 8, nil); len(errs) != 0 {
		t.Fatalf("%d writes failed on a healthy cluster, e.g. %v", len(errs), errs)
	}
	l.check(t, "healthy", s)

	// 1.
	nc.Servers[0].Kill()
	for i, err := range l.concurrently(s, 400, 1200, 8, nil) {
		if !retriableWrite(err) {
			t.Fatalf("write %d with one NATS server killed: %v, want only retriable errors", i, err)
		}
	}
	l.check(t, "one NATS server killed", s)

	// 2.
	nc.Servers[1].Stop()
	acked := l.ackedCount()
	errs := l.concurrently(s, 1200, 1220, 4, nil)
	if got := l.ackedCount(); got != acked {
		t.Fatalf("%d writes acknowledged with two of three NATS servers stopped", got-acked)
	}
	unavailable := 0
	for i, err := range errs {
		if !retriableWrite(err) {
			t.Fatalf("write %d with two NATS servers stopped: %v, want a retriable error", i, err)
		}
		if code(err) == gocql.ErrCodeUnavailable {
			unavailable++
		}
	}
	if unavailable == 0 {
		t.Fatalf("no write failed as Unavailable with two NATS servers stopped: %v", errs)
	}

	// 3.
	nc.Servers[0].Restart(t)
	nc.Servers[1].Restart(t)
	l.mustWriteAll(t, s, 1220, 1600, 8)
	l.check(t, "NATS servers back", s)

	// 4.
	awaitCatalog(t, nc, ms, 3)
	a := nodes[0]
	a.kill()
	if err := os.RemoveAll(a.dataDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(a.dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The operator gives the replacement the node's ID.
	if err := os.WriteFile(filepath.Join(a.dataDir, "node-id"), []byte(a.id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.start(t)
	l.mustWriteAll(t, s, 1600, 2000, 8)
	l.check(t, "ingest node replaced on an empty disk", s)
}
