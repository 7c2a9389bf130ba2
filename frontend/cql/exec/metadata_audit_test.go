package exec_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltest"
)

// metadataEnv starts a server with the tables of the metadata audit and
// returns it with an executor session in keyspace ks.
func metadataEnv(t *testing.T) (*cqltest.Server, *exec.Session) {
	t.Helper()
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, `CREATE TABLE t (a int, b text, c int, v text, w int, l list<int>, m map<text, int>, st set<int>, s int static, PRIMARY KEY ((b, a), c))`)
	cqltest.Exec(t, s, `CREATE TABLE u (k int PRIMARY KEY, v int)`)
	sess := exec.NewSession()
	sess.SetKeyspace("ks")
	return srv, sess
}

// specs renders column specs as "name type" for comparison.
func specs(cols []exec.ColumnSpec) string {
	var out []string
	for _, c := range cols {
		out = append(out, c.Name+" "+c.Type.String())
	}
	return strings.Join(out, ", ")
}

// TestMetadataAuditPKIndexes checks the partition key indexes of PREPARED
// against Cassandra 4's VariableSpecifications: a marker counts when the
// column itself is its receiver, whatever the marker's name; the last such
// marker of a column wins; a batch gives them over all its statements when
// they share one table, none otherwise.
func TestMetadataAuditPKIndexes(t *testing.T) {
	srv, sess := metadataEnv(t)
	ctx := context.Background()
	for _, tc := range []struct {
		text string
		want []uint16
	}{
		// A marker named like a key column that sets another column.
		{"UPDATE t SET w = :a WHERE a = :x AND b = :y AND c = 1", []uint16{2, 1}},
		{"INSERT INTO t (w, b, a, c) VALUES (:a, :b2, :a2, 1)", []uint16{1, 2}},
		// The same name twice: two markers, each its own receiver.
		{"INSERT INTO t (a, b, c, w) VALUES (:x, :y, 1, :x)", []uint16{1, 0}},
		// IN (?, ?): each alternative's receiver is the column; the last wins.
		{"SELECT v FROM t WHERE b = ? AND a IN (?, ?)", []uint16{0, 2}},
		{"SELECT v FROM t WHERE a IN (?, ?) AND b IN (?, 'x')", []uint16{2, 1}},
		// IN ? (in(a)) and token(?) are not the columns.
		{"SELECT v FROM t WHERE b = ? AND a IN ?", nil},
		{"SELECT v FROM t WHERE token(b, a) > ?", nil},
		{"SELECT v FROM t WHERE b = ? AND a = 1", nil},
		// Compound key bound out of order, with other markers around.
		{"UPDATE t USING TTL ? SET l = l + ? WHERE c = ? AND a = ? AND b = ? IF EXISTS", []uint16{4, 3}},
		{"DELETE m[?] FROM t WHERE b = ? AND a = ? AND c = ?", []uint16{1, 2}},
		// A batch on one table: over all statements, the last marker wins.
		{"BEGIN BATCH INSERT INTO t (a, b, c) VALUES (?, ?, 1); UPDATE t SET v = ? WHERE a = ? AND b = ? AND c = 2; APPLY BATCH", []uint16{4, 3}},
		{"BEGIN BATCH INSERT INTO t (a, b, c) VALUES (?, ?, 1); UPDATE t SET v = ? WHERE a = 1 AND b = 'x' AND c = 2; APPLY BATCH", []uint16{1, 0}},
		// A batch over two tables has none.
		{"BEGIN BATCH INSERT INTO t (a, b, c) VALUES (?, ?, 1); INSERT INTO u (k, v) VALUES (?, 1); APPLY BATCH", nil},
		{"BEGIN BATCH INSERT INTO u (k, v) VALUES (?, 1); INSERT INTO ks.u (k, v) VALUES (?, 2); APPLY BATCH", []uint16{1}},
	} {
		p, err := srv.Executor.Prepare(ctx, sess, tc.text, "")
		if err != nil {
			t.Errorf("%s: %v", tc.text, err)
			continue
		}
		if !slices.Equal(p.PKIndexes, tc.want) {
			t.Errorf("%s: PK indexes %v, want %v", tc.text, p.PKIndexes, tc.want)
		}
	}
}

