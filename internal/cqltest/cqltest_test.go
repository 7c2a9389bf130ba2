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

// TestTracing: a traced request is answered with its tracing session,
// whose row and events system_traces shows, read through gocql's own
// trace writer too; an untraced one leaves no session.
func TestTracing(t *testing.T) {
	srv := Start(t, Options{})
	s := srv.Session(t, "ks")
	Exec(t, s, "CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY, v text)", "INSERT INTO t (k, v) VALUES (0, '')")
	sessions := func() int {
		it := s.Query("SELECT session_id FROM system_traces.sessions").Iter()
		n := it.NumRows()
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := sessions()
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
	// gocql prepares its statements, and traces the PREPARE too.
	if len(tr.ids) < 3 {
		t.Fatalf("gocql was given %d tracing sessions, want one per request", len(tr.ids))
	}
	if n := sessions(); n != before+len(tr.ids) {
		t.Fatalf("%d sessions after %d traced requests, want %d", n, len(tr.ids), before+len(tr.ids))
	}
	var activities, requests []string
	for _, id := range tr.ids {
		var coordinator string
		var duration int
		var request string
		if err := s.Query("SELECT coordinator, duration, request FROM system_traces.sessions WHERE session_id = ?", gocql.UUID(id)).Scan(&coordinator, &duration, &request); err != nil {
			t.Fatalf("session %x: %v", id, err)
		}
		if coordinator != "127.0.0.1" || duration <= 0 || request == "" {
			t.Errorf("session %x: coordinator %q, duration %d, request %q", id, coordinator, duration, request)
		}
		requests = append(requests, request)
		it := s.Query("SELECT activity FROM system_traces.events WHERE session_id = ?", gocql.UUID(id)).Iter()
		var a string
		for it.Scan(&a) {
			activities = append(activities, a)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"Preparing INSERT INTO t", "Executing the prepared statement INSERT", "Applying 1 mutations", "Read 1 rows", "Executing a batch of 1 statements"} {
		if !slices.ContainsFunc(activities, func(a string) bool { return strings.HasPrefix(a, want) }) {
			t.Errorf("no event starting %q in %q", want, activities)
		}
	}
	for _, want := range []string{"Preparing CQL3 query", "Execute CQL3 prepared query", "Execute batch of CQL3 queries"} {
		if !slices.Contains(requests, want) {
			t.Errorf("no session for %q in %q", want, requests)
		}
	}
	// gocql's trace writer reads the same tables.
	var out strings.Builder
	if err := s.Query("SELECT v FROM t WHERE k = ?", 2).Trace(gocql.NewTraceWriter(s, &out)).Scan(&v); err != nil || v != "b" {
		t.Fatalf("SELECT traced by gocql's writer: %q, %v", v, err)
	}
	if !strings.Contains(out.String(), "coordinator: 127.0.0.1") || !strings.Contains(out.String(), "Executing the prepared statement SELECT v FROM t WHERE k = ?") || !strings.Contains(out.String(), "Read 1 rows") {
		t.Errorf("gocql's trace:\n%s", out.String())
	}
	// From SSTables: the trace names them and the block reads (the test
	// server's block cache keeps nothing, so each is a GET; hits are
	// frontend/cache's TestReaderAtTraced).
	srv.Flush(t, "ks", "t")
	tr.ids = nil
	if err := s.Query("SELECT v FROM t WHERE k = ?", 1).Trace(tr).Scan(&v); err != nil || v != "a" {
		t.Fatalf("traced SELECT from SSTables: %q, %v", v, err)
	}
	var fromTables []string
	for _, id := range tr.ids {
		it := s.Query("SELECT activity FROM system_traces.events WHERE session_id = ?", gocql.UUID(id)).Iter()
		var a string
		for it.Scan(&a) {
			fromTables = append(fromTables, a)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"Reading SSTable ", "Merging the memtable slice with 1 SSTables", "Block cache miss: GET from the bucket: "} {
		if !slices.ContainsFunc(fromTables, func(a string) bool { return strings.HasPrefix(a, want) }) {
			t.Errorf("no event starting %q in %q", want, fromTables)
		}
	}
	traced := sessions()
	if err := s.Query("SELECT v FROM t WHERE k = ?", 2).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if n := sessions(); n != traced {
		t.Errorf("%d sessions after an untraced request, want %d", n, traced)
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
