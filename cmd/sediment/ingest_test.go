package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/manifest"
)

const testRanges = 4

// ingestFlags make small nodes that heartbeat often.
var ingestFlags = []string{
	"-ingest.shards=2",
	fmt.Sprintf("-ingest.ranges=%d", testRanges),
	"-node.heartbeat-interval=50ms",
}

// testTable is a table (pk text, ck bigint, v text) created through the
// manifest.
type testTable struct {
	id  storage.TableID
	col uint32 // v's column ID
}

func createTable(t *testing.T, m *manifest.Manifest) testTable {
	t.Helper()
	ctx := context.Background()
	if err := m.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := m.CreateTable(ctx, manifest.TableSpec{
		Keyspace: "ks", Name: "t",
		Columns:      []manifest.ColumnSpec{{Name: "pk", Type: "text"}, {Name: "ck", Type: "bigint"}, {Name: "v", Type: "text"}},
		PartitionKey: []string{"pk"},
		Clustering:   []manifest.ClusteringSpec{{Name: "ck"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := tbl.Column("v")
	if !ok {
		t.Fatal("no column v")
	}
	return testTable{id: storage.TableIDOf(tbl.ID), col: v.ID}
}

// row is the mutation that sets v of row (pk, ck).
func (tt testTable) row(t *testing.T, pk string, ck int64, v string) *storage.Mutation {
	t.Helper()
	c := binary.BigEndian.AppendUint64(nil, uint64(ck))
	key, err := keys.RowKey(nil, token.Murmur3([]byte(pk)), []byte(pk), [][]byte{c}, []*cqltype.Type{cqltype.BigintType}, []bool{false})
	if err != nil {
		t.Fatal(err)
	}
	value := model.AppendRow(nil, &model.Row{Cells: []model.Cell{{Column: tt.col, Timestamp: 1 + ck, Value: []byte(v)}}})
	return &storage.Mutation{Table: tt.id, Entries: []storage.Entry{{Key: key, Value: value}}}
}

// drain returns v of every row of it, by storage key.
func drain(t *testing.T, it kv.Iterator) map[string]string {
	t.Helper()
	out := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		var r model.Row
		if err := model.DecodeRow(it.Value(), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Cells) != 1 {
			t.Fatalf("row has %d cells", len(r.Cells))
		}
		out[string(it.Key())] = string(r.Cells[0].Value)
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// memtables returns what the process's ingest node holds of table.
func memtables(t *testing.T, s *Sediment, tt testTable) map[string]string {
	t.Helper()
	return drain(t, s.ingester.Node().NewIter(tt.id, nil, nil))
}

// sstables returns what the SSTables live in the manifest hold of table.
func sstables(t *testing.T, s *Sediment, tt testTable) map[string]string {
	t.Helper()
	it, err := s.ingester.Committer().NewIter(context.Background(), tt.id, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return drain(t, it)
}

// read reads table as the read path does: memtables merged with SSTables.
func read(t *testing.T, s *Sediment, tt testTable) map[string]string {
	t.Helper()
	mem := s.ingester.Node().NewIter(tt.id, nil, nil)
	sst, err := s.ingester.Committer().NewIter(context.Background(), tt.id, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return drain(t, kv.Merging(model.Merge, mem, sst))
}

// checkOwnsAll checks that node owns every range at epoch.
func checkOwnsAll(t *testing.T, m *manifest.Manifest, node string, epoch uint64) {
	t.Helper()
	for r := range testRanges {
		o, err := m.Ownership(context.Background(), r)
		if err != nil || o.Owner != node || o.Epoch != epoch {
			t.Fatalf("range %d: %+v, %v; want owner %s at epoch %d", r, o, err, node, epoch)
		}
	}
}

// member returns the member id, failing if it is absent.
func member(t *testing.T, m *manifest.Manifest, id string) manifest.Member {
	t.Helper()
	mems, err := m.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, mem := range mems {
		if mem.ID == id {
			return mem
		}
	}
	t.Fatalf("node %s is not among the members %+v", id, mems)
	return manifest.Member{}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunIngestKeepsWritesAcrossRestarts(t *testing.T) {
	dataDir := t.TempDir()
	ctx := context.Background()

	// First start: a new node claims every range and takes writes.
	p := startProcess(t, dataDir, ingestFlags...)
	p.waitReady(t)
	id := p.s.ingester.NodeID()
	if b, err := os.ReadFile(filepath.Join(dataDir, nodeIDFile)); err != nil || strings.TrimSpace(string(b)) != id {
		t.Fatalf("%s holds %q, %v; want %q", nodeIDFile, b, err, id)
	}
	m := p.s.manifest
	checkOwnsAll(t, m, id, 1)
	mem := member(t, m, id)
	if http := fmt.Sprintf("127.0.0.1:%d", p.httpPort); !strings.HasPrefix(mem.Addr, "127.0.0.1:") || mem.Addr == http || mem.Shards != 2 || !slices.Equal(mem.Roles, slices.Sorted(slices.Values(Targets))) {
		t.Fatalf("member %+v, want the RPC address on 127.0.0.1, 2 shards, roles %v", mem, Targets)
	}
	waitFor(t, "a renewed heartbeat", func() bool { return member(t, m, id).Heartbeat.After(mem.Heartbeat) })

	tt := createTable(t, m)
	want := map[string]string{}
	for i := range 40 {
		mut := tt.row(t, fmt.Sprintf("p%d", i%10), int64(i), fmt.Sprintf("v%d", i))
		if err := p.s.ingester.Node().Apply(ctx, mut); err != nil {
			t.Fatal(err)
		}
		want[string(mut.Entries[0].Key)] = fmt.Sprintf("v%d", i)
	}
	if got := read(t, p.s, tt); !maps.Equal(got, want) {
		t.Fatalf("before restart: read %d rows, want %d", len(got), len(want))
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", p.httpPort))
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(metrics), `sediment_ingest_mutations_total{shard=`) {
		t.Fatalf("/metrics lacks the ingest node's metrics (%v):\n%s", err, metrics)
	}
	p.stop(t)

	// Second start: the same node takes its ranges back, and the stop's
	// flush left nothing to replay: the SSTables hold every write.
	p2 := startProcess(t, dataDir, ingestFlags...)
	p2.waitReady(t)
	if p2.s.ingester.NodeID() != id {
		t.Fatalf("node id %s after restart, want %s", p2.s.ingester.NodeID(), id)
	}
	m2 := p2.s.manifest
	checkOwnsAll(t, m2, id, 2)
	if mems, err := m2.Members(ctx); err != nil || len(nodeMembers(mems)) != 1 || nodeMembers(mems)[0].ID != id {
		t.Fatalf("members after restart: %+v, %v", mems, err)
	}
	if got := memtables(t, p2.s, tt); len(got) != 0 {
		t.Fatalf("%d rows replayed although the stop flushed", len(got))
	}
	if replayed := regexp.MustCompile(`replayed commitlog".* records=(\d+)`).FindAllStringSubmatch(p2.log.String(), -1); len(replayed) != 2 || replayed[0][1] != "0" || replayed[1][1] != "0" {
		t.Fatalf("the restarted node replayed commitlog records:\n%s", p2.log)
	}
	if got := sstables(t, p2.s, tt); !maps.Equal(got, want) {
		t.Fatalf("SSTables hold %d rows, want %d", len(got), len(want))
	}
	p2.stop(t)
}

// TestRunIngestLeaveOnStop stops a node with -ingest.leave-on-stop: it
// flushes, releases its ranges and leaves; a new node then claims every
// range and reads the first node's writes from SSTables.
func TestRunIngestLeaveOnStop(t *testing.T) {
	srv, err := manifest.StartEmbedded(filepath.Join(t.TempDir(), "nats"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	cluster := append(ingestFlags, "-target=ingest", "-manifest.nats-url="+srv.URL(), "-objectstore.dir="+t.TempDir())
	ctx := context.Background()

	p := startProcess(t, t.TempDir(), append(cluster, "-ingest.leave-on-stop")...)
	p.waitReady(t)
	first := p.s.ingester.NodeID()
	checkOwnsAll(t, p.s.manifest, first, 1)
	tt := createTable(t, p.s.manifest)
	want := map[string]string{}
	for i := range 40 {
		mut := tt.row(t, fmt.Sprintf("p%d", i%10), int64(i), fmt.Sprintf("v%d", i))
		if err := p.s.ingester.Node().Apply(ctx, mut); err != nil {
			t.Fatal(err)
		}
		want[string(mut.Entries[0].Key)] = fmt.Sprintf("v%d", i)
	}
	p.stop(t)
	if !strings.Contains(p.log.String(), "released=4") {
		t.Fatalf("the leaving node does not log its released ranges:\n%s", p.log)
	}

	p2 := startProcess(t, t.TempDir(), cluster...)
	p2.waitReady(t)
	second := p2.s.ingester.NodeID()
	if second == first {
		t.Fatalf("two data directories share node id %s", first)
	}
	// Released at epoch 2, claimed at 3.
	checkOwnsAll(t, p2.s.manifest, second, 3)
	// The member list is read from NATS, which may answer late under load.
	waitFor(t, "the second node alone in the member list", func() bool {
		mems, err := p2.s.manifest.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(mems) == 1 && mems[0].ID == second
	})
	if got := sstables(t, p2.s, tt); !maps.Equal(got, want) {
		t.Fatalf("SSTables hold %d rows of the leaving node's writes, want %d", len(got), len(want))
	}
	if got := read(t, p2.s, tt); !maps.Equal(got, want) {
		t.Fatalf("the new owner reads %d rows, want %d", len(got), len(want))
	}
	// It commits into the ranges it claimed.
	extra := tt.row(t, "late", 1, "late")
	if err := p2.s.ingester.Node().Apply(ctx, extra); err != nil {
		t.Fatal(err)
	}
	want[string(extra.Entries[0].Key)] = "late"
	if err := p2.s.ingester.Node().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sstables(t, p2.s, tt); !maps.Equal(got, want) {
		t.Fatalf("after the new owner's flush the SSTables hold %d rows, want %d", len(got), len(want))
	}
	p2.stop(t)
}

func TestRunIngestLeavesOtherNodesRanges(t *testing.T) {
	ctx := context.Background()
	firstDir, secondDir := t.TempDir(), t.TempDir()
	p := startProcess(t, firstDir, ingestFlags...)
	p.waitReady(t)
	first := p.s.ingester.NodeID()

	// A second ingest node of the same cluster finds no free range.
	p2 := startProcess(t, secondDir, append(append(ingestFlags, "-target=ingest",
		"-objectstore.dir="+filepath.Join(firstDir, "objects")), p.natsFlags()...)...)
	p2.waitReady(t)
	second := p2.s.ingester.NodeID()
	if second == first {
		t.Fatalf("two data directories share node id %s", first)
	}
	checkOwnsAll(t, p.s.manifest, first, 1)
	if mem := member(t, p.s.manifest, second); !slices.Equal(mem.Roles, []string{Ingest}) {
		t.Fatalf("second member %+v, want the ingest role only", mem)
	}
	if !strings.Contains(p2.log.String(), "owned=0") {
		t.Fatalf("the second node does not log that it owns no range:\n%s", p2.log)
	}
	p2.stop(t)
	if mems, err := p.s.manifest.Members(ctx); err != nil || len(nodeMembers(mems)) != 1 || nodeMembers(mems)[0].ID != first {
		t.Fatalf("members after the second node stopped: %+v, %v", mems, err)
	}

	// The ranges are fixed by the first node: another count is refused.
	p3 := startProcess(t, t.TempDir(), append(p.natsFlags(), "-target=ingest", "-ingest.ranges=8",
		"-objectstore.dir="+filepath.Join(firstDir, "objects"))...)
	var err error
	select {
	case err = <-p3.done:
		p3.done <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("a node with another range count started\n%s", p3.log)
	}
	if err == nil || !strings.Contains(err.Error(), "-ingest.ranges") || !strings.Contains(err.Error(), "4 ranges") {
		t.Fatalf("run = %v, want an error about the range count", err)
	}
	p.stop(t)
}