// TestMetadataAuditBindSpecs checks the bound-variable names and types of
// each statement kind against the receivers Cassandra 4 gives them.
func TestMetadataAuditBindSpecs(t *testing.T) {
	srv, sess := metadataEnv(t)
	ctx := context.Background()
	for _, tc := range []struct{ text, want string }{
		{"INSERT INTO t (a, b, c, v) VALUES (?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?",
			"a int, b text, c int, v text, [ttl] int, [timestamp] bigint"},
		{"INSERT INTO t JSON ?", "[json] text"},
		{"UPDATE t SET l = l + ?, l[?] = ?, m[?] = ?, m = m + ?, st = st - ? WHERE a = ? AND b = ? AND c = ?",
			"l list<int>, idx(l) int, value(l) int, key(m) text, value(m) int, m map<text, int>, st set<int>, a int, b text, c int"},
		{"UPDATE t SET l = ? + l WHERE a = ? AND b = ? AND c = ?", "l list<int>, a int, b text, c int"},
		{"DELETE l[?], m[?] FROM t USING TIMESTAMP ? WHERE a = ? AND b = ? AND c = ?",
			"idx(l) int, key(m) text, [timestamp] bigint, a int, b text, c int"},
		{"SELECT v FROM t WHERE b = ? AND a IN ? AND c IN ? LIMIT ?", "b text, in(a) list<int>, in(c) list<int>, [limit] int"},
		{"SELECT v FROM t WHERE token(b, a) > ? AND token(b, a) <= ? PER PARTITION LIMIT ? LIMIT ?",
			"partition key token bigint, partition key token bigint, [per_partition_limit] int, [limit] int"},
		{"SELECT v FROM t WHERE b = :k AND a = :n AND c = :n", "k text, n int, n int"},
		{"UPDATE t SET v = ? WHERE a = ? AND b = ? AND c = ? IF v = ? AND l[?] = ? AND m[?] IN ? AND s > ?",
			"v text, a int, b text, c int, v text, idx(l) int, value(l) int, key(m) text, in(value(m)) list<int>, s int"},
		{"BEGIN BATCH USING TIMESTAMP ? INSERT INTO t (a, b, c) VALUES (?, ?, ?); DELETE FROM u WHERE k = ?; APPLY BATCH",
			"[timestamp] bigint, a int, b text, c int, k int"},
	} {
		p, err := srv.Executor.Prepare(ctx, sess, tc.text, "")
		if err != nil {
			t.Errorf("%s: %v", tc.text, err)
			continue
		}
		if got := specs(p.Binds); got != tc.want {
			t.Errorf("%s:\n binds %s\n want  %s", tc.text, got, tc.want)
		}
	}
}

