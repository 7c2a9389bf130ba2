package cqltest

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/token"
)

func TestStartAndConnect(t *testing.T) {
	srv := Start(t, Options{})
	s := srv.Session(t, "ks")
	Exec(t, s, "CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY, v text)")
	var n int
	if err := s.Query("SELECT count(*) FROM system_schema.tables WHERE keyspace_name = ?", "ks").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("system_schema.tables lists %d tables of ks, want 1", n)
	}
	md, err := s.KeyspaceMetadata("ks")
	if err != nil {
		t.Fatal(err)
	}
	if tm := md.Tables["t"]; tm == nil || len(tm.PartitionKey) != 1 || tm.PartitionKey[0].Name != "k" {
		t.Errorf("gocql's metadata of ks.t: %+v", md.Tables["t"])
	}
}

// TestTokenAwareDriver routes prepared statements by the tokens the
// frontend reports and the partition key indexes of PREPARED.
func TestTokenAwareDriver(t *testing.T) {
	srv := Start(t, Options{})
	srv.Session(t, "ks").Close() // creates the keyspace
	c := srv.Cluster()
	c.Keyspace = "ks"
	c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	s := srv.connect(t, c)
	Exec(t, s, "CREATE TABLE IF NOT EXISTS tok (a int, b text, v int, PRIMARY KEY ((a, b)))")
	for i := range 50 {
		if err := s.Query("INSERT INTO tok (a, b, v) VALUES (?, ?, ?)", i, "x", i).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	var v int
	if err := s.Query("SELECT v FROM tok WHERE a = ? AND b = ?", 42, "x").Scan(&v); err != nil || v != 42 {
		t.Fatalf("SELECT: %d %v", v, err)
	}
	var tok int64
	if err := s.Query("SELECT token(a, b) FROM tok WHERE a = ? AND b = ?", 42, "x").Scan(&tok); err != nil {
		t.Fatal(err)
	}
	pk, err := keys.ComposePartitionKey([][]byte{{0, 0, 0, 42}, []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if want := token.Murmur3(pk); tok != want {
		t.Errorf("token(a, b) = %d, want %d", tok, want)
	}
	routing, err := s.Query("SELECT v FROM tok WHERE a = ? AND b = ?", 42, "x").GetRoutingKey()
	if err != nil || string(routing) != string(pk) {
		t.Fatalf("gocql found no routing key (partition key indexes): %x %v", routing, err)
	}
}

// tracer records the tracing sessions gocql is told about.
type tracer struct{ ids [][]byte }

func (t *tracer) Trace(id []byte) { t.ids = append(t.ids, id) }

// TestTracingRequested: a driver that asks for a trace gets its answer
// without a tracing session (Sediment does not trace), so gocql neither
// fails nor waits for system_traces.
func TestTracingRequested(t *testing.T) {
	srv := Start(t, Options{})
	s := srv.Session(t, "ks")
	// The first write of a fresh server waits for its commit log (seconds
	// on a loaded machine); it is not what this test times out on.
	Exec(t, s, "CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY, v text)", "INSERT INTO t (k, v) VALUES (0, '')")
	tr := &tracer{}
	if err := s.Query("INSERT INTO t (k, v) VALUES (?, ?)", 1, "a").Trace(tr).Exec(); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := s.Query("SELECT v FROM t WHERE k = ?", 1).Trace(tr).Scan(&v); err != nil || v != "a" {
		t.Fatalf("traced SELECT: %q, %v", v, err)
	}
	b := s.NewBatch(gocql.LoggedBatch).Trace(tr)
	b.Query("INSERT INTO t (k, v) VALUES (?, ?)", 2, "b")
	if err := s.ExecuteBatch(b); err != nil {
		t.Fatal(err)
	}
	if len(tr.ids) != 0 {
		t.Fatalf("gocql was given tracing sessions %x", tr.ids)
	}
}

// fatalTB records a Fatalf and stops the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestPaged reads rows one page each through Paged, then again with the
// first page's state marked as seen, as a server that sends it twice
// would make it: that read must fail at the page switch.
func TestPaged(t *testing.T) {
	srv := Start(t, Options{})
	s := srv.Session(t, "ks")
	Exec(t, s, "CREATE TABLE p (k int, c int, PRIMARY KEY (k, c))")
	for c := range 5 {
		Exec(t, s, fmt.Sprintf("INSERT INTO p (k, c) VALUES (1, %d)", c))
	}
	const q = "SELECT c FROM p WHERE k = 1"
	it := Paged(t, s.Query(q).PageSize(1).Iter())
	var got []int
	for c := 0; it.Scan(&c); {
		got = append(got, c)
	}
	if err := it.Close(); err != nil || !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("paged read: %v, %v", got, err)
	}
	if len(it.seen) < 4 { // one at least between each two pages
		t.Fatalf("%d page states seen, want 4 or more", len(it.seen))
	}

	tb := &fatalTB{}
	it = Paged(tb, s.Query(q).PageSize(1).Iter())
	defer it.Close()
	it.seen[string(it.PageState())] = true
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := 0; it.Scan(&c); {
		}
	}()
	<-done // the first page switch fails
	if !strings.Contains(tb.msg, "a second time: the pages do not advance") {
		t.Fatalf("a repeated paging state: failure %q", tb.msg)
	}
}
