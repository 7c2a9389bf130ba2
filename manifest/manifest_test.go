package manifest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// env is an embedded NATS server and a file object store for one test.
type env struct {
	t        testing.TB
	natsDir  string
	storeDir string
	srv      *Embedded
	store    objectstore.Store
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, natsDir: filepath.Join(t.TempDir(), "nats"), storeDir: t.TempDir()}
	e.start(0)
	store, err := objectstore.NewFile(vfs.Default, e.storeDir, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	e.store = store
	t.Cleanup(func() { e.stop() })
	return e
}

func (e *env) start(port int) {
	e.t.Helper()
	srv, err := StartEmbedded(e.natsDir, port)
	if err != nil {
		e.t.Fatal(err)
	}
	e.srv = srv
}

func (e *env) stop() {
	if e.srv != nil {
		e.srv.Shutdown()
		e.srv = nil
	}
}

// connect returns a JetStream context on a connection closed at cleanup.
func (e *env) connect() jetstream.JetStream {
	e.t.Helper()
	nc, err := nats.Connect(e.srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		e.t.Fatal(err)
	}
	return js
}

func (e *env) open(cluster string) *Manifest {
	e.t.Helper()
	m, err := Open(context.Background(), e.connect(), e.store, cluster, Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Tests that commit SSTables cut the ring into testRanges ranges; tokens
// near 0, which the test SSTables hold, are in testRange.
const (
	testRanges = 4
	testRange  = 2
)

func initRanges(t testing.TB, m *Manifest) {
	t.Helper()
	if err := m.InitRanges(context.Background(), testRanges); err != nil {
		t.Fatal(err)
	}
}

var simple = map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}

func usersSpec(ks, name string) TableSpec {
	return TableSpec{
		Keyspace: ks, Name: name,
		Columns: []ColumnSpec{
			{Name: "id", Type: "uuid"}, {Name: "day", Type: "date"}, {Name: "at", Type: "timestamp"},
			{Name: "note", Type: "varchar"}, {Name: "tags", Type: "set<text>"}, {Name: "owner", Type: "text", Static: true},
		},
		PartitionKey: []string{"id", "day"},
		Clustering:   []ClusteringSpec{{Name: "at", Desc: true}},
		Options:      &TableOptions{DefaultTTL: 60, GCGraceSeconds: 3600, Compaction: map[string]string{"class": "LeveledCompactionStrategy"}, Comment: "users"},
	}
}

func TestSchemaDDL(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)

	s0, err := m.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CreateKeyspace(ctx, "ks", simple, true); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateKeyspace(ctx, "ks", simple, true); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	if err := m.CreateType(ctx, "ks", UserType{Name: "addr", Fields: []Field{{"street", "text"}, {"zip", "int"}}}); err != nil {
		t.Fatal(err)
	}
	spec := usersSpec("ks", "Users Table")
	spec.Columns = append(spec.Columns, ColumnSpec{Name: "home", Type: "frozen<addr>"})
	tbl, err := m.CreateTable(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ID == uuid.Nil || tbl.NextColumnID != 7 || !slices.Equal(tbl.PartitionKey, []uint32{1, 2}) ||
		!slices.Equal(tbl.Clustering, []ClusteringKey{{ID: 3, Desc: true}}) {
		t.Fatalf("table %+v", tbl)
	}
	if c, _ := tbl.Column("note"); c.Type != "text" || c.Kind != KindRegular {
		t.Fatalf("note column %+v: want canonical type text", c)
	}
	if c, _ := tbl.Column("owner"); c.Kind != KindStatic {
		t.Fatalf("owner column %+v", c)
	}
	if _, err := m.CreateTable(ctx, spec); !errors.Is(err, ErrExists) {
		t.Fatalf("second create table: %v", err)
	}
	bad := usersSpec("ks", "bad")
	bad.Columns[3].Type = "nosuchtype"
	if _, err := m.CreateTable(ctx, bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad type: %v", err)
	}
	if err := m.DropType(ctx, "ks", "addr"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("drop type in use: %v", err)
	}

	// Drop and re-add: the column gets a new ID; the old one is remembered.
	err = m.AlterTable(ctx, "ks", "Users Table", func(t *Table) error {
		if err := t.DropColumn("note", 1000); err != nil {
			return err
		}
		return t.AddColumn("note", "int", false)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AlterTable(ctx, "ks", "Users Table", func(t *Table) error { return t.DropColumn("id", 1) }); !errors.Is(err, ErrInvalid) {
		t.Fatalf("drop key column: %v", err)
	}
	if err := m.AlterTable(ctx, "ks", "Users Table", func(t *Table) error { t.PartitionKey = t.PartitionKey[:1]; return nil }); !errors.Is(err, ErrInvalid) {
		t.Fatalf("change key: %v", err)
	}
	if err := m.AlterTable(ctx, "ks", "Users Table", func(t *Table) error { t.Clustering[0].Desc = false; return nil }); !errors.Is(err, ErrInvalid) {
		t.Fatalf("change clustering order in place: %v", err)
	}
	if err := m.AlterTable(ctx, "ks", "Users Table", func(t *Table) error { t.Columns[4].ID = 99; t.NextColumnID = 99; return nil }); !errors.Is(err, ErrInvalid) {
		t.Fatalf("renumber a column: %v", err)
	}
	err = m.AlterTable(ctx, "ks", "Users Table", func(t *Table) error {
		t.Options.Comment, t.Options.Compression = "renamed", map[string]string{"class": "ZstdCompressor"}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s1, err := m.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s1.Table("ks", "Users Table")
	if !ok {
		t.Fatal("table missing")
	}
	if c, _ := got.Column("note"); c.ID != 8 || c.Type != "int" {
		t.Fatalf("re-added column %+v, want ID 8", c)
	}
	if len(got.Dropped) != 1 || got.Dropped[0].ID != 4 || got.Dropped[0].DroppedAt != 1000 {
		t.Fatalf("dropped %+v", got.Dropped)
	}
	if got.ID != tbl.ID || got.Options.DefaultTTL != 60 || got.Options.Compaction["class"] != "LeveledCompactionStrategy" ||
		got.Options.Comment != "renamed" || got.Options.Compression["class"] != "ZstdCompressor" {
		t.Fatalf("table %+v", got)
	}
	if s1.Version == s0.Version {
		t.Fatal("schema version did not change")
	}
	if err := m.AlterKeyspace(ctx, "ks", map[string]string{"class": "NetworkTopologyStrategy", "dc1": "3"}, false); err != nil {
		t.Fatal(err)
	}
	s2, _ := m.Schema(ctx)
	if s2.Version == s1.Version || s2.Keyspaces["ks"].Replication["dc1"] != "3" || s2.Keyspaces["ks"].DurableWrites {
		t.Fatalf("after ALTER KEYSPACE: %+v", s2.Keyspaces["ks"])
	}
	if err := m.DropTable(ctx, "ks", "Users Table"); err != nil {
		t.Fatal(err)
	}
	if err := m.DropType(ctx, "ks", "addr"); err != nil {
		t.Fatal(err)
	}
	if err := m.DropKeyspace(ctx, "ks"); err != nil {
		t.Fatal(err)
	}
	if err := m.DropKeyspace(ctx, "ks"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second drop: %v", err)
	}
	// Re-creating a dropped keyspace goes on from its last version, so its
	// archived copies never collide.
	if err := m.CreateKeyspace(ctx, "ks", simple, true); err != nil {
		t.Fatal(err)
	}
	s3, _ := m.Schema(ctx)
	if len(s3.Keyspaces["ks"].Tables) != 0 || s3.Version == s2.Version {
		t.Fatalf("re-created keyspace %+v", s3.Keyspaces["ks"])
	}
}

func TestSchemaVersionDeterministic(t *testing.T) {
	a := map[string]*Keyspace{"x": {Version: uuid.New()}, "y": {Version: uuid.New()}}
	b := map[string]*Keyspace{"y": a["y"], "x": a["x"]}
	if SchemaVersion(a) != SchemaVersion(b) {
		t.Fatal("same keyspaces, different versions")
	}
	b["x"] = &Keyspace{Version: uuid.New()}
	if SchemaVersion(a) == SchemaVersion(b) {
		t.Fatal("changed keyspace, same version")
	}
}

func sst(key string, lo, hi int64) SSTable {
	return SSTable{
		Key: key, Size: 1 << 20, Level: 0, MinToken: lo, MaxToken: hi,
		FirstKey: []byte("a"), LastKey: []byte("z"), MinTimestamp: 1, MaxTimestamp: 2,
		Covers:  []LogPosition{{Node: "n1", Shard: 1, Segment: 7, Offset: 4096, Parts: 2}},
		Created: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
	}
}

func TestSSTableCommits(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	initRanges(t, m)
	tbl := uuid.New()

	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{sst("a", 0, 10), sst("b", 5, 20)}}); err != nil {
		t.Fatal(err)
	}
	// A retried commit is a no-op; a conflicting one is not.
	got, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{sst("a", 0, 10)}})
	if err != nil || len(got) != 2 {
		t.Fatalf("retry: %v %v", got, err)
	}
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{sst("a", 0, 11)}}); !errors.Is(err, ErrExists) {
		t.Fatalf("conflicting add: %v", err)
	}
	// Compaction swap.
	out := sst("c", 0, 20)
	out.Level = 1
	got, err = m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{out}, Remove: []string{"a", "b"}})
	if err != nil || len(got) != 1 || got[0].Key != "c" {
		t.Fatalf("swap: %v %v", got, err)
	}
	// A second compaction of the same inputs finds them gone.
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{sst("d", 0, 20)}, Remove: []string{"a", "b"}}); !errors.Is(err, ErrMissingSSTable) {
		t.Fatalf("stale compaction: %v", err)
	}
	live, err := m.SSTables(ctx, tbl)
	if err != nil || len(live) != 1 || !equalSSTable(live[0], out) {
		t.Fatalf("live %+v %v", live, err)
	}
}

