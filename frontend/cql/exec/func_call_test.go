package exec_test

import (
	"context"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/internal/cqltest"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// funcEnv is selectEnv with table ft (k int key; b blob, i int, tx text,
// ts timestamp) for writes.
func funcEnv(t *testing.T) (*cqltest.Server, *gocql.Session) {
	srv, s := selectEnv(t)
	cqltest.Exec(t, s, `CREATE TABLE ft (k int PRIMARY KEY, b blob, i int, tx text, ts timestamp)`)
	return srv, s
}

// TestFunctionTypeErrors: a call whose only signature does not take an
// argument gets Cassandra 4's message (FunctionResolver.validateTypes): the
// argument as written (a column, a literal, a nested call, a hint) and the
// function's full name, in selections, in written values and in WHERE
// terms.
func TestFunctionTypeErrors(t *testing.T) {
	_, s := funcEnv(t)
	const typeErr = "Type error: "
	for _, tc := range []struct{ q, msg string }{
		// Selections: arguments are shown by their selector's text.
		{`SELECT intAsBlob(v) FROM t`, "v cannot be passed as argument 0 of function system.intasblob of type int"},
		{`SELECT intAsBlob('x') FROM t`, "'x' cannot be passed as argument 0 of function system.intasblob of type int"},
		{`SELECT blobAsInt(1) FROM t`, "1 cannot be passed as argument 0 of function system.blobasint of type blob"},
		{`SELECT blobAsInt(true) FROM t`, "true cannot be passed as argument 0 of function system.blobasint of type blob"},
		{`SELECT intAsBlob(textAsBlob(v)) FROM t`, "system.textasblob(v) cannot be passed as argument 0 of function system.intasblob of type int"},
		{`SELECT intAsBlob(writetime(v)) FROM t`, "writetime(v) cannot be passed as argument 0 of function system.intasblob of type int"},
		{`SELECT intAsBlob(cast(ck AS text)) FROM t`, "cast(ck as text) cannot be passed as argument 0 of function system.intasblob of type int"},
		{`SELECT intAsBlob((text)?) FROM t`, "(text)? cannot be passed as argument 0 of function system.intasblob of type int"},
		{`SELECT system.dateOf(v) FROM t`, "v cannot be passed as argument 0 of function system.dateof of type timeuuid"},
		{`SELECT minTimeuuid(ck) FROM t`, "ck cannot be passed as argument 0 of function system.mintimeuuid of type timestamp"},
		// Written values: arguments are shown as Cassandra's Term.Raw
		// writes them.
		{`INSERT INTO ft (k, b) VALUES (0, intAsBlob('x'))`, "'x' cannot be passed as argument 0 of function system.intasblob of type int"},
		{`INSERT INTO ft (k, b) VALUES (0, intAsBlob((bigint)1))`, "(bigint)1 cannot be passed as argument 0 of function system.intasblob of type int"},
		{`UPDATE ft SET i = blobAsInt(1) WHERE k = 0`, "1 cannot be passed as argument 0 of function system.blobasint of type blob"},
		{`UPDATE ft SET b = intAsBlob(textAsBlob('a')) WHERE k = 0`, "textasblob('a') cannot be passed as argument 0 of function system.intasblob of type int"},
		{`UPDATE ft SET b = intAsBlob([1, 2]) WHERE k = 0`, "[1, 2] cannot be passed as argument 0 of function system.intasblob of type int"},
		{`INSERT INTO ft (k, ts) VALUES (0, minTimeuuid(0x00))`, "0x00 cannot be passed as argument 0 of function system.mintimeuuid of type timestamp"},
		// WHERE terms.
		{`UPDATE ft SET i = 1 WHERE k = blobAsInt('a')`, "'a' cannot be passed as argument 0 of function system.blobasint of type blob"},
		{`DELETE FROM ft WHERE k = blobAsInt(2)`, "2 cannot be passed as argument 0 of function system.blobasint of type blob"},
		{`SELECT * FROM ft WHERE k = blobAsInt(3)`, "3 cannot be passed as argument 0 of function system.blobasint of type blob"},
	} {
		wantExactErr(t, s, tc.q, codeInvalid, typeErr+tc.msg)
	}
	// The count of arguments is checked first, naming the function in full.
	wantExactErr(t, s, `SELECT intAsBlob(ck, ck) FROM t`, codeInvalid,
		"Invalid number of arguments in call to function system.intasblob: 1 required but 2 provided")
	wantExactErr(t, s, `INSERT INTO ft (k, b) VALUES (0, intAsBlob())`, codeInvalid,
		"Invalid number of arguments in call to function system.intasblob: 1 required but 0 provided")
}

// TestFunctionArgumentsAccepted: what Cassandra's resolver accepts keeps
// working. A blob parameter reads a value of any type (BytesType), whose
// bytes the function then checks; a marker takes its parameter's type; a
// nested call passes its result type.
func TestFunctionArgumentsAccepted(t *testing.T) {
	_, s := funcEnv(t)
	wantRows(t, rowsOf(t, s, 0, `SELECT blobAsText(v), blobAsInt(0x00000001), intAsBlob(1) FROM t WHERE pk = 'a' AND ck = 1`),
		"a1|1|&[0 0 0 1]") // rowsOf prints a blob as a pointer
	wantExactErr(t, s, `SELECT blobAsInt(v) FROM t WHERE pk = 'a' AND ck = 1`, codeInvalid,
		"In call to function system.blobasint, value 0x6131 is not a valid binary representation for type int")
	cqltest.Exec(t, s,
		`INSERT INTO ft (k, b, i) VALUES (1, intAsBlob(1), blobAsInt(0x00000002))`,
		`UPDATE ft SET tx = blobAsText(textAsBlob('x')), ts = toTimestamp(now()) WHERE k = blobAsInt(0x00000001)`,
		`INSERT INTO ft (k, ts) VALUES (2, toTimestamp('2024-01-02'))`,
	)
	if err := s.Query(`INSERT INTO ft (k, b) VALUES (3, intAsBlob(?))`, 7).Exec(); err != nil {
		t.Fatal(err)
	}
	wantRows(t, rowsOf(t, s, 0, `SELECT k, b, i, tx FROM ft WHERE k IN (1, 3)`), "1|&[0 0 0 1]|2|x", "3|&[0 0 0 7]|0|")
	wantRows(t, rowsOf(t, s, 0, `SELECT toUnixTimestamp(ts) FROM ft WHERE k = 2`), "1704153600000")
	var ts int64
	if err := s.Query(`SELECT toUnixTimestamp(ts) FROM ft WHERE k = 1`).Scan(&ts); err != nil || ts == 0 {
		t.Errorf("ts of toTimestamp(now()): %d %v", ts, err)
	}
}

// TestLiteralSelectors: Cassandra 4 infers no type for a literal selected
// by itself (Selectable.WithTerm), nor for one passed to toJson or CAST,
// whose parameter takes any type: the query needs a type hint. A literal
// passed to a parameter of known type takes that type, and count(1) is
// count(*).
func TestLiteralSelectors(t *testing.T) {
	srv, s := funcEnv(t)
	const infer = " in selection clause (try using a cast to force a type)"
	for q, term := range map[string]string{
		`SELECT 1 FROM t`:                        "1",
		`SELECT 'a' FROM t`:                      "'a'",
		`SELECT ck, 1.5 FROM t`:                  "1.5",
		`SELECT true FROM t`:                     "true",
		`SELECT 0x01 FROM t`:                     "0x01",
		`SELECT null FROM t`:                     "NULL",
		`SELECT [1, 2] FROM t`:                   "[1, 2]",
		`SELECT {'k': 1} FROM t`:                 "{'k': 1}",
		`SELECT toJson(1) FROM t`:                "1",
		`SELECT toJson('a') FROM t`:              "'a'",
		`SELECT cast(1 AS text) FROM t`:          "1",
		`SELECT toJson(max(1)), 'x' FROM t`:      "'x'",
		`SELECT pk, ck, 3 FROM t WHERE pk = 'a'`: "3",
	} {
		wantExactErr(t, s, q, codeInvalid, "Cannot infer type for term "+term+infer)
	}

	// A hint the literal does not fit is refused as Cassandra's
	// WithTypeHint refuses it.
	wantExactErr(t, s, `SELECT (int)'a' FROM t`, codeInvalid, "Cannot assign value (int)'a' to (int)'a' of type int")
	wantExactErr(t, s, `SELECT toJson((blob)1) FROM t`, codeInvalid, "Cannot assign value (blob)1 to (blob)1 of type blob")

	// A type hint gives the literal its type.
	row := ` FROM t WHERE pk = 'a' AND ck = 1`
	wantRows(t, rowsOf(t, s, 0, `SELECT (int)1, (text)'a', (bigint)3000000000, toJson((int)1), cast((int)2 AS text)`+row),
		"1|a|3000000000|1|2")
	var n *int
	if err := s.Query(`SELECT (int)null` + row).Scan(&n); err != nil || n != nil {
		t.Errorf("(int)null: %v %v", n, err)
	}
	// Parameters of known type type their literals; aggregates of
	// literals take the literal's preferred type (int, bigint, ascii), as
	// Cassandra's Constants.Literal prefers.
	wantRows(t, rowsOf(t, s, 0, `SELECT blobAsInt(0x00000001), intAsBlob(1), sum(3000000000), max('z'), count(1)`+row),
		"1|&[0 0 0 1]|3000000000|z|1")
	// null is no literal there: it fits every count signature.
	wantErr(t, s, `SELECT count(null) FROM t`, codeInvalid, "Ambiguous call to function count (can be matched by following signatures: system.count : (ascii) -> bigint, ")
	ctx := context.Background()
	sess := exec.NewSession()
	sess.SetKeyspace("ks")
	p, err := srv.Executor.Prepare(ctx, sess, `SELECT (int)1, sum(3000000000), max('z'), max('é'), min(1.5), count(1) FROM t`, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []exec.ColumnSpec{
		{Name: "(int)1", Type: cqltype.IntType},
		{Name: "system.sum(3000000000)", Type: cqltype.BigintType},
		{Name: "system.max('z')", Type: cqltype.AsciiType},
		{Name: "system.max('é')", Type: cqltype.TextType},
		{Name: "system.min(1.5)", Type: cqltype.DoubleType},
		// count of a literal is count(*), named count.
		{Name: "count", Type: cqltype.BigintType},
	}
	got := p.Columns
	if len(got) != len(want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
	for i, w := range want {
		if got[i].Name != w.Name || !got[i].Type.Equal(w.Type) {
			t.Errorf("column %d: %s %s, want %s %s", i, got[i].Name, got[i].Type, w.Name, w.Type)
		}
	}
}
