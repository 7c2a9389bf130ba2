package exec_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// Writes and batches audited against Cassandra 4.0/4.1: the refusals are
// Invalid (0x2200) with Cassandra's words, the conditional answers have its
// columns in its order.

// wantInvalidCode runs a statement that must fail as Invalid with exactly
// msg.
func wantInvalidCode(t *testing.T, s *gocql.Session, msg, stmt string, args ...any) {
	t.Helper()
	err := s.Query(stmt, args...).Exec()
	var re gocql.RequestError
	if !errors.As(err, &re) || re.Code() != gocql.ErrCodeInvalid || re.Message() != msg {
		t.Fatalf("%s: error %v, want Invalid %q", stmt, err, msg)
	}
}

// cas runs a conditional statement and returns [applied] and the other
// columns of its answer by name.
func cas(t *testing.T, s *gocql.Session, stmt string, args ...any) (bool, map[string]any) {
	t.Helper()
	cur := map[string]any{}
	applied, err := s.Query(stmt, args...).MapScanCAS(cur)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	return applied, cur
}

// TestWriteAuditConditionalDelete: without a full primary key a conditional
// DELETE may only delete static columns on static conditions
// (DeleteStatement.prepareInternal; Cassandra's InsertUpdateIfConditionTest,
// CASSANDRA-6430 and CASSANDRA-10532).
func TestWriteAuditConditionalDelete(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	mustExec(t, s,
		"CREATE TABLE t (k text, s text static, i int, v text, PRIMARY KEY (k, i))",
		"CREATE TABLE sc (pk int, ck int, static_col int static, value int, PRIMARY KEY (pk, ck))",
		"INSERT INTO t (k, s, i, v) VALUES ('k', 's', 0, 'v')",
	)
	const nonStatic = "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns"
	for _, stmt := range []string{
		"DELETE FROM t WHERE k = 'k' IF EXISTS",
		"DELETE FROM t WHERE k = 'k' IF v = 'foo'",
		"DELETE FROM t WHERE k = 'k' IF s = 's'", // a row deletion, whatever the condition
		"DELETE FROM t WHERE k = 'k' AND i > 0 IF EXISTS",
		"DELETE FROM t WHERE k = 'k' AND i > 0 IF v = 'foo'",
		"DELETE s, v FROM t WHERE k = 'k' IF s = 's'",
	} {
		wantInvalidCode(t, s, nonStatic, stmt)
	}
	wantInvalidCode(t, s, "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF condition on non static columns",
		"DELETE s FROM t WHERE k = 'k' IF v = 'v' AND s = 's'")
	wantInvalidCode(t, s, "IN on the clustering key columns is not supported with conditional deletions",
		"DELETE FROM t WHERE k = 'k' AND i IN (0, 1) IF v = 'foo'")
	wantInvalidCode(t, s, "Some partition key parts are missing: k", "DELETE FROM t WHERE i = 0 IF EXISTS")
	if r := one(t, s, "SELECT s, v FROM t WHERE k = 'k' AND i = 0"); r["s"] != "s" || r["v"] != "v" {
		t.Fatalf("a refused conditional DELETE wrote: %v", r)
	}

	// Static columns with static conditions and no clustering are allowed.
	mustExec(t, s,
		"INSERT INTO sc (pk, ck, value) VALUES (1, 1, 2)",
		"INSERT INTO sc (pk, ck, value) VALUES (1, 5, 6)",
		"INSERT INTO sc (pk, static_col) VALUES (1, 1)",
	)
	if ok, cur := cas(t, s, "DELETE static_col FROM sc WHERE pk = 1 IF static_col = 2"); ok || cur["static_col"] != 1 {
		t.Fatalf("failed static condition: applied %v, current %v", ok, cur)
	}
	if ok, _ := cas(t, s, "DELETE static_col FROM sc WHERE pk = 1 IF static_col = 1"); !ok {
		t.Fatal("static DELETE on a holding static condition not applied")
	}
	mustExec(t, s, "INSERT INTO sc (pk, static_col) VALUES (1, 1)")
	wantInvalidCode(t, s, "Invalid restrictions on clustering columns since the DELETE statement modifies only static columns",
		"DELETE static_col FROM sc WHERE pk = 1 AND ck = 1 IF static_col = 1")
	// A static column deleted on a regular row's condition names the row.
	if ok, cur := cas(t, s, "DELETE static_col FROM sc WHERE pk = 1 AND ck = 5 IF value = 10"); ok || cur["value"] != 6 || len(cur) != 1 {
		t.Fatalf("failed regular condition: applied %v, current %v", ok, cur)
	}
	if ok, _ := cas(t, s, "DELETE static_col FROM sc WHERE pk = 1 AND ck = 5 IF value = 6"); !ok {
		t.Fatal("static DELETE on a holding regular condition not applied")
	}
	got := rows(t, s, "SELECT ck, static_col, value FROM sc WHERE pk = 1")
	if len(got) != 2 || got[0]["static_col"] != 0 || got[0]["value"] != 2 || got[1]["value"] != 6 {
		t.Fatalf("after the static DELETE: %v", got)
	}
	// A regular column of a missing row on a static condition that holds.
	mustExec(t, s, "INSERT INTO sc (pk, static_col) VALUES (1, 1)")
	if ok, _ := cas(t, s, "DELETE value FROM sc WHERE pk = 1 AND ck = 9 IF static_col = 1"); !ok {
		t.Fatal("DELETE of a missing row's column on a holding static condition not applied")
	}
}

