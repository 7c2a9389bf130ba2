package exec_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// clock is a test clock that a test can move forward.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// emptyValue is sent as the empty value (zero bytes, not null), which
// gocql's own marshalling of an int never sends.
type emptyValue struct{}

func (emptyValue) MarshalCQL(gocql.TypeInfo) ([]byte, error) { return []byte{}, nil }

// writeEnv is what each write test gets: a server shared by all of them,
// its clock, and a session on the test's own keyspace ks.
type writeEnv struct {
	srv *cqltest.Server
	clk *clock
	s   *gocql.Session
	ks  string
}

// TestWrite runs the write tests against one server (starting one costs
// more than most of them), each in a keyspace of its own.
func TestWrite(t *testing.T) {
	clk := &clock{}
	srv := cqltest.Start(t, cqltest.Options{Now: clk.now})
	for _, tc := range []struct {
		name string
		test func(*testing.T, *writeEnv)
	}{
		{"InsertUpdateDelete", testWriteInsertUpdateDelete},
		{"Collections", testWriteCollections},
		{"Validation", testWriteValidation},
		{"Conditional", testWriteConditional},
		{"Counters", testWriteCounters},
		{"Batch", testWriteBatch},
		{"InsertJSON", testWriteInsertJSON},
		{"Edges", testWriteEdges},
		{"ConditionElements", testWriteConditionElements},
		{"AcrossFlush", testWriteAcrossFlush},
		{"MultiColumn", testWriteMultiColumn},
		{"ConditionOrder", testWriteConditionOrder},
		{"TTL", testWriteTTL}, // last: it moves the shared clock on
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := "w_" + strings.ToLower(tc.name)
			tc.test(t, &writeEnv{srv: srv, clk: clk, s: srv.Session(t, ks), ks: ks})
		})
	}
}

// mustExec runs statements, failing the test on the first error.
func mustExec(t *testing.T, s *gocql.Session, stmts ...string) {
	t.Helper()
	for _, st := range stmts {
		if err := s.Query(st).Exec(); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
}

// wantInvalid runs a statement that must fail with a message containing
// msg.
func wantInvalid(t *testing.T, s *gocql.Session, msg, stmt string, args ...any) {
	t.Helper()
	err := s.Query(stmt, args...).Exec()
	if err == nil {
		t.Fatalf("%s: no error, want %q", stmt, msg)
	}
	var re gocql.RequestError
	if !errors.As(err, &re) || !strings.Contains(re.Message(), msg) {
		t.Fatalf("%s: error %v, want %q", stmt, err, msg)
	}
}

// rows returns the rows of a query as maps.
func rows(t *testing.T, s *gocql.Session, stmt string, args ...any) []map[string]any {
	t.Helper()
	out, err := s.Query(stmt, args...).Iter().SliceMap()
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	return out
}

// one returns the single row of a query, nil if there is none.
func one(t *testing.T, s *gocql.Session, stmt string, args ...any) map[string]any {
	t.Helper()
	rs := rows(t, s, stmt, args...)
	switch len(rs) {
	case 0:
		return nil
	case 1:
		return rs[0]
	}
	t.Fatalf("%s: %d rows, want at most one", stmt, len(rs))
	return nil
}

func wantRow(t *testing.T, got map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Fatalf("column %s = %#v, want %#v (row %v)", k, got[k], v, got)
		}
	}
}