func TestSSTablesAcrossRanges(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	tbl := uuid.New()
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: 0, Add: []SSTable{sst("x", 0, 1)}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("commit before InitRanges: %v", err)
	}
	initRanges(t, m)
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRanges, Add: []SSTable{sst("x", 0, 1)}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("commit to a range past the last: %v", err)
	}
	// Commit in reverse range order; reads come back in range order.
	for r := testRanges - 1; r >= 0; r-- {
		lo, hi := RangeBounds(r, testRanges)
		c := Commit{Table: tbl, Range: r, Add: []SSTable{sst(fmt.Sprintf("r%d", r), lo, hi)}}
		if _, err := m.CommitSSTables(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	v, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	all, err := m.SSTables(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range [][]SSTable{all, v.SSTables(tbl)} {
		if len(got) != testRanges {
			t.Fatalf("%d sstables, want %d", len(got), testRanges)
		}
		for r, s := range got {
			if s.Key != fmt.Sprintf("r%d", r) {
				t.Fatalf("sstable %d is %q: not in range order", r, s.Key)
			}
		}
	}
	in1, err := m.SSTablesInRange(ctx, tbl, 1)
	if err != nil || len(in1) != 1 || in1[0].Key != "r1" || v.SSTablesInRange(tbl, 1)[0].Key != "r1" {
		t.Fatalf("range 1: %+v %v", in1, err)
	}
	if other, _ := m.SSTables(ctx, uuid.New()); other != nil {
		t.Fatalf("unknown table has sstables %+v", other)
	}
}

func equalSSTable(a, b SSTable) bool {
	return fmt.Sprint(normalizeSSTable(a)) == fmt.Sprint(normalizeSSTable(b))
}

func TestFencing(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	const n = 8
	if err := m.InitRanges(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, n); err != nil {
		t.Fatalf("idempotent init: %v", err)
	}
	if err := m.InitRanges(ctx, n+1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("init with another count: %v", err)
	}
	tbl := uuid.New()
	lo, hi := RangeBounds(3, n)
	old, err := m.Assign(ctx, 3, "node-a")
	if err != nil || old.Epoch != 1 {
		t.Fatalf("assign: %+v %v", old, err)
	}
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: 3, Add: []SSTable{sst("a1", lo, hi)}, Epoch: old.Epoch}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: 3, Add: []SSTable{sst("out", lo-1, hi)}, Epoch: old.Epoch}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("sstable outside the range: %v", err)
	}
	cur, err := m.Assign(ctx, 3, "node-b")
	if err != nil || cur.Epoch != 2 || cur.Owner != "node-b" {
		t.Fatalf("reassign: %+v %v", cur, err)
	}
	_, err = m.CommitSSTables(ctx, Commit{Table: tbl, Range: 3, Add: []SSTable{sst("a2", lo, hi)}, Epoch: old.Epoch})
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("stale owner: %v, want ErrFenced", err)
	}
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: 3, Add: []SSTable{sst("b1", lo, hi)}, Epoch: 2}); err != nil {
		t.Fatal(err)
	}
	live, _ := m.SSTables(ctx, tbl)
	if len(live) != 2 || live[0].Key != "a1" || live[1].Key != "b1" {
		t.Fatalf("live %+v", live)
	}
	if _, err := m.Ownership(ctx, 4); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unassigned range: %v", err)
	}

	// Only the owner releases; a release fences the owner out and frees
	// the range for the next Assign.
	if _, err := m.Release(ctx, 3, "node-a"); !errors.Is(err, ErrFenced) {
		t.Fatalf("release by a former owner: %v, want ErrFenced", err)
	}
	if _, err := m.Release(ctx, n, "node-b"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("release of range %d of %d: %v, want ErrInvalid", n, n, err)
	}
	rel, err := m.Release(ctx, 3, "node-b")
	if err != nil || rel.Epoch != 3 || rel.Owner != "" {
		t.Fatalf("release: %+v %v", rel, err)
	}
	if o, err := m.Ownership(ctx, 3); err != nil || o != rel {
		t.Fatalf("ownership after release: %+v %v", o, err)
	}
	if again, err := m.Release(ctx, 3, "node-b"); err != nil || again != rel {
		t.Fatalf("release of a released range: %+v %v", again, err)
	}
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: 3, Add: []SSTable{sst("b2", lo, hi)}, Epoch: 2}); !errors.Is(err, ErrFenced) {
		t.Fatalf("commit after release: %v, want ErrFenced", err)
	}
	if o, err := m.Assign(ctx, 3, "node-c"); err != nil || o.Epoch != 4 || o.Owner != "node-c" {
		t.Fatalf("assign after release: %+v %v", o, err)
	}
	if o, err := m.Release(ctx, 4, "node-c"); err != nil || o != (Ownership{Range: 4}) {
		t.Fatalf("release of a range never assigned: %+v %v", o, err)
	}
}

