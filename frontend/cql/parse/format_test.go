package parse

import (
	"reflect"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

// roundTrip checks that ast.Format of a parsed statement parses back to
// the same tree.
func roundTrip(t *testing.T, text string, s ast.Statement) {
	t.Helper()
	out := ast.Format(s)
	back, err := Statement(out)
	if err != nil {
		t.Fatalf("%q formats as %q, which does not parse: %v", text, out, err)
	}
	stripPos(reflect.ValueOf(s))
	stripPos(reflect.ValueOf(back))
	if !reflect.DeepEqual(s, back) {
		t.Fatalf("%q formats as %q, which parses to\n%s\nnot\n%s", text, out, dump(back), dump(s))
	}
}

func TestFormatRoundTrip(t *testing.T) {
	for _, text := range allTestStatements() {
		s, err := Statement(text)
		if err != nil {
			continue // the error cases
		}
		roundTrip(t, text, s)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`select "A", b AS "select", count(*) from Ks."T" where k = 'it''s' and c in (1, 2) limit ?`,
			`SELECT "A", b AS "select", COUNT(*) FROM ks."T" WHERE k = 'it''s' AND c IN (1, 2) LIMIT ?`},
		{"update t set c = c + 1, l = [1] + l where k = :k if exists",
			"UPDATE t SET c = c + 1, l = [1] + l WHERE k = :k IF EXISTS"},
		{"create table t (k int primary key, v map<text, int>) with comment = 'x'",
			"CREATE TABLE t (k int, v map<text, int>, PRIMARY KEY ((k))) WITH comment = 'x'"},
		{"grant select on keyspace ks to Bob", "GRANT SELECT ON KEYSPACE ks TO 'bob'"},
	} {
		s, err := Statement(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := ast.Format(s); got != c.want {
			t.Errorf("Format(%q)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}