func testWriteInsertUpdateDelete(t *testing.T, e *writeEnv) {
	s := e.s
	mustExec(t, s,
		"CREATE TABLE kv (k int, c int, v text, n int, s text static, PRIMARY KEY (k, c))",
		"INSERT INTO kv (k, c, v, n) VALUES (1, 1, 'a', 10)",
		"INSERT INTO kv (k, c, v) VALUES (1, 2, 'b')",
		"UPDATE kv SET v = 'c' WHERE k = 1 AND c = 3",
		"UPDATE kv SET s = 'static' WHERE k = 1",
	)
	wantRow(t, one(t, s, "SELECT * FROM kv WHERE k = 1 AND c = 1"), map[string]any{"v": "a", "n": 10, "s": "static"})
	wantRow(t, one(t, s, "SELECT * FROM kv WHERE k = 1 AND c = 3"), map[string]any{"v": "c", "n": 0})

	// INSERT leaves missing columns alone; null writes a tombstone.
	mustExec(t, s, "INSERT INTO kv (k, c, n) VALUES (1, 1, 11)")
	wantRow(t, one(t, s, "SELECT v, n FROM kv WHERE k = 1 AND c = 1"), map[string]any{"v": "a", "n": 11})
	mustExec(t, s, "INSERT INTO kv (k, c, v) VALUES (1, 1, null)")
	wantRow(t, one(t, s, "SELECT v, n FROM kv WHERE k = 1 AND c = 1"), map[string]any{"v": "", "n": 11})

	// An INSERTed row lives without columns; an UPDATEd one does not.
	mustExec(t, s, "DELETE v FROM kv WHERE k = 1 AND c = 2", "DELETE v FROM kv WHERE k = 1 AND c = 3")
	if one(t, s, "SELECT * FROM kv WHERE k = 1 AND c = 2") == nil {
		t.Fatal("the INSERTed row died with its last column")
	}
	if r := one(t, s, "SELECT * FROM kv WHERE k = 1 AND c = 3"); r != nil {
		t.Fatalf("the UPDATEd row outlived its last column: %v", r)
	}

	// IN on the partition key writes one mutation per key; IN on
	// clustering, one row per value.
	mustExec(t, s, "UPDATE kv SET n = 5 WHERE k IN (2, 3) AND c IN (1, 2)")
	if got := len(rows(t, s, "SELECT * FROM kv WHERE k IN (2, 3)")); got != 4 {
		t.Fatalf("IN update wrote %d rows, want 4", got)
	}

	// Prepared, with null and unset values.
	q := s.Query("UPDATE kv SET v = ?, n = ? WHERE k = ? AND c = ?", "p", gocql.UnsetValue, 2, 1)
	if err := q.Exec(); err != nil {
		t.Fatal(err)
	}
	wantRow(t, one(t, s, "SELECT v, n FROM kv WHERE k = 2 AND c = 1"), map[string]any{"v": "p", "n": 5})

	// Deletions: a row, a clustering range, a static column, a partition.
	mustExec(t, s,
		"INSERT INTO kv (k, c, v) VALUES (4, 1, 'x')",
		"INSERT INTO kv (k, c, v) VALUES (4, 2, 'x')",
		"INSERT INTO kv (k, c, v) VALUES (4, 3, 'x')",
		"INSERT INTO kv (k, c, v) VALUES (4, 4, 'x')",
		"UPDATE kv SET s = 'st' WHERE k = 4",
		"DELETE FROM kv WHERE k = 4 AND c = 1",
		"DELETE FROM kv WHERE k = 4 AND c > 1 AND c <= 3",
	)
	if got := rows(t, s, "SELECT c FROM kv WHERE k = 4"); len(got) != 1 || got[0]["c"] != 4 {
		t.Fatalf("after row and range deletions: %v", got)
	}
	mustExec(t, s, "DELETE s FROM kv WHERE k = 4")
	wantRow(t, one(t, s, "SELECT c, s FROM kv WHERE k = 4"), map[string]any{"c": 4, "s": ""})
	mustExec(t, s, "DELETE FROM kv WHERE k = 4")
	if got := rows(t, s, "SELECT * FROM kv WHERE k = 4"); len(got) != 0 {
		t.Fatalf("after the partition deletion: %v", got)
	}

	// USING TIMESTAMP: an older write loses to a newer one.
	mustExec(t, s,
		"INSERT INTO kv (k, c, v) VALUES (5, 1, 'new') USING TIMESTAMP 2000",
		"INSERT INTO kv (k, c, v) VALUES (5, 1, 'old') USING TIMESTAMP 1000",
		"DELETE FROM kv USING TIMESTAMP 1500 WHERE k = 5 AND c = 1",
	)
	wantRow(t, one(t, s, "SELECT v, writetime(v) AS w FROM kv WHERE k = 5 AND c = 1"), map[string]any{"v": "new", "w": int64(2000)})
	mustExec(t, s, "DELETE FROM kv USING TIMESTAMP 2000 WHERE k = 5 AND c = 1")
	if r := one(t, s, "SELECT * FROM kv WHERE k = 5 AND c = 1"); r != nil {
		t.Fatalf("a deletion at the write's timestamp left %v", r)
	}
}

func testWriteCollections(t *testing.T, e *writeEnv) {
	s := e.s
	mustExec(t, s,
		"CREATE TYPE addr (street text, zip int)",
		"CREATE TABLE c (k int PRIMARY KEY, l list<int>, st set<text>, m map<text, int>, fl frozen<list<int>>, a addr, fa frozen<addr>)",
		"INSERT INTO c (k, l, st, m, fl) VALUES (1, [1, 2], {'b', 'a'}, {'x': 1}, [9, 8])",
	)
	get := func() map[string]any { return one(t, s, "SELECT l, st, m, fl, a FROM c WHERE k = 1") }
	wantRow(t, get(), map[string]any{"l": []int{1, 2}, "st": []string{"a", "b"}, "m": map[string]int{"x": 1}, "fl": []int{9, 8}})

	mustExec(t, s,
		"UPDATE c SET l = l + [3, 4] WHERE k = 1",
		"UPDATE c SET l = [0] + l WHERE k = 1",
		"UPDATE c SET l = [-2, -1] + l WHERE k = 1",
	)
	wantRow(t, get(), map[string]any{"l": []int{-2, -1, 0, 1, 2, 3, 4}})
	mustExec(t, s,
		"UPDATE c SET l[2] = 100 WHERE k = 1",
		"DELETE l[0] FROM c WHERE k = 1",
		"UPDATE c SET l = l - [1, 3] WHERE k = 1",
	)
	wantRow(t, get(), map[string]any{"l": []int{-1, 100, 2, 4}})
	wantInvalid(t, s, "List index 10 out of bound, list has size 4", "UPDATE c SET l[10] = 1 WHERE k = 1")
	wantInvalid(t, s, "Attempted to set an element on a list which is null", "UPDATE c SET l[0] = 1 WHERE k = 2")

	// Overwriting a whole collection replaces it.
	mustExec(t, s, "UPDATE c SET l = [7] WHERE k = 1")
	wantRow(t, get(), map[string]any{"l": []int{7}})

	mustExec(t, s,
		"UPDATE c SET st = st + {'c', 'd'} WHERE k = 1",
		"UPDATE c SET st = st - {'a'} WHERE k = 1",
		"UPDATE c SET m = m + {'y': 2, 'z': 3} WHERE k = 1",
		"UPDATE c SET m['x'] = 10 WHERE k = 1",
		"UPDATE c SET m = m - {'y'} WHERE k = 1",
		"DELETE m['z'] FROM c WHERE k = 1",
	)
	wantRow(t, get(), map[string]any{"st": []string{"b", "c", "d"}, "m": map[string]int{"x": 10}})
	mustExec(t, s, "UPDATE c SET st = {'only'}, m = {} WHERE k = 1")
	wantRow(t, get(), map[string]any{"st": []string{"only"}, "m": map[string]int(nil)})

	// Non-frozen user type: whole value, then one field.
	mustExec(t, s,
		"UPDATE c SET a = {street: 'main', zip: 1} WHERE k = 1",
		"UPDATE c SET a.zip = 2 WHERE k = 1",
	)
	wantRow(t, get(), map[string]any{"a": map[string]any{"street": "main", "zip": 2}})
	mustExec(t, s, "DELETE a.street FROM c WHERE k = 1")
	wantRow(t, get(), map[string]any{"a": map[string]any{"street": "", "zip": 2}})

	// Prepared collection values.
	if err := s.Query("UPDATE c SET l = l + ?, m[?] = ? WHERE k = ?", []int{8}, "q", 5, 1).Exec(); err != nil {
		t.Fatal(err)
	}
	wantRow(t, get(), map[string]any{"l": []int{7, 8}, "m": map[string]int{"q": 5}})

	wantInvalid(t, s, "for frozen collection column fl", "UPDATE c SET fl = fl + [1] WHERE k = 1")
	wantInvalid(t, s, "Invalid operation (fa.zip = 1) for frozen UDT column fa", "UPDATE c SET fa.zip = 1 WHERE k = 1")
}