// TestWriteAuditStaticUpdate: an UPDATE is on the static row alone only
// when neither its assignments nor its conditions name a regular column
// (ModificationStatement.appliesOnlyToStaticColumns).
func TestWriteAuditStaticUpdate(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	mustExec(t, s,
		"CREATE TABLE t (k int, c int, v int, st int static, PRIMARY KEY (k, c))",
		"INSERT INTO t (k, c, v, st) VALUES (1, 1, 10, 5)",
	)
	// A static assignment alone, the partition key alone: allowed.
	mustExec(t, s, "UPDATE t SET st = 6 WHERE k = 1")
	wantInvalidCode(t, s, "Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns",
		"UPDATE t SET st = 7 WHERE k = 1 AND c = 1")
	wantInvalidCode(t, s, "Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns",
		"UPDATE t SET st = 7 WHERE k = 1 AND c = 1 IF st = 6")
	// A regular assignment without the clustering key: refused.
	wantInvalidCode(t, s, "Some clustering keys are missing: c", "UPDATE t SET v = 2 WHERE k = 1")
	// A regular condition makes the statement name a row.
	wantInvalidCode(t, s, "Some clustering keys are missing: c", "UPDATE t SET st = 7 WHERE k = 1 IF v = 10")
	if ok, cur := cas(t, s, "UPDATE t SET st = 7 WHERE k = 1 AND c = 1 IF v = 11"); ok || cur["v"] != 10 || len(cur) != 1 {
		t.Fatalf("failed regular condition: applied %v, current %v", ok, cur)
	}
	if ok, _ := cas(t, s, "UPDATE t SET st = 7 WHERE k = 1 AND c = 1 IF v = 10"); !ok {
		t.Fatal("static UPDATE on a holding regular condition not applied")
	}
	// On a row that does not exist, the condition is false and no row
	// appears.
	if ok, _ := cas(t, s, "UPDATE t SET st = 8 WHERE k = 1 AND c = 2 IF v = 10"); ok {
		t.Fatal("a condition on a missing row was applied")
	}
	got := rows(t, s, "SELECT c, st, v FROM t WHERE k = 1")
	if len(got) != 1 || got[0]["st"] != 7 || got[0]["v"] != 10 {
		t.Fatalf("after the static UPDATEs: %v", got)
	}
}