// TestMetadataAuditConditionalPrepared checks that a conditional
// statement's PREPARED result metadata has no columns (Cassandra's
// ModificationStatement answers ResultMetadata.EMPTY), and that an EXECUTE
// asking to skip metadata still gets the [applied] rows' metadata, as
// Cassandra 4's ExecuteMessage skips it only when the result metadata id is
// the prepared one. A SELECT's rows do skip it.
func TestMetadataAuditConditionalPrepared(t *testing.T) {
	srv, sess := metadataEnv(t)
	ctx := context.Background()
	h := srv.Executor.Handler()
	prep := func(text string) *wire.Prepared {
		t.Helper()
		p, err := h.Prepare(ctx, sess, &wire.Prepare{Query: text})
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return p
	}
	exe := func(p *wire.Prepared, vals ...wire.Value) *wire.Rows {
		t.Helper()
		res, err := h.Execute(ctx, sess, &wire.Execute{ID: p.ID, Params: wire.QueryParams{Values: vals, SkipMetadata: true}})
		if err != nil {
			t.Fatal(err)
		}
		rows, ok := res.(*wire.Rows)
		if !ok {
			t.Fatalf("EXECUTE answered %T, want rows", res)
		}
		return rows
	}
	int32v := func(n int32) wire.Value {
		return wire.Value{Bytes: []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}}
	}
	text := func(s string) wire.Value { return wire.Value{Bytes: []byte(s)} }

	ins := prep("INSERT INTO t (a, b, c, v) VALUES (?, ?, ?, ?) IF NOT EXISTS")
	upd := prep("UPDATE t SET v = ? WHERE a = ? AND b = ? AND c = ? IF v = ?")
	for _, p := range []*wire.Prepared{ins, upd} {
		if len(p.Result.Columns) != 0 || !p.Result.NoMetadata {
			t.Errorf("conditional PREPARED result columns %v (NO_METADATA %v), want none, flagged", p.Result.Columns, p.Result.NoMetadata)
		}
	}
	for i, want := range []string{"[applied]", "[applied] b a c s l m st v w"} {
		rows := exe(ins, int32v(1), text("x"), int32v(2), text("v1"))
		if rows.Metadata.NoMetadata {
			t.Fatalf("INSERT IF NOT EXISTS #%d: rows without metadata", i)
		}
		var names []string
		for _, c := range rows.Metadata.Columns {
			names = append(names, c.Name)
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("INSERT IF NOT EXISTS #%d: columns %s", i, got)
		}
	}
	rows := exe(upd, text("v2"), int32v(1), text("x"), int32v(2), text("nope"))
	if rows.Metadata.NoMetadata || specs(rows.Metadata.Columns) != "[applied] boolean, v text" {
		t.Errorf("UPDATE IF v = ... not applied: no metadata %v, columns %s", rows.Metadata.NoMetadata, specs(rows.Metadata.Columns))
	}
	if len(rows.Rows) != 1 || fmt.Sprintf("%v|%s", rows.Rows[0][0], rows.Rows[0][1]) != "[0]|v1" {
		t.Errorf("UPDATE IF v = ... not applied: rows %q", rows.Rows)
	}

	sel := prep("SELECT v FROM t WHERE a = ? AND b = ?")
	if specs(sel.Result.Columns) != "v text" || sel.Result.NoMetadata {
		t.Errorf("SELECT PREPARED result columns %s", specs(sel.Result.Columns))
	}
	if rows := exe(sel, int32v(1), text("x")); !rows.Metadata.NoMetadata || rows.Metadata.Count() != 1 {
		t.Errorf("SELECT asked to skip metadata: no metadata %v, count %d", rows.Metadata.NoMetadata, rows.Metadata.Count())
	}
}

