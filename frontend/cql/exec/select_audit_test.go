package exec_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// auditEnv has t2 (partition key (a, b), clustering c, d) with partitions
// (1, 1) and (2, 1), rows c 1..3 × d 1..2 and v = 10c + d, and an empty
// table e of every summable type.
func auditEnv(t *testing.T) *gocql.Session {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		`CREATE TABLE t2 (a int, b int, c int, d int, v int, s int static, l list<int>, m map<text, int>, PRIMARY KEY ((a, b), c, d))`,
		`CREATE TABLE e (k int, c int, i int, big bigint, f float, dec decimal, vi varint, PRIMARY KEY (k, c))`)
	for a := 1; a <= 2; a++ {
		for c := 1; c <= 3; c++ {
			for d := 1; d <= 2; d++ {
				if err := s.Query(`INSERT INTO t2 (a, b, c, d, v) VALUES (?, 1, ?, ?, ?)`, a, c, d, 10*c+d).Exec(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return s
}

// TestSelectAuditRefusals checks WHERE, ORDER BY, GROUP BY, DISTINCT and
// limit shapes Cassandra 4.0 refuses, with its messages (StatementRestrictions,
// SingleColumnRestriction, ClusteringColumnRestrictions, SelectStatement).
func TestSelectAuditRefusals(t *testing.T) {
	s := auditEnv(t)
	const filtering = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"
	for _, c := range []struct{ q, msg string }{
		// Restrictions.
		{`SELECT * FROM t2 WHERE v = 1`, filtering},
		{`SELECT * FROM t2 WHERE a = 1`, filtering},
		{`SELECT * FROM t2 WHERE a > 1`, filtering},
		{`SELECT * FROM t2 WHERE a > 1 AND b = 1`, filtering},
		{`SELECT * FROM t2 WHERE token(a, b) > 0 AND a > 1 ALLOW FILTERING`, "Only EQ and IN relation are supported on the partition key (unless you use the token() function)"},
		{`SELECT * FROM t2 WHERE c = 1`, filtering},
		{`SELECT * FROM t2 WHERE token(a, b) > 0 AND c > 1`, filtering},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND s = 1`, filtering},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND l CONTAINS 1`, filtering},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND d > 1`, `PRIMARY KEY column "d" cannot be restricted as preceding column "c" is not restricted`},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND c > 1 AND d = 1`, `Clustering column "d" cannot be restricted (preceding column "c" is restricted by a non-EQ relation)`},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND c = 1 AND c > 0`, "c cannot be restricted by more than one relation if it includes an Equal"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND c IN (1) AND c > 0`, "c cannot be restricted by more than one relation if it includes an Equal"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND c IN (1, 2) AND c > 1`, "c cannot be restricted by more than one relation if it includes a IN"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND c > 1 AND c = 3`, `Column "c" cannot be restricted by both an equality and an inequality relation`},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND c > 1 AND c > 2`, "More than one restriction was found for the start bound on c"},
		{`SELECT * FROM t2 WHERE a = 1 AND a = 2 AND b = 1`, "a cannot be restricted by more than one relation if it includes an Equal"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND v = 1 AND v = 2 ALLOW FILTERING`, "v cannot be restricted by more than one relation if it includes an Equal"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND v > 1 AND v = 3 ALLOW FILTERING`, `Column "v" cannot be restricted by both an equality and an inequality relation`},
		// Cassandra 4 merges single and multi-column relations as tuples
		// (MultiColumnRestriction.mergeWith).
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND (c, d) > (1, 1) AND c = 1`, `Column "c" cannot be restricted by both an equality and an inequality relation`},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND c = 1 AND (c, d) > (1, 1)`, "c cannot be restricted by more than one relation if it includes an Equal"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND (c, d) IN ((1, 1)) AND d > 1`, "d cannot be restricted by more than one relation if it includes an Equal"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND (c, d) IN ((1, 1), (2, 2)) AND d > 1`, "d cannot be restricted by more than one relation if it includes a IN"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND (c, d) > (1, 1) AND d < 3`, `Column "d" cannot be restricted by two inequalities not starting with the same column`},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND c > 1 AND (c, d) > (1, 1)`, "More than one restriction was found for the start bound on c"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND (d) > (1)`, `PRIMARY KEY column "d" cannot be restricted as preceding column "c" is not restricted`},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND (d, c) IN ((1, 1), (2, 2))`, "Clustering columns must appear in the PRIMARY KEY order in multi-column relations: (d, c)"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND v CONTAINS 1 ALLOW FILTERING`, "Cannot use CONTAINS on non-collection column v"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND l CONTAINS KEY 1 ALLOW FILTERING`, "Cannot use CONTAINS KEY on non-map column l"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND v != 1 ALLOW FILTERING`, `Unsupported "!=" relation: v != 1`},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND c != 1`, `Unsupported "!=" relation: c != 1`},
		{`SELECT * FROM t2 WHERE a != 1`, `Unsupported "!=" relation: a != 1`},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND v LIKE 'x'`, "LIKE restriction is only supported on properly indexed columns. v LIKE 'x' is not valid."},
		// ORDER BY.
		{`SELECT * FROM t2 ORDER BY v`, "ORDER BY is only supported when the partition key is restricted by an EQ or an IN."},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 ORDER BY v`, "Order by is currently only supported on the clustered columns of the PRIMARY KEY, got v"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 ORDER BY d`, "Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND c IN (1, 2) ORDER BY d`, "Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 ORDER BY c ASC, d DESC`, "Unsupported order by relation"},
		// LIMIT and PER PARTITION LIMIT.
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 LIMIT 0`, "LIMIT must be strictly positive"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 LIMIT -1`, "LIMIT must be strictly positive"},
		{`SELECT * FROM t2 PER PARTITION LIMIT 0`, "LIMIT must be strictly positive"}, // getLimit's words in 4.0 and 4.1
		{`SELECT DISTINCT a, b FROM t2 PER PARTITION LIMIT 1`, "PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries"},
		{`SELECT count(*) FROM t2 PER PARTITION LIMIT 1`, "PER PARTITION LIMIT is not allowed with aggregate queries."},
		// GROUP BY.
		{`SELECT count(*) FROM t2 GROUP BY a`, "Group by is not supported on only a part of the partition key"},
		{`SELECT count(*) FROM t2 GROUP BY v`, "Group by is currently only supported on the columns of the PRIMARY KEY, got v"},
		{`SELECT count(*) FROM t2 GROUP BY c`, "Group by currently only support groups of columns following their declared order in the PRIMARY KEY"},
		{`SELECT count(*) FROM t2 GROUP BY a, b, d`, "Group by currently only support groups of columns following their declared order in the PRIMARY KEY"},
		{`SELECT count(*) FROM t2 WHERE a = 1 AND b = 1 AND c IN (1, 2) GROUP BY d`, "Group by currently only support groups of columns following their declared order in the PRIMARY KEY"},
		{`SELECT DISTINCT a, b FROM t2 GROUP BY a, b, c`, "Grouping on clustering columns is not allowed for SELECT DISTINCT queries"},
		// DISTINCT.
		{`SELECT DISTINCT a, b, c FROM t2`, "SELECT DISTINCT queries must only request partition key columns and/or static columns (not c)"},
		{`SELECT DISTINCT a FROM t2`, "SELECT DISTINCT queries must request all the partition key columns (missing b)"},
		{`SELECT DISTINCT a FROM t2 WHERE a = 1 AND b > 0 ALLOW FILTERING`, "SELECT DISTINCT queries must request all the partition key columns (missing b)"},
		{`SELECT DISTINCT a, b FROM t2 WHERE a = 1 AND b = 1 AND c = 1`, "SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns."},
		{`SELECT DISTINCT a, b FROM t2 WHERE v = 1 ALLOW FILTERING`, "SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns."},
	} {
		wantError(t, s, c.q, c.msg)
	}
}

// TestSelectAuditAccepted checks shapes Cassandra 4.0 accepts and what they
// return.
func TestSelectAuditAccepted(t *testing.T) {
	s := auditEnv(t)
	// DISTINCT by key need not select the whole partition key.
	wantRows(t, rowsOf(t, s, 0, `SELECT DISTINCT a FROM t2 WHERE a = 2 AND b = 1`), "2")
	// A partition key slice filters, with ALLOW FILTERING.
	wantRows(t, rowsOf(t, s, 0, `SELECT a, c, d FROM t2 WHERE a > 1 AND c = 3 ALLOW FILTERING`), "2|3|1", "2|3|2")
	// ORDER BY may skip clustering columns restricted by =.
	for _, size := range []int{0, 1} {
		wantRows(t, rowsOf(t, s, size, `SELECT c, d FROM t2 WHERE a = 1 AND b = 1 AND c = 2 ORDER BY d DESC`), "2|2", "2|1")
		wantRows(t, rowsOf(t, s, size, `SELECT c, d FROM t2 WHERE a = 1 AND b = 1 AND c IN (3) ORDER BY d DESC`), "3|2", "3|1")
	}
	// IN on the partition key with ORDER BY is refused only when paged:
	// when the page is smaller than the LIMIT, or the IN holds two values
	// even if equal.
	in := `SELECT c, d FROM t2 WHERE a IN (1, 2) AND b = 1 AND c IN (1, 2) ORDER BY c DESC, d DESC`
	wantRows(t, rowsOf(t, s, 2, in+` LIMIT 2`), "2|2", "2|2")
	wantRows(t, rowsOf(t, s, 2, `SELECT a, d FROM t2 WHERE a IN (1) AND b = 1 AND c = 2 ORDER BY c DESC`), "1|2", "1|1")
	for _, q := range []string{in + ` LIMIT 3`, `SELECT a FROM t2 WHERE a IN (1, 1) AND b = 1 ORDER BY c DESC`} {
		if err := s.Query(q).PageSize(2).Exec(); err == nil || !strings.Contains(err.Error(), "Cannot page queries with both ORDER BY and a IN restriction") {
			t.Fatalf("%s paged: %v", q, err)
		}
	}
	// A single-column bound and a multi-column one on the same first
	// column make one slice.
	for _, q := range []string{
		`SELECT c, d FROM t2 WHERE a = 1 AND b = 1 AND (c, d) > (1, 1) AND c < 3`,
		`SELECT c, d FROM t2 WHERE a = 1 AND b = 1 AND c < 3 AND (c, d) > (1, 1)`,
	} {
		wantRows(t, rowsOf(t, s, 0, q), "1|2", "2|1", "2|2")
	}
	// IN () selects nothing, on any column.
	for _, q := range []string{
		`SELECT * FROM t2 WHERE a IN () AND b = 1`,
		`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND c IN ()`,
		`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND (c, d) IN ()`,
		`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND v IN () ALLOW FILTERING`,
	} {
		wantRows(t, rowsOf(t, s, 0, q))
	}
	// A static column restriction keeps DISTINCT.
	cqltest.Exec(t, s, `UPDATE t2 SET s = 7 WHERE a = 2 AND b = 1`)
	wantRows(t, rowsOf(t, s, 0, `SELECT DISTINCT a, b, s FROM t2 WHERE s = 7 ALLOW FILTERING`), "2|1|7")
}

// TestSelectAuditGroupBy checks GROUP BY as Cassandra 4.0 groups: columns
// restricted by = may be left out, ORDER BY DESC groups in reverse, and
// LIMIT and PER PARTITION LIMIT count groups.
func TestSelectAuditGroupBy(t *testing.T) {
	s := auditEnv(t)
	q := func(stmt string) []string { return rowsOf(t, s, 0, stmt) }
	wantRows(t, q(`SELECT c, count(*), max(v) FROM t2 WHERE a = 1 AND b = 1 GROUP BY c`), "1|2|12", "2|2|22", "3|2|32")
	wantRows(t, q(`SELECT c, count(*), max(v) FROM t2 WHERE a = 1 AND b = 1 GROUP BY c ORDER BY c DESC`), "3|2|32", "2|2|22", "1|2|12")
	wantRows(t, q(`SELECT c, d, v FROM t2 WHERE a = 1 AND b = 1 AND c = 2 GROUP BY d`), "2|1|21", "2|2|22")
	wantRows(t, q(`SELECT a, count(*) FROM t2 WHERE a = 2 GROUP BY b ALLOW FILTERING`), "2|6")
	// Partitions come in token order.
	parts := q(`SELECT a FROM t2 GROUP BY a, b`)
	if len(parts) != 2 {
		t.Fatalf("partitions %q", parts)
	}
	p0, p1 := parts[0], parts[1]
	wantRows(t, q(`SELECT a, c, count(*) FROM t2 GROUP BY a, b, c LIMIT 4`), p0+"|1|2", p0+"|2|2", p0+"|3|2", p1+"|1|2")
	wantRows(t, q(`SELECT a, c, sum(v) FROM t2 GROUP BY a, b, c PER PARTITION LIMIT 2`), p0+"|1|23", p0+"|2|43", p1+"|1|23", p1+"|2|43")
	wantRows(t, q(`SELECT a, c, sum(v) FROM t2 GROUP BY a, b, c PER PARTITION LIMIT 1 LIMIT 1`), p0+"|1|23")
	wantRows(t, q(`SELECT a, b, count(*) FROM t2 GROUP BY a, b`), p0+"|1|6", p1+"|1|6")
	// Groups and rows of several partitions named by IN, sorted by ORDER
	// BY: testdata/transcripts/select_in_order.cql.
}

// TestSelectAuditEmptyAggregates checks aggregates over no rows as Cassandra
// 4.0 returns them: count 0, min and max null, sum and avg 0; and that sum
// of int wraps as Cassandra's int accumulator does while avg does not.
func TestSelectAuditEmptyAggregates(t *testing.T) {
	s := auditEnv(t)
	var (
		n                int64
		mx, mn           *int
		sum, avg         *int
		bsum, bavg       *int64
		fsum, favg       *float32
		dsum, davg, vsum *string
	)
	err := s.Query(`SELECT count(*), max(i), min(i), sum(i), avg(i), sum(big), avg(big), sum(f), avg(f), CAST(sum(dec) AS text), CAST(avg(dec) AS text), CAST(sum(vi) AS text) FROM e`).
		Scan(&n, &mx, &mn, &sum, &avg, &bsum, &bavg, &fsum, &favg, &dsum, &davg, &vsum)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || mx != nil || mn != nil {
		t.Fatalf("count, max, min over no rows = %d, %v, %v; want 0, null, null", n, mx, mn)
	}
	got := fmt.Sprintln(*sum, *avg, *bsum, *bavg, *fsum, *favg, *dsum, *davg, *vsum)
	if got != "0 0 0 0 0 0 0 0 0\n" {
		t.Fatalf("sum and avg over no rows = %s, want zeros", got)
	}
	cqltest.Exec(t, s,
		`INSERT INTO e (k, c, i, big) VALUES (1, 1, 2147483647, 9223372036854775807)`,
		`INSERT INTO e (k, c, i, big) VALUES (1, 2, 1, 1)`)
	wantRows(t, rowsOf(t, s, 0, `SELECT sum(i), avg(i), sum(big), avg(big) FROM e`),
		"-2147483648|1073741824|-9223372036854775808|4611686018427387904")
}

// TestSelectAuditLimitMarkers checks bound limits as Cassandra 4.0's
// getLimit: null refused, unset no limit, 0 refused with LIMIT's words.
func TestSelectAuditLimitMarkers(t *testing.T) {
	s := auditEnv(t)
	const q = `SELECT c, d FROM t2 WHERE a = 1 AND b = 1 AND c = 1`
	for _, c := range []struct {
		stmt string
		arg  any
		msg  string
	}{
		{q + ` LIMIT ?`, nil, "Invalid null value of limit"},
		{q + ` PER PARTITION LIMIT ?`, nil, "Invalid null value of limit"},
		{q + ` LIMIT ?`, 0, "LIMIT must be strictly positive"},
		{q + ` PER PARTITION LIMIT ?`, -1, "LIMIT must be strictly positive"},
	} {
		err := s.Query(c.stmt, c.arg).Exec()
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("%s with %v: %v, want %q", c.stmt, c.arg, err, c.msg)
		}
	}
	wantRows(t, rowsOf(t, s, 0, q+` LIMIT ?`, gocql.UnsetValue), "1|1", "1|2")
	wantRows(t, rowsOf(t, s, 0, q+` PER PARTITION LIMIT ?`, gocql.UnsetValue), "1|1", "1|2")
	wantRows(t, rowsOf(t, s, 0, q+` LIMIT ?`, 1), "1|1")
}

// TestSelectAuditPagingReversed checks that paging with ORDER BY DESC over
// clustering IN and slices, and over filtered scans, returns every row once
// in order whatever the page size.
func TestSelectAuditPagingReversed(t *testing.T) {
	s := auditEnv(t)
	for _, c := range []struct {
		q    string
		want []string
	}{
		{`SELECT c, d FROM t2 WHERE a = 1 AND b = 1 AND c IN (1, 3) ORDER BY c DESC, d DESC`, []string{"3|2", "3|1", "1|2", "1|1"}},
		{`SELECT c, d FROM t2 WHERE a = 1 AND b = 1 AND c >= 2 ORDER BY c DESC`, []string{"3|2", "3|1", "2|2", "2|1"}},
		{`SELECT c, d FROM t2 WHERE a = 1 AND b = 1 AND (c, d) < (3, 1) ORDER BY c DESC LIMIT 3`, []string{"2|2", "2|1", "1|2"}},
		{`SELECT c, d FROM t2 WHERE a = 1 AND b = 1 AND c = 2 ORDER BY d DESC`, []string{"2|2", "2|1"}},
		{`SELECT c, d FROM t2 WHERE a >= 2 AND d = 2 ALLOW FILTERING`, []string{"1|2", "2|2", "3|2"}},
	} {
		for _, size := range []int{1, 2, 3, 100} {
			wantRows(t, rowsOf(t, s, size, c.q), c.want...)
		}
	}
}

// TestSelectAuditTokenAndKeys checks a token restriction together with =
// or IN on the whole partition key: Cassandra 4 reads the keys and keeps
// those in the token range; a partial key with a token is refused.
func TestSelectAuditTokenAndKeys(t *testing.T) {
	s := auditEnv(t)
	var toks []int64
	var parts []string
	it := cqltest.Paged(t, s.Query(`SELECT DISTINCT a, token(a, b) FROM t2`).Iter())
	var a int
	var tok int64
	for it.Scan(&a, &tok) {
		parts, toks = append(parts, fmt.Sprint(a)), append(toks, tok)
	}
	if err := it.Close(); err != nil || len(toks) != 2 {
		t.Fatalf("tokens %v %v: %v", parts, toks, err)
	}
	const q = `SELECT DISTINCT a, b FROM t2 WHERE a IN (1, 2) AND b = 1 AND `
	wantRows(t, rowsOf(t, s, 0, q+`token(a, b) > ?`, toks[0]), parts[1]+"|1")
	wantRows(t, rowsOf(t, s, 0, q+`token(a, b) >= ? AND token(a, b) <= ?`, toks[0], toks[0]), parts[0]+"|1")
	wantRows(t, rowsOf(t, s, 0, q+`token(a, b) > ?`, toks[1]))
	wantRows(t, rowsOf(t, s, 1, `SELECT a, c, d FROM t2 WHERE token(a, b) < ? AND a = `+parts[1]+` AND b = 1 AND c = 3`, toks[1]))
	wantRows(t, rowsOf(t, s, 1, `SELECT a, c, d FROM t2 WHERE token(a, b) <= ? AND a = `+parts[1]+` AND b = 1 AND c = 3`, toks[1]),
		parts[1]+"|3|1", parts[1]+"|3|2")
	wantError(t, s, `SELECT * FROM t2 WHERE token(a, b) > 0 AND a = 1`, "Partition key parts: b must be restricted as other parts are")
}

// TestSelectAuditColumnTypes checks what Cassandra 4's SingleColumnRelation
// refuses of an operator on a column's type.
func TestSelectAuditColumnTypes(t *testing.T) {
	s := auditEnv(t)
	cqltest.Exec(t, s, `CREATE TYPE ut (x int)`,
		`CREATE TABLE t3 (k int, c int, dur duration, ld list<duration>, fl frozen<list<int>>, fm frozen<map<text, int>>, u ut, PRIMARY KEY (k, c))`,
		`INSERT INTO t3 (k, c, dur, fl) VALUES (1, 1, 1h, [1])`)
	const af = ` ALLOW FILTERING`
	for _, c := range []struct{ q, msg string }{
		{`SELECT * FROM t3 WHERE k = 1 AND dur > 1h` + af, "Slice restrictions are not supported on duration columns"},
		{`SELECT * FROM t3 WHERE k = 1 AND ld > [1h]` + af, "Slice restrictions are not supported on collections containing durations"},
		{`SELECT * FROM t3 WHERE k = 1 AND fm['a'] = 1` + af, "Map-entry equality predicates on frozen map column fm are not supported"},
		{`SELECT * FROM t3 WHERE k = 1 AND u = {x: 1}` + af, "Non-frozen UDT column 'u' (ut) cannot be restricted by any relation"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND l > [1]` + af, "Collection column 'l' (list<int>) cannot be restricted by a '>' relation"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND l = [1]` + af, "Collection column 'l' (list<int>) cannot be restricted by a '=' relation"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND m['x'] > 1` + af, "Only EQ relations are supported on map entries"},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND l[0] = 1` + af, "Indexes on list entries (l[index] = value) are not currently supported."},
		{`SELECT * FROM t2 WHERE a = 1 AND b = 1 AND v[0] = 1` + af, "Column v cannot be used as a map"},
	} {
		wantError(t, s, c.q, c.msg)
	}
	// What stays allowed: = on a duration, = on a frozen collection.
	wantRows(t, rowsOf(t, s, 0, `SELECT c FROM t3 WHERE k = 1 AND dur = 1h`+af), "1")
	wantRows(t, rowsOf(t, s, 0, `SELECT c FROM t3 WHERE k = 1 AND fl = [1]`+af), "1")
}