func testWriteTTL(t *testing.T, e *writeEnv) {
	s, clk := e.s, e.clk
	mustExec(t, s,
		"CREATE TABLE ttl (k int PRIMARY KEY, v int, w int)",
		"CREATE TABLE dttl (k int PRIMARY KEY, v int) WITH default_time_to_live = 1000",
		"INSERT INTO ttl (k, v) VALUES (1, 1) USING TTL 10",
		"INSERT INTO ttl (k, v, w) VALUES (2, 2, 2) USING TTL 1000",
		"UPDATE ttl USING TTL 0 SET w = 3 WHERE k = 2",
		"UPDATE ttl USING TTL 10 SET v = 3 WHERE k = 3",
		"INSERT INTO dttl (k, v) VALUES (1, 1)",
		"INSERT INTO dttl (k, v) VALUES (2, 2) USING TTL 0",
	)
	wantRow(t, one(t, s, "SELECT ttl(v) AS tv, ttl(w) AS tw FROM ttl WHERE k = 2"), map[string]any{"tw": 0})
	// A second may pass between the write and the read.
	if r := one(t, s, "SELECT ttl(v) AS t FROM dttl WHERE k = 1"); r["t"] != 1000 && r["t"] != 999 {
		t.Fatalf("the table's default TTL was not applied: %v", r)
	}
	wantRow(t, one(t, s, "SELECT ttl(v) AS t FROM dttl WHERE k = 2"), map[string]any{"t": 0})
	wantInvalid(t, s, "A TTL must be greater or equal to 0, but was -1", "INSERT INTO ttl (k, v) VALUES (3, 3) USING TTL -1")
	wantInvalid(t, s, "ttl is too large. requested (630720001) maximum (630720000)", "INSERT INTO ttl (k, v) VALUES (3, 3) USING TTL 630720001")
	if err := s.Query("INSERT INTO ttl (k, v) VALUES (?, ?) USING TTL ?", 4, 4, 10).Exec(); err != nil {
		t.Fatal(err)
	}

	clk.advance(11 * time.Second)
	for _, k := range []int{1, 3, 4} {
		if r := one(t, s, "SELECT * FROM ttl WHERE k = ?", k); r != nil {
			t.Fatalf("row %d with TTL 10 lives 11s later: %v", k, r)
		}
	}
	wantRow(t, one(t, s, "SELECT v, w FROM ttl WHERE k = 2"), map[string]any{"v": 2, "w": 3})
	clk.advance(1000 * time.Second)
	// The row marker expired with v; w, written with TTL 0, keeps the row.
	wantRow(t, one(t, s, "SELECT v, w FROM ttl WHERE k = 2"), map[string]any{"v": 0, "w": 3})
	if r := one(t, s, "SELECT * FROM dttl WHERE k = 1"); r != nil {
		t.Fatalf("the default TTL did not expire the row: %v", r)
	}
	if one(t, s, "SELECT * FROM dttl WHERE k = 2") == nil {
		t.Fatal("USING TTL 0 did not override the default TTL")
	}
}