// TestMetadataAuditCASRows checks the rows of a not-applied conditional
// batch as Cassandra 4 builds them (ModificationStatement.buildCasResultSet
// over the CAS read, SelectStatement.processPartition): the rows the
// conditions name that exist, once each, in the table's clustering order
// whatever the statements' order; the static row alone only when no such
// row exists; with conditions on the static row only, the partition's first
// row (CQL3CasRequest reads one row then), without its regular columns;
// the static row only when the read asks for it (a static condition or a
// static column written).
func TestMetadataAuditCASRows(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TABLE t (k int, c int, v int, st int static, PRIMARY KEY (k, c))")
	cqltest.Exec(t, s, "CREATE TABLE d (k int, c int, v int, st int static, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
	for _, tb := range []string{"t", "d"} {
		cqltest.Exec(t, s, "INSERT INTO "+tb+" (k, c, v, st) VALUES (1, 1, 10, 5)")
		cqltest.Exec(t, s, "INSERT INTO "+tb+" (k, c, v) VALUES (1, 2, 20)")
	}
	sess := exec.NewSession()
	sess.SetKeyspace("ks")
	ctx := context.Background()
	// render shows the column names, then each row's values (ints and
	// booleans), null as "null".
	render := func(res *exec.Result, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range res.Columns {
			names = append(names, c.Name)
		}
		out := []string{strings.Join(names, " ")}
		for _, r := range res.Rows {
			var vals []string
			for _, v := range r {
				switch len(v) {
				case 0:
					vals = append(vals, "null")
				case 1:
					vals = append(vals, fmt.Sprint(v[0] != 0))
				default:
					vals = append(vals, fmt.Sprint(int32(binary.BigEndian.Uint32(v))))
				}
			}
			out = append(out, strings.Join(vals, " "))
		}
		return strings.Join(out, " | ")
	}
	batch := func(stmts ...string) string {
		t.Helper()
		req := &exec.BatchRequest{Type: ast.BatchLogged}
		for _, q := range stmts {
			req.Children = append(req.Children, exec.BatchChild{Query: q})
		}
		return render(srv.Executor.Batch(ctx, sess, req))
	}
	single := func(stmt string) string {
		t.Helper()
		return render(srv.Executor.Query(ctx, sess, stmt, &exec.Params{}))
	}
	for _, tc := range []struct {
		got, want string
	}{
		{batch("UPDATE t SET v = 0 WHERE k = 1 AND c = 2 IF v = 0", "UPDATE t SET v = 0 WHERE k = 1 AND c = 1 IF v = 0"),
			"[applied] k c v | false 1 1 10 | false 1 2 20"},
		{batch("UPDATE d SET v = 0 WHERE k = 1 AND c = 1 IF v = 0", "UPDATE d SET v = 0 WHERE k = 1 AND c = 2 IF v = 0"),
			"[applied] k c v | false 1 2 20 | false 1 1 10"},
		{batch("UPDATE t SET v = 0 WHERE k = 1 AND c = 1 IF v = 0", "UPDATE t SET v = 1 WHERE k = 1 AND c = 1 IF v = 1"),
			"[applied] k c v | false 1 1 10"},
		{batch("UPDATE t SET st = 0 WHERE k = 1 IF st = 0", "UPDATE t SET v = 0 WHERE k = 1 AND c = 2 IF v = 0"),
			"[applied] k c st v | false 1 2 5 20"},
		{batch("UPDATE t SET st = 0 WHERE k = 1 IF st = 0", "UPDATE t SET v = 0 WHERE k = 1 AND c = 3 IF v = 0"),
			"[applied] k c st v | false 1 null 5 null"},
		{batch("UPDATE t SET v = 0 WHERE k = 1 AND c = 3 IF v = 0", "UPDATE t SET v = 0 WHERE k = 1 AND c = 4 IF v = 0"),
			"[applied] | false"},
		{batch("UPDATE t SET st = 0 WHERE k = 1 IF st = 0"),
			"[applied] k c st | false 1 1 5"},
		{batch("INSERT INTO t (k, c, v) VALUES (1, 2, 0) IF NOT EXISTS", "UPDATE t SET v = 0 WHERE k = 1 AND c = 1 IF v = 0"),
			"[applied] k c st v | false 1 1 5 10 | false 1 2 5 20"},
		{single("UPDATE t SET st = 0 WHERE k = 1 IF st = 0"), "[applied] st | false 5"},
		{single("INSERT INTO t (k, st) VALUES (1, 0) IF NOT EXISTS"), "[applied] k c st v | false 1 1 5 null"},
		{single("UPDATE t SET v = 0 WHERE k = 1 AND c = 3 IF EXISTS"), "[applied] | false"},
		{single("UPDATE t SET v = 0, st = 0 WHERE k = 1 AND c = 3 IF EXISTS"), "[applied] k c st v | false 1 null 5 null"},
		{single("DELETE FROM t WHERE k = 1 AND c = 2 IF v = 0 AND st = 0"), "[applied] v st | false 20 5"},
		{single("UPDATE t SET st = 1 WHERE k = 2 IF st = 0"), "[applied] | false"},
	} {
		if tc.got != tc.want {
			t.Errorf("answer %q\n want %q", tc.got, tc.want)
		}
	}
}