func TestRanges(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 256, MaxRanges} {
		prevLast := int64(0)
		for r := 0; r < n; r += max(1, n/97) {
			first, last := RangeBounds(r, n)
			if first > last || RangeOf(first, n) != r || RangeOf(last, n) != r {
				t.Fatalf("n=%d r=%d: bounds [%d, %d] map to %d, %d", n, r, first, last, RangeOf(first, n), RangeOf(last, n))
			}
			if r > 0 && RangeOf(first-1, n) != r-1 {
				t.Fatalf("n=%d r=%d: token before the range is in %d", n, r, RangeOf(first-1, n))
			}
			if r == 0 && first != -1<<63 {
				t.Fatalf("n=%d: first range starts at %d", n, first)
			}
			prevLast = last
		}
		if _, last := RangeBounds(n-1, n); last != 1<<63-1 {
			t.Fatalf("n=%d: last range ends at %d (prev %d)", n, last, prevLast)
		}
	}
}

func TestMembersAndLeases(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	m.opts.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	if err := m.Heartbeat(ctx, Member{ID: "n1", Roles: []string{"ingest"}, Addr: "127.0.0.1:7000", Shards: 2}); err != nil {
		t.Fatal(err)
	}
	advance(10 * time.Second)
	if err := m.Heartbeat(ctx, Member{ID: "n2", Roles: []string{"frontend"}, Addr: "127.0.0.1:7001"}); err != nil {
		t.Fatal(err)
	}
	ms, err := m.Members(ctx)
	if err != nil || len(ms) != 2 || ms[0].ID != "n1" || ms[0].Shards != 2 {
		t.Fatalf("members %+v %v", ms, err)
	}
	if ms[0].Live(now, 5*time.Second) || !ms[1].Live(now, 5*time.Second) {
		t.Fatal("liveness by heartbeat age is wrong")
	}
	if err := m.Leave(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if ms, _ = m.Members(ctx); len(ms) != 1 {
		t.Fatalf("after leave: %+v", ms)
	}

	if _, err := m.AcquireLease(ctx, "planner", "n1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AcquireLease(ctx, "planner", "n2", 10*time.Second); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("held lease: %v", err)
	}
	if _, err := m.AcquireLease(ctx, "planner", "n1", 10*time.Second); err != nil {
		t.Fatalf("renew: %v", err)
	}
	advance(11 * time.Second)
	l, err := m.AcquireLease(ctx, "planner", "n2", 10*time.Second)
	if err != nil || l.Holder != "n2" {
		t.Fatalf("expired lease: %+v %v", l, err)
	}
	if err := m.ReleaseLease(ctx, "planner", "n1"); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("release by non-holder: %v", err)
	}
	if err := m.ReleaseLease(ctx, "planner", "n2"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lease(ctx, "planner"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("released lease: %v", err)
	}
}

func TestOpenRejectsBadCluster(t *testing.T) {
	for _, name := range []string{"", "a_b", "a.b", "a b"} {
		if _, err := Open(context.Background(), nil, nil, name, Options{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("cluster %q: %v", name, err)
		}
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

func TestTableOptionsDefaults(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	if err := m.CreateKeyspace(ctx, "ks", simple, true); err != nil {
		t.Fatal(err)
	}
	create := func(name string, o *TableOptions) TableOptions {
		t.Helper()
		spec := usersSpec("ks", name)
		spec.Options = o
		if _, err := m.CreateTable(ctx, spec); err != nil {
			t.Fatal(err)
		}
		ks, err := m.Keyspace(ctx, "ks") // as stored, not as returned
		if err != nil {
			t.Fatal(err)
		}
		return ks.Tables[name].Options
	}
	def := DefaultTableOptions()
	if def.GCGraceSeconds != 864000 || def.DefaultTTL != 0 || def.Compaction["class"] != "SizeTieredCompactionStrategy" ||
		def.Compression["class"] != "LZ4Compressor" || def.Compression["chunk_length_in_kb"] != "16" {
		t.Fatalf("defaults %+v are not Cassandra's", def)
	}
	if got := create("none", nil); !reflect.DeepEqual(got, def) {
		t.Fatalf("options not given: %+v, want %+v", got, def)
	}
	// Integers given are taken as given, gc_grace_seconds = 0 included;
	// missing maps get the defaults, given ones are kept.
	lcs := map[string]string{"class": "LeveledCompactionStrategy"}
	got := create("some", &TableOptions{Comment: "c", Compaction: lcs})
	want := DefaultTableOptions()
	want.GCGraceSeconds, want.Comment, want.Compaction = 0, "c", lcs
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("options partly given: %+v, want %+v", got, want)
	}
	// The defaults are fresh for every call: a caller may change them.
	DefaultTableOptions().Compaction["class"] = "x"
	if DefaultTableOptions().Compaction["class"] != "SizeTieredCompactionStrategy" {
		t.Fatal("DefaultTableOptions shares its maps")
	}
}

// TestTableOptionsOldDocument: a manifest written before the later options
// were stored reads back with Cassandra's defaults for them, and options
// that were stored survive a round trip.
func TestTableOptionsOldDocument(t *testing.T) {
	old := `{"default_time_to_live":5,"gc_grace_seconds":0,"compaction":{"class":"LeveledCompactionStrategy"},"comment":"old"}`
	var got TableOptions
	if err := json.Unmarshal([]byte(old), &got); err != nil {
		t.Fatal(err)
	}
	want := DefaultTableOptions()
	want.DefaultTTL, want.GCGraceSeconds, want.Comment = 5, 0, "old"
	want.Compaction = map[string]string{"class": "LeveledCompactionStrategy"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("old document read as %+v, want %+v", got, want)
	}

	zero := 0.0
	set := DefaultTableOptions()
	set.Caching = map[string]string{"keys": "NONE", "rows_per_partition": "10"}
	set.BloomFilterFPChance, set.CRCCheckChance = 0.1, &zero
	set.MinIndexInterval, set.MaxIndexInterval, set.MemtableFlushPeriod = 64, 64, 1000
	set.SpeculativeRetry, set.AdditionalWritePolicy, set.ReadRepair = "ALWAYS", "50ms", "NONE"
	set.CDC, set.Extensions = true, map[string][]byte{"x": {1, 2}}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	var back TableOptions
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, set) {
		t.Fatalf("round trip %s read as %+v, want %+v", b, back, set)
	}
}

func TestAlterType(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	if err := m.CreateKeyspace(ctx, "ks", simple, true); err != nil {
		t.Fatal(err)
	}
	for _, u := range []UserType{
		{Name: "addr", Fields: []Field{{"street", "text"}, {"zip", "int"}}},
		{Name: "pt", Fields: []Field{{"x", "int"}}},
		{Name: "wrap", Fields: []Field{{"p", "frozen<pt>"}}},
	} {
		if err := m.CreateType(ctx, "ks", u); err != nil {
			t.Fatal(err)
		}
	}
	spec := TableSpec{Keyspace: "ks", Name: "t",
		Columns:      []ColumnSpec{{Name: "k", Type: "frozen<wrap>"}, {Name: "home", Type: "addr"}},
		PartitionKey: []string{"k"}}
	if _, err := m.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	fields := func(name string) []Field {
		t.Helper()
		ks, err := m.Keyspace(ctx, "ks")
		if err != nil {
			t.Fatal(err)
		}
		return ks.Types[name].Fields
	}

	// Add and rename on a type a table uses outside its partition key.
	err := m.AlterType(ctx, "ks", "addr", func(u *UserType) error {
		u.Fields = append(u.Fields, Field{"city", "text"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = m.AlterType(ctx, "ks", "addr", func(u *UserType) error {
		u.Fields[0].Name, u.Fields[2].Name = "line", "town"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fields("addr"), []Field{{"line", "text"}, {"zip", "int"}, {"town", "text"}}; !slices.Equal(got, want) {
		t.Fatalf("addr fields %v, want %v", got, want)
	}

	for name, tc := range map[string]struct {
		typ string
		fn  func(u *UserType) error
		err error
	}{
		"missing type":       {"nope", func(*UserType) error { return nil }, ErrNotFound},
		"remove a field":     {"addr", func(u *UserType) error { u.Fields = u.Fields[:1]; return nil }, ErrInvalid},
		"retype a field":     {"addr", func(u *UserType) error { u.Fields[1].Type = "bigint"; return nil }, ErrInvalid},
		"duplicate name":     {"addr", func(u *UserType) error { u.Fields[0].Name = "zip"; return nil }, ErrInvalid},
		"rename the type":    {"addr", func(u *UserType) error { u.Name = "b"; return nil }, ErrInvalid},
		"circular":           {"pt", func(u *UserType) error { u.Fields = append(u.Fields, Field{"w", "frozen<wrap>"}); return nil }, ErrInvalid},
		"in a partition key": {"pt", func(u *UserType) error { u.Fields = append(u.Fields, Field{"y", "int"}); return nil }, ErrInvalid},
		"unknown field type": {"addr", func(u *UserType) error { u.Fields = append(u.Fields, Field{"y", "nosuch"}); return nil }, ErrInvalid},
	} {
		if err := m.AlterType(ctx, "ks", tc.typ, tc.fn); !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", name, err, tc.err)
		}
	}
	// A rename is fine in a partition key: values are positional.
	if err := m.AlterType(ctx, "ks", "pt", func(u *UserType) error { u.Fields[0].Name = "xx"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := fields("pt"); !slices.Equal(got, []Field{{"xx", "int"}}) {
		t.Fatalf("pt fields %v", got)
	}
}

// TestMembersListedWhileBeating lists the members while each of them
// heartbeats without pause: every listing must hold every member. (A key
// watcher's listing missed keys updated while it ran.)
func TestMembersListedWhileBeating(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	const members = 4
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range members {
		mem := Member{ID: fmt.Sprintf("n%d", i), Roles: []string{"ingest"}, Addr: "127.0.0.1:7000"}
		if err := m.Heartbeat(ctx, mem); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := m.Heartbeat(ctx, mem); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for range 100 {
		ms, err := m.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != members {
			t.Fatalf("listed %d of %d members: %+v", len(ms), members, ms)
		}
	}
}