func testWriteValidation(t *testing.T, e *writeEnv) {
	s := e.s
	mustExec(t, s,
		"CREATE TABLE v (a int, b int, c int, d int, e int, s int static, PRIMARY KEY ((a, b), c, d))",
		"CREATE TABLE cnt (k int PRIMARY KEY, n counter)",
	)
	for _, tc := range []struct{ stmt, msg string }{
		{"UPDATE v SET e = 1 WHERE a = 1 AND c = 1 AND d = 1", "Some partition key parts are missing: b"},
		{"UPDATE v SET e = 1 WHERE a = 1 AND b = 1 AND c = 1", "Some clustering keys are missing: d"},
		{"UPDATE v SET e = 1 WHERE a = 1 AND b = 1 AND c = 1 AND d = 1 AND e = 1", "Non PRIMARY KEY columns found in where clause: e"},
		{"UPDATE v SET e = 1 WHERE a > 1 AND b = 1 AND c = 1 AND d = 1", "Only EQ and IN relation are supported on the partition key"},
		{"UPDATE v SET c = 1 WHERE a = 1 AND b = 1 AND c = 1 AND d = 1", "PRIMARY KEY part c found in SET part"},
		{"UPDATE v SET e = 1 WHERE a = 1 AND b = 1 AND c > 1 AND d = 1", "Slice restrictions are not supported on the clustering columns in UPDATE statements"},
		{"UPDATE v SET s = 1 WHERE a = 1 AND b = 1 AND c = 1 AND d = 1", "Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns"},
		{"UPDATE v SET zz = 1 WHERE a = 1 AND b = 1 AND c = 1 AND d = 1", "Undefined column name zz"},
		{"INSERT INTO v (a, b, c, d, e) VALUES (1, 1, 1, 1)", "Unmatched column names/values"},
		{"INSERT INTO v (a, b, c, d, d) VALUES (1, 1, 1, 1, 1)", "The column names contains duplicates"},
		{"INSERT INTO v (a, b, c, d) VALUES (1, null, 1, 1)", "Invalid null value in condition for column b"},
		{"DELETE e FROM v WHERE a = 1 AND b = 1 AND c = 1", "Range deletions are not supported for specific columns"},
		{"DELETE e FROM v WHERE a = 1 AND b = 1 AND c = 1 AND d > 1", "Range deletions are not supported for specific columns"},
		{"DELETE FROM v WHERE a = 1 AND b = 1 AND d = 1", "PRIMARY KEY column \"d\" cannot be restricted as preceding column \"c\" is not restricted"},
		{"INSERT INTO cnt (k, n) VALUES (1, 1)", "INSERT statements are not allowed on counter tables, use UPDATE instead"},
		{"UPDATE cnt SET n = 1 WHERE k = 1", "Cannot set the value of counter column n (counters can only be incremented/decremented, not set)"},
		{"UPDATE v SET e = e + 1 WHERE a = 1 AND b = 1 AND c = 1 AND d = 1", "Invalid operation (e = e + 1) for non counter column e"},
		{"UPDATE cnt USING TTL 10 SET n = n + 1 WHERE k = 1", "Cannot provide custom TTL for counter updates"},
		{"UPDATE cnt USING TIMESTAMP 10 SET n = n + 1 WHERE k = 1", "Cannot provide custom timestamp for counter updates"},
		{"UPDATE cnt SET n = n + 1 WHERE k = 1 IF EXISTS", "Conditional updates are not supported on counter tables"},
		{"UPDATE v SET e = 1 WHERE a IN (1, 2) AND b = 1 AND c = 1 AND d = 1 IF EXISTS", "IN on the partition key is not supported with conditional updates"},
		{"UPDATE v USING TIMESTAMP 5 SET e = 1 WHERE a = 1 AND b = 1 AND c = 1 AND d = 1 IF e = 1", "Cannot provide custom timestamp for conditional updates"},
		{"UPDATE v SET e = 1 WHERE a = 1 AND b = 1 AND c = 1 AND d = 1 IF c = 1", "PRIMARY KEY column 'c' cannot have IF conditions"},
		{"UPDATE v SET e = 1 WHERE a = 1 AND b = 1 AND c = 1 AND d = 1 IF e < null", "Invalid comparison with null for operator \"<\""},
		{"BEGIN BATCH UPDATE cnt SET n = n + 1 WHERE k = 1; APPLY BATCH", "Cannot include a counter statement in a logged batch"},
		{"BEGIN COUNTER BATCH INSERT INTO v (a, b, c, d) VALUES (1, 1, 1, 1); APPLY BATCH", "Cannot include non-counter statement in a counter batch"},
		{"BEGIN BATCH USING TIMESTAMP 1 INSERT INTO v (a, b, c, d) VALUES (1, 1, 1, 1) USING TIMESTAMP 2; APPLY BATCH", "Timestamp must be set either on BATCH or individual statements"},
		{"BEGIN BATCH INSERT INTO v (a, b, c, d) VALUES (1, 1, 1, 1) IF NOT EXISTS; INSERT INTO v (a, b, c, d) VALUES (2, 1, 1, 1); APPLY BATCH", "Batch with conditions cannot span multiple partitions"},
	} {
		wantInvalid(t, s, tc.msg, tc.stmt)
	}
}

