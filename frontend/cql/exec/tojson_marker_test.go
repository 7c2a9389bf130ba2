package exec_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltest"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// TestSelectionMarkerErrors: function calls whose argument is a bind marker
// with no type to take are refused at preparation with Cassandra 4's
// Invalid errors.
func TestSelectionMarkerErrors(t *testing.T) {
	srv, s := selectEnv(t)
	const infer = " in selection clause (try using a cast to force a type)"
	for q, msg := range map[string]string{
		// toJson takes any type, so its argument must have one of its own.
		`SELECT toJson(?) FROM t WHERE pk = 'a' AND ck = 1`:     "Cannot infer type for term ?" + infer,
		`SELECT ck, toJson(?) FROM t WHERE pk = 'a' AND ck = 1`: "Cannot infer type for term ?" + infer,
		`SELECT toJson(:x) FROM t WHERE pk = 'a'`:               "Cannot infer type for term :x" + infer,
		`SELECT toJson(null) FROM t`:                            "Cannot infer type for term NULL" + infer,
		`SELECT toJson(ck, v) FROM t`:                           "toJson() only accepts one argument (got 2)",
		`SELECT fromJson(?) FROM t`:                             "fromJson() cannot be used in the selection clause of a SELECT statement",
		// Overloads a marker fits equally well.
		`SELECT todate(?) FROM t`: "Ambiguous call to function todate (can be matched by following signatures: " +
			"system.todate : (timeuuid) -> date, system.todate : (timestamp) -> date): use type casts to disambiguate",
		`SELECT sum(?) FROM t`: "Ambiguous call to function sum (can be matched by following signatures: " +
			"system.sum : (tinyint) -> tinyint, system.sum : (smallint) -> smallint, system.sum : (int) -> int, " +
			"system.sum : (bigint) -> bigint, system.sum : (float) -> float, system.sum : (double) -> double, " +
			"system.sum : (decimal) -> decimal, system.sum : (varint) -> varint, system.sum : (counter) -> counter): " +
			"use type casts to disambiguate",
		`SELECT min(?) FROM t`:   "Ambiguous call to function min (can be matched by following signatures: system.min : (ascii) -> ascii, ",
		`SELECT count(?) FROM t`: "Ambiguous call to function count (can be matched by following signatures: system.count : (ascii) -> bigint, ",
		// token's parameters are the partition key's.
		`SELECT token(?, ?) FROM t`: "Invalid number of arguments in call to function system.token: 1 required but 2 provided",
		`SELECT token(ck) FROM t`:   "Type error: ck cannot be passed as argument 0 of function system.token of type text",
		`SELECT token(1) FROM t`:    "1 is not of the expected type: text",
	} {
		wantErr(t, s, q, codeInvalid, msg)
		// The same through PREPARE alone: the refusal comes at preparation.
		sess := exec.NewSession()
		sess.SetKeyspace("ks")
		_, err := srv.Executor.Prepare(context.Background(), sess, q, "")
		if e, ok := err.(*exec.Error); !ok || e.Code != wire.CodeInvalid || !strings.Contains(e.Message, msg) {
			t.Errorf("PREPARE %s: %v, want Invalid %q", q, err, msg)
		}
	}
	// min(?) lists each native type once: text, not text and varchar.
	err := s.Query(`SELECT min(?) FROM t`).Exec()
	if err == nil || strings.Count(err.Error(), "system.min : (text) -> text") != 1 ||
		!strings.HasSuffix(err.Error(), "system.min : (varint) -> varint): use type casts to disambiguate") {
		t.Errorf("min(?): %v", err)
	}
}