// TestWriteAuditRangeColumns: a DELETE of columns needs the whole primary
// key; Cassandra 4 refuses the others as range deletions
// (DeleteStatement.addUpdateForKey).
func TestWriteAuditRangeColumns(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	mustExec(t, s, "CREATE TABLE t (k int, a int, b int, v int, st int static, PRIMARY KEY (k, a, b))",
		"INSERT INTO t (k, a, b, v, st) VALUES (1, 1, 1, 1, 1)")
	for _, stmt := range []string{
		"DELETE v FROM t WHERE k = 1",
		"DELETE v FROM t WHERE k = 1 AND a = 1",
		"DELETE v FROM t WHERE k = 1 AND a > 0",
		"DELETE v, st FROM t WHERE k = 1",
	} {
		wantInvalidCode(t, s, "Range deletions are not supported for specific columns", stmt)
	}
	wantInvalidCode(t, s, "Invalid restrictions on clustering columns since the DELETE statement modifies only static columns",
		"DELETE st FROM t WHERE k = 1 AND a = 1")
	mustExec(t, s, "DELETE st FROM t WHERE k = 1", "DELETE v FROM t WHERE k = 1 AND a = 1 AND b = 1")
	if r := one(t, s, "SELECT st, v FROM t WHERE k = 1"); r["st"] != 0 || r["v"] != 0 {
		t.Fatalf("after the column deletions: %v", r)
	}
}

// TestWriteAuditJSON: a JSON value of the wrong type names its column, as
// Cassandra's "Error decoding JSON value for <column>: <why>".
func TestWriteAuditJSON(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	mustExec(t, s, "CREATE TABLE j (k int PRIMARY KEY, v int, l list<int>, m map<text, int>)")
	wantInvalidCode(t, s, "Error decoding JSON value for v: Unable to make int from 'x'", `INSERT INTO j JSON '{"k": 1, "v": "x"}'`)
	wantInvalidCode(t, s, "Error decoding JSON value for v: Unable to make int from 'x'", `INSERT INTO j JSON ?`, `{"k": 1, "v": "x"}`)
	var re gocql.RequestError
	err := s.Query(`INSERT INTO j JSON '{"k": 1, "l": {"a": 1}}'`).Exec()
	if !errors.As(err, &re) || re.Code() != gocql.ErrCodeInvalid || !strings.HasPrefix(re.Message(), "Error decoding JSON value for l: ") {
		t.Fatalf("a map for a list: %v", err)
	}
	err = s.Query(`INSERT INTO j JSON '{"k": "one"}'`).Exec()
	if !errors.As(err, &re) || re.Code() != gocql.ErrCodeInvalid || re.Message() != "Error decoding JSON value for k: Unable to make int from 'one'" {
		t.Fatalf("a bad key: %v", err)
	}
	// What already matched: unknown columns, missing keys, null and unset
	// documents, DEFAULT UNSET and DEFAULT NULL, keys case-folded unless
	// quoted.
	wantInvalidCode(t, s, "JSON values map contains unrecognized column: zz", `INSERT INTO j JSON '{"k": 1, "zz": 2}'`)
	wantInvalidCode(t, s, "Invalid null value in condition for column k", `INSERT INTO j JSON '{"v": 1}'`)
	wantInvalidCode(t, s, "Got null for INSERT JSON values", `INSERT INTO j JSON ?`, nil)
	wantInvalidCode(t, s, "Got unset value for INSERT JSON values", `INSERT INTO j JSON ?`, gocql.UnsetValue)
	mustExec(t, s,
		`INSERT INTO j JSON '{"K": 2, "v": 5, "l": [1]}'`,
		`INSERT INTO j JSON '{"k": 2, "l": [2]}' DEFAULT UNSET`,
	)
	wantRow(t, one(t, s, "SELECT v, l FROM j WHERE k = 2"), map[string]any{"v": 5, "l": []int{2}})
	mustExec(t, s, `INSERT INTO j JSON '{"\"k\"": 2, "l": [3]}' DEFAULT NULL`)
	wantRow(t, one(t, s, "SELECT v, l FROM j WHERE k = 2"), map[string]any{"v": 0, "l": []int{3}})
}