func testWriteConditional(t *testing.T, e *writeEnv) {
	s := e.s
	mustExec(t, s, "CREATE TABLE lwt (k int, c int, v text, m map<text, int>, s int static, PRIMARY KEY (k, c))")

	if ok, _ := cas(t, s, "INSERT INTO lwt (k, c, v) VALUES (1, 1, 'a') IF NOT EXISTS"); !ok {
		t.Fatal("IF NOT EXISTS on a new row was not applied")
	}
	ok, cur := cas(t, s, "INSERT INTO lwt (k, c, v) VALUES (1, 1, 'b') IF NOT EXISTS")
	if ok {
		t.Fatal("IF NOT EXISTS on an existing row was applied")
	}
	wantRow(t, cur, map[string]any{"k": 1, "c": 1, "v": "a"})
	wantRow(t, one(t, s, "SELECT v FROM lwt WHERE k = 1 AND c = 1"), map[string]any{"v": "a"})

	if ok, _ := cas(t, s, "UPDATE lwt SET v = 'b' WHERE k = 1 AND c = 1 IF v = 'a'"); !ok {
		t.Fatal("a condition that holds was not applied")
	}
	ok, cur = cas(t, s, "UPDATE lwt SET v = 'c' WHERE k = 1 AND c = 1 IF v = 'a'")
	if ok || cur["v"] != "b" || len(cur) != 1 {
		t.Fatalf("failed condition: applied %v, current %v (want only v = b)", ok, cur)
	}
	if ok, _ := cas(t, s, "UPDATE lwt SET v = 'd' WHERE k = 1 AND c = 1 IF v IN ('x', 'b') AND m = null"); !ok {
		t.Fatal("IN condition not applied")
	}
	if ok, _ := cas(t, s, "UPDATE lwt SET m = {'x': 1} WHERE k = 1 AND c = 1 IF v > 'c'"); !ok {
		t.Fatal("> condition not applied")
	}
	if ok, _ := cas(t, s, "UPDATE lwt SET v = 'e' WHERE k = 1 AND c = 1 IF m['x'] = ?", 1); !ok {
		t.Fatal("map element condition not applied")
	}
	ok, cur = cas(t, s, "UPDATE lwt SET v = 'f' WHERE k = 1 AND c = 1 IF m['x'] = 2")
	if ok || !reflect.DeepEqual(cur["m"], map[string]int{"x": 1}) {
		t.Fatalf("failed element condition: applied %v, current %v", ok, cur)
	}

	// IF EXISTS on a missing row: [applied] false and nothing else.
	applied, err := s.Query("UPDATE lwt SET v = 'z' WHERE k = 9 AND c = 9 IF EXISTS").MapScanCAS(map[string]any{})
	if err != nil || applied {
		t.Fatalf("IF EXISTS on a missing row: applied %v, err %v", applied, err)
	}
	if r := one(t, s, "SELECT * FROM lwt WHERE k = 9"); r != nil {
		t.Fatalf("IF EXISTS wrote a missing row: %v", r)
	}
	if ok, _ := cas(t, s, "DELETE FROM lwt WHERE k = 1 AND c = 1 IF EXISTS"); !ok {
		t.Fatal("DELETE IF EXISTS not applied")
	}
	if r := one(t, s, "SELECT * FROM lwt WHERE k = 1 AND c = 1"); r != nil {
		t.Fatalf("deleted row still there: %v", r)
	}

	// Conditional batch on one partition: conditions combined.
	mustExec(t, s, "INSERT INTO lwt (k, c, v) VALUES (2, 1, 'x')")
	b := s.NewBatch(gocql.LoggedBatch)
	b.Query("UPDATE lwt SET v = 'y' WHERE k = 2 AND c = 1 IF v = 'x'")
	b.Query("INSERT INTO lwt (k, c, v) VALUES (2, 2, 'new') IF NOT EXISTS")
	cur = map[string]any{}
	applied, iter, err := s.MapExecuteBatchCAS(b, cur)
	if err != nil || !applied {
		t.Fatalf("conditional batch: applied %v, err %v", applied, err)
	}
	iter.Close()
	b = s.NewBatch(gocql.LoggedBatch)
	b.Query("UPDATE lwt SET v = 'z' WHERE k = 2 AND c = 1 IF v = 'x'")
	b.Query("UPDATE lwt SET v = 'z' WHERE k = 2 AND c = 2 IF v = 'new'")
	cur = map[string]any{}
	if applied, iter, err = s.MapExecuteBatchCAS(b, cur); err != nil || applied {
		t.Fatalf("conditional batch with a failing condition: applied %v, err %v", applied, err)
	}
	iter.Close()
	got := rows(t, s, "SELECT c, v FROM lwt WHERE k = 2")
	if len(got) != 2 || got[0]["v"] != "y" || got[1]["v"] != "new" {
		t.Fatalf("after the batches: %v", got)
	}
}