// TestSelectionMarkerHints: a hint types the marker, which is bound as that
// type and named [selection], as Cassandra names every marker of a
// selection.
func TestSelectionMarkerHints(t *testing.T) {
	srv, s := selectEnv(t)
	one := func(q string, args ...any) string {
		t.Helper()
		var out string
		if err := s.Query(q, args...).Scan(&out); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
	const row = ` FROM t WHERE pk = 'a' AND ck = 1`
	for _, tc := range []struct {
		q    string
		arg  any
		want string
	}{
		{`SELECT toJson((int)?)` + row, 5, "5"},
		{`SELECT toJson((int)?)` + row, nil, "null"},
		{`SELECT toJson((bigint)?)` + row, int64(-1) << 40, "-1099511627776"},
		{`SELECT toJson((text)?)` + row, `say "hi"`, `"say \"hi\""`},
		{`SELECT toJson((list<int>)?)` + row, []int{3, 1}, "[3, 1]"},
		{`SELECT toJson((map<text, int>)?)` + row, map[string]int{"k": 2}, `{"k": 2}`},
		{`SELECT toJson((timestamp)?)` + row, int64(0), `"1970-01-01 00:00:00.000Z"`},
	} {
		if got := one(tc.q, tc.arg); got != tc.want {
			t.Errorf("%s with %v: %s, want %s", tc.q, tc.arg, got, tc.want)
		}
	}
	var ck int
	var j string
	if err := s.Query(`SELECT ck, toJson((int)?)`+row, 7).Scan(&ck, &j); err != nil || ck != 1 || j != "7" {
		t.Errorf("ck, toJson((int)?): %d %q %v", ck, j, err)
	}
	var n int
	if err := s.Query(`SELECT min((int)?) FROM t WHERE pk = 'a'`, 4).Scan(&n); err != nil || n != 4 {
		t.Errorf("min((int)?): %d %v", n, err)
	}
	if err := s.Query(`SELECT blobAsInt(?)`+row, []byte{0, 0, 1, 0}).Scan(&n); err != nil || n != 256 {
		t.Errorf("blobAsInt(?): %d %v", n, err)
	}

	ctx := context.Background()
	sess := exec.NewSession()
	sess.SetKeyspace("ks")
	for q, want := range map[string]exec.ColumnSpec{
		`SELECT toJson((int)?) FROM t`:       {Name: "[selection]", Type: cqltype.IntType},
		`SELECT toJson((list<int>)?) FROM t`: {Name: "[selection]", Type: cqltype.ListOf(cqltype.IntType, false)},
		`SELECT blobAsInt(?) FROM t`:         {Name: "[selection]", Type: cqltype.BlobType},
		`SELECT token(?) FROM t`:             {Name: "[selection]", Type: cqltype.TextType},
		`SELECT toJson((int):n) FROM t`:      {Name: "n", Type: cqltype.IntType},
		// Outside selections, Cassandra names a marker by its function.
		`UPDATE t SET v = blobAsText(?) WHERE pk = 'a' AND ck = 1`: {Name: "arg0(system.blobastext)", Type: cqltype.BlobType},
	} {
		p, err := srv.Executor.Prepare(ctx, sess, q, "")
		if err != nil {
			t.Fatalf("PREPARE %s: %v", q, err)
		}
		if len(p.Binds) != 1 || p.Binds[0].Name != want.Name || !p.Binds[0].Type.Equal(want.Type) {
			t.Errorf("%s: bound variables %+v, want one %s %s", q, p.Binds, want.Name, want.Type)
		}
	}
	p, err := srv.Executor.Prepare(ctx, sess, `SELECT toJson((int)?) FROM t`, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Columns) != 1 || p.Columns[0].Name != "system.tojson((int)?)" || !p.Columns[0].Type.Equal(cqltype.TextType) {
		t.Errorf("result columns %+v, want system.tojson((int)?) text", p.Columns)
	}
}

// TestSelectionTokenOfMarkers: token(?) is the token of a bound partition
// key, equal to the token of the row with that key.
func TestSelectionTokenOfMarkers(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		`CREATE TABLE one (k text PRIMARY KEY, v int)`,
		`CREATE TABLE two (a int, b text, c int, PRIMARY KEY ((a, b), c))`,
		`INSERT INTO one (k, v) VALUES ('x', 1)`,
		`INSERT INTO two (a, b, c) VALUES (4, 'y', 1)`,
	)
	tokens := func(q string, args ...any) (int64, int64) {
		t.Helper()
		var own, bound int64
		if err := s.Query(q, args...).Scan(&own, &bound); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return own, bound
	}
	if own, bound := tokens(`SELECT token(k), token(?) FROM one WHERE k = 'x'`, "x"); own != bound {
		t.Errorf("token(k) %d, token('x' bound) %d", own, bound)
	}
	if own, bound := tokens(`SELECT token(k), token(?) FROM one WHERE k = 'x'`, "z"); own == bound {
		t.Errorf("token of another key equals the row's: %d", own)
	}
	if own, bound := tokens(`SELECT token(k), token('x') FROM one WHERE k = 'x'`); own != bound {
		t.Errorf("token(k) %d, token('x') %d", own, bound)
	}
	if own, bound := tokens(`SELECT token(a, b), token(?, ?) FROM two WHERE a = 4 AND b = 'y'`, 4, "y"); own != bound {
		t.Errorf("token(a, b) %d, token(4, 'y' bound) %d", own, bound)
	}
	if own, bound := tokens(`SELECT token(a, b), token(a, ?) FROM two WHERE a = 4 AND b = 'y'`, "y"); own != bound {
		t.Errorf("token(a, b) %d, token(a, 'y' bound) %d", own, bound)
	}
	// A null component makes a null token.
	var tok *int64
	if err := s.Query(`SELECT token(?) FROM one WHERE k = 'x'`, nil).Scan(&tok); err != nil || tok != nil {
		t.Errorf("token(null): %v %v", tok, err)
	}
	// The bound token finds the row by a token relation.
	var own int64
	if err := s.Query(`SELECT token(?) FROM one WHERE k = 'x'`, "x").Scan(&own); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := s.Query(`SELECT v FROM one WHERE token(k) = ?`, own).Consistency(gocql.One).Scan(&v); err != nil || v != 1 {
		t.Errorf("row by token(?) of its key: %d %v", v, err)
	}
}

// TestSelectionFunctionColumns: the columns that toJson and token read
// count as selected, for DISTINCT's checks and for which rows a partition
// yields.
func TestSelectionFunctionColumns(t *testing.T) {
	_, s := selectEnv(t)
	if got := rowsOf(t, s, 0, `SELECT toJson(v) FROM t WHERE pk = 'a'`); len(got) != 10 || got[3] != `"a3"` {
		t.Errorf("toJson(v) of partition a: %q", got)
	}
	if got := rowsOf(t, s, 0, `SELECT toJson(s) FROM t WHERE pk = 'a'`); len(got) != 10 || got[0] != `"sa"` {
		t.Errorf("toJson(s) of partition a: %q", got)
	}
	if got := rowsOf(t, s, 0, `SELECT DISTINCT token(pk) FROM t`); len(got) != 3 {
		t.Errorf("DISTINCT token(pk): %q", got)
	}
	wantErr(t, s, `SELECT DISTINCT toJson(v) FROM t`, codeInvalid, "SELECT DISTINCT queries must only request partition key columns and/or static columns (not v)")
}