// TestWriteAuditInCondition: IF c IN ? refuses null; unset alternatives of
// IF c IN (...) are left out (ColumnCondition.bindAndGetTerms).
func TestWriteAuditInCondition(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	mustExec(t, s, "CREATE TABLE t (k int PRIMARY KEY, v int)", "INSERT INTO t (k, v) VALUES (0, 0)")
	wantInvalidCode(t, s, "Invalid null list in IN condition", "UPDATE t SET v = 1 WHERE k = 0 IF v IN ?", nil)
	wantInvalidCode(t, s, "Invalid 'unset' value in condition", "UPDATE t SET v = 1 WHERE k = 0 IF v IN ?", gocql.UnsetValue)
	wantInvalidCode(t, s, "Invalid 'unset' value in condition", "UPDATE t SET v = 1 WHERE k = 0 IF v = ?", gocql.UnsetValue)
	if ok, _ := cas(t, s, "UPDATE t SET v = 1 WHERE k = 0 IF v IN (?, ?, ?)", 1, gocql.UnsetValue, 0); !ok {
		t.Fatal("IN with an unset alternative not applied")
	}
	if ok, cur := cas(t, s, "UPDATE t SET v = 2 WHERE k = 0 IF v IN (?, ?)", gocql.UnsetValue, 0); ok || cur["v"] != 1 {
		t.Fatalf("IN whose only other alternative fails: applied %v, current %v", ok, cur)
	}
	if ok, _ := cas(t, s, "UPDATE t SET v = 2 WHERE k = 0 IF v IN ?", []int{5, 1}); !ok {
		t.Fatal("IN ? not applied")
	}
}

// TestWriteAuditCASColumns: a failed condition answers [applied], then the
// columns of the regular conditions in IF order, then those of the static
// ones (ColumnConditions.getColumns); a batch puts the primary key first.
func TestWriteAuditCASColumns(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	mustExec(t, s,
		"CREATE TABLE t (k int, c int, v int, w int, st int static, PRIMARY KEY (k, c))",
		"INSERT INTO t (k, c, v, w, st) VALUES (1, 1, 10, 20, 5)",
	)
	scan := func(stmt string, n int) []int {
		t.Helper()
		got := make([]int, n)
		dest := make([]any, n)
		for i := range got {
			dest[i] = &got[i]
		}
		applied, err := s.Query(stmt).ScanCAS(dest...)
		if err != nil || applied {
			t.Fatalf("%s: applied %v, %v", stmt, applied, err)
		}
		return got
	}
	for _, tc := range []struct {
		stmt string
		want []int
	}{
		{"UPDATE t SET v = 0 WHERE k = 1 AND c = 1 IF st = 0 AND v = 0", []int{10, 5}},
		{"UPDATE t SET v = 0 WHERE k = 1 AND c = 1 IF st = 0 AND w = 0 AND v = 0", []int{20, 10, 5}},
		{"UPDATE t SET v = 0 WHERE k = 1 AND c = 1 IF v = 0 AND st = 0 AND v = 1", []int{10, 5}},
	} {
		got := scan(tc.stmt, len(tc.want))
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%s: answer %v, want %v", tc.stmt, got, tc.want)
		}
	}
	b := s.NewBatch(gocql.LoggedBatch)
	b.Query("UPDATE t SET v = 0 WHERE k = 1 AND c = 1 IF st = 0 AND v = 0")
	b.Query("UPDATE t SET v = 0 WHERE k = 1 AND c = 1 IF w = 0")
	got := make([]int, 5)
	applied, iter, err := s.ExecuteBatchCAS(b, &got[0], &got[1], &got[2], &got[3], &got[4])
	if err != nil || applied {
		t.Fatalf("batch: applied %v, %v", applied, err)
	}
	iter.Close()
	if want := []int{1, 1, 10, 5, 20}; !slices.Equal(got, want) {
		t.Fatalf("batch answer %v, want %v (k, c, then each statement's regular then static columns)", got, want)
	}
}