func testWriteCounters(t *testing.T, e *writeEnv) {
	s := e.s
	mustExec(t, s,
		"CREATE TABLE cnt (k int, c int, n counter, m counter, PRIMARY KEY (k, c))",
		"UPDATE cnt SET n = n + 5, m = m - 2 WHERE k = 1 AND c = 1",
		"UPDATE cnt SET n = n - 1 WHERE k = 1 AND c = 1",
	)
	wantRow(t, one(t, s, "SELECT n, m FROM cnt WHERE k = 1 AND c = 1"), map[string]any{"n": int64(4), "m": int64(-2)})

	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if err := s.Query("UPDATE cnt SET n = n + ? WHERE k = 2 AND c = ?", int64(1), (w+i)%2).Exec(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := int64(0)
	for _, r := range rows(t, s, "SELECT n FROM cnt WHERE k = 2") {
		total += r["n"].(int64)
	}
	if total != workers*each {
		t.Fatalf("concurrent increments sum to %d, want %d", total, workers*each)
	}

	// A counter batch adds up increments of one cell.
	b := s.NewBatch(gocql.CounterBatch)
	b.Query("UPDATE cnt SET n = n + 1 WHERE k = 3 AND c = 1")
	b.Query("UPDATE cnt SET n = n + ? WHERE k = 3 AND c = 1", int64(2))
	if err := s.ExecuteBatch(b); err != nil {
		t.Fatal(err)
	}
	wantRow(t, one(t, s, "SELECT n FROM cnt WHERE k = 3 AND c = 1"), map[string]any{"n": int64(3)})

	mustExec(t, s, "DELETE FROM cnt WHERE k = 3 AND c = 1")
	if r := one(t, s, "SELECT n FROM cnt WHERE k = 3 AND c = 1"); r != nil {
		t.Fatalf("deleted counter: %v", r)
	}
}

func testWriteBatch(t *testing.T, e *writeEnv) {
	s := e.s
	mustExec(t, s, "CREATE TABLE b (k int, c int, v text, PRIMARY KEY (k, c))")

	// gocql prepares the statements with markers and sends the others as
	// text: the batch mixes prepared ids and query strings.
	b := s.NewBatch(gocql.LoggedBatch)
	for i := range 5 {
		b.Query("INSERT INTO b (k, c, v) VALUES (?, ?, ?)", i%2, i, fmt.Sprint("v", i))
	}
	b.Query("INSERT INTO b (k, c, v) VALUES (7, 7, 'text')")
	b.Query("UPDATE b SET v = 'last' WHERE k = 0 AND c = 0")
	if err := s.ExecuteBatch(b); err != nil {
		t.Fatal(err)
	}
	got := rows(t, s, "SELECT k, c, v FROM b WHERE k IN (0, 1, 7)")
	if len(got) != 6 {
		t.Fatalf("batch wrote %d rows, want 6: %v", len(got), got)
	}
	// Two writes of one cell at the batch's one timestamp reconcile as
	// Cassandra's: the greater value wins.
	wantRow(t, one(t, s, "SELECT v FROM b WHERE k = 0 AND c = 0"), map[string]any{"v": "v0"})
	ts := rows(t, s, "SELECT writetime(v) AS w FROM b WHERE k IN (0, 1)")
	for _, r := range ts[1:] {
		if r["w"] != ts[0]["w"] {
			t.Fatalf("a batch's statements got different timestamps: %v", ts)
		}
	}

	mustExec(t, s, "BEGIN UNLOGGED BATCH USING TIMESTAMP 100 INSERT INTO b (k, c, v) VALUES (9, 1, 'a'); DELETE FROM b WHERE k = 9 AND c = 2; APPLY BATCH")
	wantRow(t, one(t, s, "SELECT writetime(v) AS w FROM b WHERE k = 9 AND c = 1"), map[string]any{"w": int64(100)})

	// The batch's timestamp as a marker, and a client's default timestamp.
	if err := s.Query("BEGIN BATCH USING TIMESTAMP ? INSERT INTO b (k, c, v) VALUES (11, 1, 'a'); APPLY BATCH", int64(555)).Exec(); err != nil {
		t.Fatal(err)
	}
	wantRow(t, one(t, s, "SELECT writetime(v) AS w FROM b WHERE k = 11 AND c = 1"), map[string]any{"w": int64(555)})
	if err := s.Query("INSERT INTO b (k, c, v) VALUES (11, 2, 'a')").WithTimestamp(777).Exec(); err != nil {
		t.Fatal(err)
	}
	wantRow(t, one(t, s, "SELECT writetime(v) AS w FROM b WHERE k = 11 AND c = 2"), map[string]any{"w": int64(777)})
	b = s.NewBatch(gocql.UnloggedBatch).WithTimestamp(888)
	b.Query("INSERT INTO b (k, c, v) VALUES (?, ?, ?)", 11, 3, "a")
	if err := s.ExecuteBatch(b); err != nil {
		t.Fatal(err)
	}
	wantRow(t, one(t, s, "SELECT writetime(v) AS w FROM b WHERE k = 11 AND c = 3"), map[string]any{"w": int64(888)})

	// A prepared BATCH statement with markers across its statements.
	if err := s.Query("BEGIN BATCH INSERT INTO b (k, c, v) VALUES (?, ?, ?); UPDATE b SET v = ? WHERE k = ? AND c = ?; APPLY BATCH", 10, 1, "x", "y", 10, 2).Exec(); err != nil {
		t.Fatal(err)
	}
	got = rows(t, s, "SELECT c, v FROM b WHERE k = 10")
	if want := []map[string]any{{"c": 1, "v": "x"}, {"c": 2, "v": "y"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("prepared batch: %v", got)
	}
}

func testWriteInsertJSON(t *testing.T, e *writeEnv) {
	s := e.s
	mustExec(t, s,
		"CREATE TABLE j (k int, c text, v int, l list<int>, PRIMARY KEY (k, c))",
		`INSERT INTO j JSON '{"k": 1, "c": "a", "v": 5, "l": [1, 2]}'`,
	)
	wantRow(t, one(t, s, "SELECT v, l FROM j WHERE k = 1 AND c = 'a'"), map[string]any{"v": 5, "l": []int{1, 2}})
	mustExec(t, s, `INSERT INTO j JSON '{"k": 1, "c": "a", "l": [3]}' DEFAULT UNSET`)
	wantRow(t, one(t, s, "SELECT v, l FROM j WHERE k = 1 AND c = 'a'"), map[string]any{"v": 5, "l": []int{3}})
	mustExec(t, s, `INSERT INTO j JSON '{"k": 1, "c": "a"}'`)
	wantRow(t, one(t, s, "SELECT v, l FROM j WHERE k = 1 AND c = 'a'"), map[string]any{"v": 0, "l": []int{}})
	if err := s.Query("INSERT INTO j JSON ?", `{"k": 2, "c": "b", "v": 7}`).Exec(); err != nil {
		t.Fatal(err)
	}
	wantRow(t, one(t, s, "SELECT v FROM j WHERE k = 2 AND c = 'b'"), map[string]any{"v": 7})
	wantInvalid(t, s, "JSON values map contains unrecognized column: zz", `INSERT INTO j JSON '{"k": 1, "c": "a", "zz": 1}'`)

	// With IF NOT EXISTS and in a batch.
	cur := map[string]any{}
	applied, err := s.Query(`INSERT INTO j JSON '{"k": 2, "c": "b", "v": 8}' IF NOT EXISTS`).MapScanCAS(cur)
	if err != nil || applied || cur["v"] != 7 {
		t.Fatalf("INSERT JSON IF NOT EXISTS on an existing row: applied %v, current %v, err %v", applied, cur, err)
	}
	b := s.NewBatch(gocql.UnloggedBatch)
	b.Query("INSERT INTO j JSON ?", `{"k": 3, "c": "c", "v": 9}`)
	b.Query(`INSERT INTO j JSON '{"k": 3, "c": "d", "v": 10}'`)
	if err := s.ExecuteBatch(b); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, s, "SELECT v FROM j WHERE k = 3"); len(got) != 2 {
		t.Fatalf("JSON batch: %v", got)
	}
}

func testWriteEdges(t *testing.T, e *writeEnv) {
	s := e.s
	mustExec(t, s,
		"CREATE TABLE st (k int, c int, v text, s int static, PRIMARY KEY (k, c))",
		"CREATE TABLE two (k text, c1 int, c2 int, v text, PRIMARY KEY (k, c1, c2))",
		"CREATE TABLE desc_t (k int, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)",
		"CREATE TABLE cs (k int, c int, s counter static, n counter, PRIMARY KEY (k, c))",
	)
	cas := func(stmt string, args ...any) (bool, map[string]any) {
		t.Helper()
		cur := map[string]any{}
		applied, err := s.Query(stmt, args...).MapScanCAS(cur)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		return applied, cur
	}

	// Conditions on a static column read the static row.
	if ok, _ := cas("UPDATE st SET s = 1 WHERE k = 1 IF s = null"); !ok {
		t.Fatal("static condition on a missing static row not applied")
	}
	ok, cur := cas("UPDATE st SET s = 3 WHERE k = 1 IF s = 2")
	if ok || cur["s"] != 1 {
		t.Fatalf("failed static condition: applied %v, current %v", ok, cur)
	}
	mustExec(t, s, "INSERT INTO st (k, c, v) VALUES (1, 1, 'a')")
	if ok, _ := cas("UPDATE st SET v = 'b' WHERE k = 1 AND c = 1 IF s = 1 AND v = 'a'"); !ok {
		t.Fatal("static and regular conditions together not applied")
	}

	// A failed conditional batch answers with the primary key first.
	b := s.NewBatch(gocql.LoggedBatch)
	b.Query("UPDATE st SET v = 'z' WHERE k = 1 AND c = 1 IF v = 'nope'")
	cur = map[string]any{}
	applied, iter, err := s.MapExecuteBatchCAS(b, cur)
	if err != nil || applied {
		t.Fatalf("batch: applied %v, err %v", applied, err)
	}
	iter.Close()
	wantRow(t, cur, map[string]any{"k": 1, "c": 1, "v": "b"})

	// Multi-column equality and IN on clustering columns.
	mustExec(t, s,
		"UPDATE two SET v = 'm' WHERE k = 'a' AND (c1, c2) = (1, 2)",
		"UPDATE two SET v = 'i' WHERE k = 'a' AND c1 IN (3, 4) AND c2 = 1",
		"DELETE FROM two WHERE k = 'a' AND c1 IN (1, 3) AND c2 IN (1, 2)",
	)
	if got := rows(t, s, "SELECT c1, c2, v FROM two WHERE k = 'a'"); len(got) != 1 || got[0]["c1"] != 4 {
		t.Fatalf("after IN deletion: %v", got)
	}
	// A clustering prefix deletes every row under it.
	mustExec(t, s, "DELETE FROM two WHERE k = 'a' AND c1 = 4")
	if got := rows(t, s, "SELECT * FROM two WHERE k = 'a'"); len(got) != 0 {
		t.Fatalf("after prefix deletion: %v", got)
	}
	wantInvalid(t, s, "Key may not be empty", "INSERT INTO two (k, c1, c2) VALUES ('', 1, 1)")
	wantInvalid(t, s, "Invalid unset value for column k", "INSERT INTO two (k, c1, c2) VALUES (?, 1, 1)", gocql.UnsetValue)

	// Ranges on a DESC column delete by value, not by stored order.
	for i := 1; i <= 5; i++ {
		mustExec(t, s, fmt.Sprintf("INSERT INTO desc_t (k, c, v) VALUES (1, %d, 'x')", i))
	}
	mustExec(t, s, "DELETE FROM desc_t WHERE k = 1 AND c >= 2 AND c < 4")
	var cs []int
	for _, r := range rows(t, s, "SELECT c FROM desc_t WHERE k = 1") {
		cs = append(cs, r["c"].(int))
	}
	if !reflect.DeepEqual(cs, []int{5, 4, 1}) {
		t.Fatalf("after a range deletion on a DESC column: %v", cs)
	}
	mustExec(t, s, "DELETE FROM desc_t WHERE k = 1 AND c > 4")
	mustExec(t, s, "DELETE FROM desc_t WHERE k = 1 AND c <= 1")
	if got := rows(t, s, "SELECT c FROM desc_t WHERE k = 1"); len(got) != 1 || got[0]["c"] != 4 {
		t.Fatalf("after one-sided ranges: %v", got)
	}

	// Static counters.
	mustExec(t, s,
		"UPDATE cs SET s = s + 2 WHERE k = 1",
		"UPDATE cs SET n = n + 1, s = s + 1 WHERE k = 1 AND c = 1",
	)
	wantRow(t, one(t, s, "SELECT s, n FROM cs WHERE k = 1 AND c = 1"), map[string]any{"s": int64(3), "n": int64(1)})

	// Named markers and markers inside function calls.
	if err := s.Query("INSERT INTO st (k, c, v) VALUES (:k, :c, :v)", gocql.NamedValue("k", 7), gocql.NamedValue("c", 7), gocql.NamedValue("v", "named")).Exec(); err != nil {
		t.Fatal(err)
	}
	wantRow(t, one(t, s, "SELECT v FROM st WHERE k = 7 AND c = 7"), map[string]any{"v": "named"})
	if err := s.Query("UPDATE st SET v = blobAsText(?) WHERE k = 7 AND c = 7", []byte("fn")).Exec(); err != nil {
		t.Fatal(err)
	}
	wantRow(t, one(t, s, "SELECT v FROM st WHERE k = 7 AND c = 7"), map[string]any{"v": "fn"})
}

func testWriteConditionElements(t *testing.T, e *writeEnv) {
	s := e.s
	mustExec(t, s,
		"CREATE TYPE pt (x int, y int)",
		"CREATE TABLE ce (k int PRIMARY KEY, v int, l list<int>, fl frozen<list<int>>, p pt, fp frozen<pt>, fm frozen<map<text, int>>)",
		"INSERT INTO ce (k, l, fl, p, fp, fm) VALUES (1, [10, 20], [1, 2], {x: 1, y: 2}, {x: 3, y: 4}, {'a': 1})",
	)
	for _, tc := range []struct {
		cond string
		want bool
	}{
		{"l[1] = 20", true},
		{"l[1] = 10", false},
		{"l[5] = null", true},
		{"fl[0] = 1", true},
		{"p.y = 2", true},
		{"p.x > 1", false},
		{"fp.x = 3 AND fp.y IN (4, 5)", true},
		{"fm['a'] = 1", true},
		{"fm['b'] != null", false},
		{"l = [10, 20]", true},
		{"p = {x: 1, y: 2}", true},
	} {
		applied, err := s.Query("UPDATE ce SET v = 1 WHERE k = 1 IF " + tc.cond).MapScanCAS(map[string]any{})
		if err != nil {
			t.Fatalf("IF %s: %v", tc.cond, err)
		}
		if applied != tc.want {
			t.Errorf("IF %s: applied %v, want %v", tc.cond, applied, tc.want)
		}
	}
	// An empty int is a valid value, but not a list index.
	wantInvalid(t, s, "Invalid list index for l", "UPDATE ce SET v = 1 WHERE k = 1 IF l[?] = 1", emptyValue{})
	wantInvalid(t, s, "Expected 4 bytes for an int list index", "UPDATE ce SET l[?] = 1 WHERE k = 1", emptyValue{})
}

func testWriteAcrossFlush(t *testing.T, e *writeEnv) {
	srv, s := e.srv, e.s
	mustExec(t, s,
		"CREATE TABLE f (k int, c int, l list<int>, m map<int, int>, PRIMARY KEY (k, c))",
		"CREATE TABLE fc (k int PRIMARY KEY, n counter)",
		"INSERT INTO f (k, c, l, m) VALUES (1, 1, [1, 2], {1: 1})",
		"INSERT INTO f (k, c) VALUES (1, 2)",
		"INSERT INTO f (k, c) VALUES (1, 3)",
		"UPDATE fc SET n = n + 40 WHERE k = 1",
	)
	srv.Flush(t, e.ks, "f")
	srv.Flush(t, e.ks, "fc")
	wantRow(t, one(t, s, "SELECT n FROM fc WHERE k = 1"), map[string]any{"n": int64(40)})
	mustExec(t, s,
		"UPDATE f SET l = [3] WHERE k = 1 AND c = 1",
		"UPDATE f SET m = m + {2: 2} WHERE k = 1 AND c = 1",
		"DELETE FROM f WHERE k = 1 AND c >= 2",
		"UPDATE fc SET n = n + 2 WHERE k = 1",
	)
	wantRow(t, one(t, s, "SELECT l, m FROM f WHERE k = 1 AND c = 1"), map[string]any{"l": []int{3}, "m": map[int]int{1: 1, 2: 2}})
	if got := rows(t, s, "SELECT c FROM f WHERE k = 1"); len(got) != 1 {
		t.Fatalf("the range deletion missed flushed rows: %v", got)
	}
	wantRow(t, one(t, s, "SELECT n FROM fc WHERE k = 1"), map[string]any{"n": int64(42)})
	srv.Flush(t, e.ks, "f")
	wantRow(t, one(t, s, "SELECT l, m FROM f WHERE k = 1 AND c = 1"), map[string]any{"l": []int{3}, "m": map[int]int{1: 1, 2: 2}})
}

func testWriteMultiColumn(t *testing.T, e *writeEnv) {
	s := e.s
	mustExec(t, s,
		"CREATE TABLE mc (k int, a int, b text, v int, PRIMARY KEY (k, a, b))",
		"UPDATE mc SET v = 1 WHERE k = 1 AND (a, b) = (1, 'x')",
		"UPDATE mc SET v = 2 WHERE k = 1 AND (a, b) IN ((2, 'y'), (3, 'z'))",
	)
	if err := s.Query("UPDATE mc SET v = 3 WHERE k = 1 AND (a, b) IN ((?, ?), (4, 'w'))", 5, "q").Exec(); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, s, "SELECT a, b, v FROM mc WHERE k = 1"); len(got) != 5 {
		t.Fatalf("multi-column writes: %v", got)
	}
	mustExec(t, s, "DELETE FROM mc WHERE k = 1 AND (a, b) IN ((1, 'x'), (2, 'y'))")
	if got := rows(t, s, "SELECT a FROM mc WHERE k = 1"); len(got) != 3 || got[0]["a"] != 3 {
		t.Fatalf("after a multi-column IN deletion: %v", got)
	}
	wantInvalid(t, s, "Multi-column relations can only be applied to clustering columns", "UPDATE mc SET v = 1 WHERE (k, a) = (1, 1) AND b = 'x'")
}