// TestWriteAuditMessages: refusals of writes with bound values in
// Cassandra 4's words, and the bound TTLs and timestamps it accepts; those
// written as literals are testdata/transcripts/write_messages.cql.
func TestWriteAuditMessages(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	mustExec(t, s,
		`CREATE TABLE t (k int, c int, v int, st int static, l list<int>, fl frozen<list<int>>, m map<text, text>, fm frozen<map<text, text>>, se set<int>, fs frozen<set<int>>, tx text, PRIMARY KEY (k, c))`,
		`CREATE TABLE t2 (k int, c1 int, c2 int, v int, PRIMARY KEY (k, c1, c2))`,
		`CREATE TABLE ct (k int PRIMARY KEY, n counter)`,
		`CREATE TABLE kv (k int PRIMARY KEY, v int)`,
		`INSERT INTO t (k, c, l) VALUES (9, 9, [1])`,
	)
	// Bound values.
	for _, tc := range []struct {
		stmt, msg string
		args      []any
	}{
		{`INSERT INTO kv (k, v) VALUES (?, ?)`, "Invalid null value in condition for column k", []any{nil, 1}},
		{`INSERT INTO kv (k, v) VALUES (?, ?)`, "Invalid unset value for column k", []any{gocql.UnsetValue, 1}},
		{`DELETE FROM kv WHERE k = ?`, "Invalid unset value for column k", []any{gocql.UnsetValue}},
		{`INSERT INTO t (k, c, v) VALUES (?, ?, ?)`, "Invalid unset value for column c", []any{1, gocql.UnsetValue, 1}},
		{`INSERT INTO kv (k, v) VALUES (1, 1) USING TIMESTAMP ?`, "Invalid null value of timestamp", []any{nil}},
		{`INSERT INTO kv (k, v) VALUES (1, 1) USING TTL ?`, "A TTL must be greater or equal to 0, but was -1", []any{-1}},
		{`INSERT INTO kv (k, v) VALUES (1, 1) USING TTL ?`, "ttl is too large. requested (630720001) maximum (630720000)", []any{630720001}},
		{`UPDATE t SET l[?] = 1 WHERE k = 9 AND c = 9`, "Invalid unset value for list index", []any{gocql.UnsetValue}},
		{`UPDATE t SET m[?] = 'x' WHERE k = 9 AND c = 9`, "Invalid null map key", []any{nil}},
		{`UPDATE ct SET n = n + ? WHERE k = 1`, "Invalid null value for counter increment", []any{nil}},
	} {
		wantInvalidCode(t, s, tc.msg, tc.stmt, tc.args...)
	}
	// Accepted as in Cassandra: TTL 0 and the 20-year maximum, any
	// timestamp, unset timestamps and TTLs (the statement's own), a null TTL
	// (none).
	for _, tc := range []struct {
		stmt string
		args []any
	}{
		{`INSERT INTO kv (k, v) VALUES (1, 1) USING TIMESTAMP ?`, []any{gocql.UnsetValue}},
		{`INSERT INTO kv (k, v) VALUES (1, 1) USING TTL ?`, []any{gocql.UnsetValue}},
		{`INSERT INTO kv (k, v) VALUES (1, 1) USING TTL ?`, []any{nil}},
	} {
		if err := s.Query(tc.stmt, tc.args...).Exec(); err != nil {
			t.Fatalf("%s %v: %v", tc.stmt, tc.args, err)
		}
	}
}
