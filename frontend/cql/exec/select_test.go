package exec_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// rowsOf runs a query and returns its rows as "a|b|c" strings, paging
// through the driver with the session's page size.
func rowsOf(t *testing.T, s *gocql.Session, pageSize int, q string, args ...any) []string {
	t.Helper()
	it := cqltest.Paged(t, s.Query(q, args...).PageSize(pageSize).Iter())
	var out []string
	for {
		row, err := it.RowData()
		if err != nil {
			t.Fatal(err)
		}
		if !it.Scan(row.Values...) {
			break
		}
		parts := make([]string, len(row.Values))
		for i, v := range row.Values {
			parts[i] = fmt.Sprint(deref(v))
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := it.Close(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func deref(v any) any {
	switch v := v.(type) {
	case *string:
		return *v
	case *int:
		return *v
	case *int64:
		return *v
	case *int32:
		return *v
	case *bool:
		return *v
	case *float64:
		return *v
	case *[]int:
		return *v
	case *[]string:
		return *v
	case *map[string]int:
		return *v
	}
	return v
}

func wantRows(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("got rows\n  %q\nwant\n  %q", got, want)
	}
}

func wantError(t *testing.T, s *gocql.Session, q, msg string) {
	t.Helper()
	err := s.Query(q).Exec()
	if err == nil {
		t.Fatalf("%s: no error, want %q", q, msg)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s: error %q, want %q", q, err, msg)
	}
}

// selectEnv has table t (pk text, ck int, v text, s text static) holding
// partitions a, b and c with rows ck 0..9, v = pk+ck, and s = "s"+pk.
func selectEnv(t *testing.T) (*cqltest.Server, *gocql.Session) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, `CREATE TABLE t (pk text, ck int, v text, s text static, PRIMARY KEY (pk, ck))`)
	for _, pk := range []string{"a", "b", "c"} {
		for ck := range 10 {
			if err := s.Query(`INSERT INTO t (pk, ck, v, s) VALUES (?, ?, ?, ?)`, pk, ck, fmt.Sprint(pk, ck), "s"+pk).Exec(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return srv, s
}

func TestSelectPartitionSlices(t *testing.T) {
	srv, s := selectEnv(t)
	check := func() {
		wantRows(t, rowsOf(t, s, 0, `SELECT ck, v FROM t WHERE pk = 'a' AND ck > 6`), "7|a7", "8|a8", "9|a9")
		wantRows(t, rowsOf(t, s, 0, `SELECT ck FROM t WHERE pk = 'a' AND ck >= 2 AND ck < 5`), "2", "3", "4")
		wantRows(t, rowsOf(t, s, 0, `SELECT ck FROM t WHERE pk = 'a' AND ck > 2 AND ck <= 4 ORDER BY ck DESC`), "4", "3")
		wantRows(t, rowsOf(t, s, 0, `SELECT ck FROM t WHERE pk = ? AND ck IN (7, 1, 3, 1)`, "b"), "1", "3", "7")
		wantRows(t, rowsOf(t, s, 0, `SELECT ck FROM t WHERE pk = 'b' AND ck IN ? ORDER BY ck DESC`, []int{7, 1, 3}), "7", "3", "1")
		wantRows(t, rowsOf(t, s, 0, `SELECT ck FROM t WHERE pk = 'c' ORDER BY ck DESC LIMIT 3`), "9", "8", "7")
		wantRows(t, rowsOf(t, s, 0, `SELECT pk, ck FROM t WHERE pk IN ('c', 'a') AND ck = 5`), "a|5", "c|5")
		wantRows(t, rowsOf(t, s, 0, `SELECT pk, ck FROM t WHERE pk IN ('c', 'a') PER PARTITION LIMIT 2`), "a|0", "a|1", "c|0", "c|1")
		wantRows(t, rowsOf(t, s, 0, `SELECT s, v FROM t WHERE pk = 'a' AND ck = 4`), "sa|a4")
		wantRows(t, rowsOf(t, s, 0, `SELECT ck FROM t WHERE pk = 'zz'`))
	}
	check()
	srv.Flush(t, "ks", "t")
	check() // the same from SSTables
}

func TestSelectOrderAcrossPartitions(t *testing.T) {
	_, s := selectEnv(t)
	// Without paging, IN with ORDER BY sorts the rows of all partitions.
	q := `SELECT pk, ck FROM t WHERE pk IN ('a', 'b') AND ck IN (1, 2) ORDER BY ck DESC LIMIT 3`
	wantRows(t, rowsOf(t, s, 0, q), "a|2", "b|2", "a|1")
	if err := s.Query(q).PageSize(2).Exec(); err == nil || !strings.Contains(err.Error(), "Cannot page queries with both ORDER BY and a IN restriction") {
		t.Fatalf("paged ORDER BY with IN: %v", err)
	}
}

func TestSelectPaging(t *testing.T) {
	_, s := selectEnv(t)
	all := rowsOf(t, s, 0, `SELECT pk, ck FROM t`)
	if len(all) != 30 {
		t.Fatalf("full scan returned %d rows: %q", len(all), all)
	}
	for _, size := range []int{1, 2, 7, 1000} {
		t.Run(fmt.Sprint("page=", size), func(t *testing.T) {
			wantRows(t, rowsOf(t, s, size, `SELECT pk, ck FROM t`), all...)
			wantRows(t, rowsOf(t, s, size, `SELECT pk, ck FROM t WHERE pk = 'b' AND ck >= 3 ORDER BY ck DESC`),
				"b|9", "b|8", "b|7", "b|6", "b|5", "b|4", "b|3")
			wantRows(t, rowsOf(t, s, size, `SELECT pk, ck FROM t WHERE pk IN ('a', 'c') AND ck < 2`), "a|0", "a|1", "c|0", "c|1")
			got := rowsOf(t, s, size, `SELECT pk, ck FROM t LIMIT 12`)
			wantRows(t, got, all[:12]...)
			got = rowsOf(t, s, size, `SELECT pk, ck FROM t PER PARTITION LIMIT 2`)
			if len(got) != 6 {
				t.Fatalf("per partition limit over a scan: %q", got)
			}
			wantRows(t, rowsOf(t, s, size, `SELECT pk, ck FROM t WHERE v = 'b4' ALLOW FILTERING`), "b|4")
			wantRows(t, rowsOf(t, s, size, `SELECT DISTINCT pk, s FROM t`), distinct(all)...)
		})
	}
}

// distinct returns "pk|s<pk>" for each partition of "pk|ck" rows, in order.
func distinct(rows []string) []string {
	var out []string
	for _, r := range rows {
		pk, _, _ := strings.Cut(r, "|")
		if e := pk + "|s" + pk; len(out) == 0 || out[len(out)-1] != e {
			out = append(out, e)
		}
	}
	return out
}

func TestSelectTokenRanges(t *testing.T) {
	_, s := selectEnv(t)
	var toks []int64
	it := cqltest.Paged(t, s.Query(`SELECT token(pk) FROM t PER PARTITION LIMIT 1`).Iter())
	var tok int64
	for it.Scan(&tok) {
		toks = append(toks, tok)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if len(toks) != 3 || !slices.IsSorted(toks) {
		t.Fatalf("tokens %v", toks)
	}
	got := rowsOf(t, s, 4, `SELECT ck FROM t WHERE token(pk) > ? AND token(pk) <= ?`, toks[0], toks[1])
	if len(got) != 10 {
		t.Fatalf("one partition by token range: %d rows", len(got))
	}
	if got := rowsOf(t, s, 0, `SELECT ck FROM t WHERE token(pk) = ?`, toks[2]); len(got) != 10 {
		t.Fatalf("token = : %d rows", len(got))
	}
	// token(pk) compared with the token of given key values.
	var last string
	if err := s.Query(`SELECT pk FROM t WHERE token(pk) = ? LIMIT 1`, toks[2]).Scan(&last); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, s, 0, `SELECT ck FROM t WHERE token(pk) >= token(?)`, last); len(got) != 10 {
		t.Fatalf("token >= token(?): %d rows", len(got))
	}
	if got := rowsOf(t, s, 0, `SELECT ck FROM t WHERE token(pk) > token('`+last+`')`); len(got) != 0 {
		t.Fatalf("token > token(last key): %d rows", len(got))
	}
}

func TestSelectFunctionsAndAggregates(t *testing.T) {
	_, s := selectEnv(t)
	wantRows(t, rowsOf(t, s, 0, `SELECT count(*) FROM t`), "30")
	wantRows(t, rowsOf(t, s, 0, `SELECT count(*), min(ck), max(v) FROM t WHERE pk = 'b'`), "10|0|b9")
	wantRows(t, rowsOf(t, s, 0, `SELECT pk, count(*) FROM t WHERE pk IN ('a', 'b') AND ck < 4 GROUP BY pk`), "a|4", "b|4")
	wantRows(t, rowsOf(t, s, 0, `SELECT sum(ck), avg(ck) FROM t WHERE pk = 'c'`), "45|4")
	wantRows(t, rowsOf(t, s, 0, `SELECT count(*) FROM t WHERE pk = 'none'`), "0")
	wantRows(t, rowsOf(t, s, 0, `SELECT ck AS n, blobAsText(textAsBlob(v)) FROM t WHERE pk = 'a' AND ck = 1`), "1|a1")
	wantRows(t, rowsOf(t, s, 0, `SELECT JSON ck, v FROM t WHERE pk = 'a' AND ck = 1`), `{"ck": 1, "v": "a1"}`)
	wantRows(t, rowsOf(t, s, 0, `SELECT toJson(ck), cast(ck AS text) FROM t WHERE pk = 'a' AND ck = 2`), "2|2")
}

func TestSelectWriteTimeAndTTL(t *testing.T) {
	_, s := selectEnv(t)
	cqltest.Exec(t, s, `INSERT INTO t (pk, ck, v) VALUES ('w', 1, 'x') USING TIMESTAMP 1234 AND TTL 1000`)
	var wt int64
	var ttl int
	if err := s.Query(`SELECT writetime(v), ttl(v) FROM t WHERE pk = 'w' AND ck = 1`).Scan(&wt, &ttl); err != nil {
		t.Fatal(err)
	}
	if wt != 1234 || ttl <= 0 || ttl > 1000 {
		t.Fatalf("writetime %d, ttl %d", wt, ttl)
	}
	wantError(t, s, `SELECT writetime(ck) FROM t`, "Cannot use selection function writeTime on PRIMARY KEY part ck")
}

func TestSelectStaticRows(t *testing.T) {
	_, s := selectEnv(t)
	cqltest.Exec(t, s, `INSERT INTO t (pk, s) VALUES ('st', 'only')`)
	wantRows(t, rowsOf(t, s, 0, `SELECT pk, ck, s FROM t WHERE pk = 'st'`), "st|0|only")
	// A clustering restriction selects rows, and there are none.
	wantRows(t, rowsOf(t, s, 0, `SELECT pk, s FROM t WHERE pk = 'st' AND ck = 1`))
}

func TestSelectCompoundKeysAndCollections(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		`CREATE TABLE m (a int, b int, c1 int, c2 text, l list<int>, st set<text>, mp map<text, int>, PRIMARY KEY ((a, b), c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)`,
		`INSERT INTO m (a, b, c1, c2, l, st, mp) VALUES (1, 2, 1, 'x', [3, 1], {'q', 'p'}, {'k': 1})`,
		`INSERT INTO m (a, b, c1, c2, l) VALUES (1, 2, 2, 'y', [5])`,
		`INSERT INTO m (a, b, c1, c2) VALUES (1, 2, 2, 'z')`,
		`INSERT INTO m (a, b, c1, c2) VALUES (1, 3, 9, 'w')`,
	)
	wantRows(t, rowsOf(t, s, 0, `SELECT c1, c2 FROM m WHERE a = 1 AND b = 2`), "2|y", "2|z", "1|x")
	wantRows(t, rowsOf(t, s, 0, `SELECT c1, c2 FROM m WHERE a = 1 AND b = 2 ORDER BY c1 ASC, c2 DESC`), "1|x", "2|z", "2|y")
	wantRows(t, rowsOf(t, s, 0, `SELECT c1, c2 FROM m WHERE a = 1 AND b = 2 AND c1 = 2 AND c2 > 'y'`), "2|z")
	wantRows(t, rowsOf(t, s, 0, `SELECT c1, c2 FROM m WHERE a = 1 AND b = 2 AND (c1, c2) IN ((1, 'x'), (2, 'z'))`), "2|z", "1|x")
	wantRows(t, rowsOf(t, s, 0, `SELECT c2 FROM m WHERE a = 1 AND b = 2 AND c1 < 2`), "x")
	wantRows(t, rowsOf(t, s, 0, `SELECT l, st, mp FROM m WHERE a = 1 AND b = 2 AND c1 = 1 AND c2 = 'x'`), "[3 1]|[p q]|map[k:1]")
	wantRows(t, rowsOf(t, s, 0, `SELECT c2 FROM m WHERE a = 1 AND b = 2 AND l CONTAINS 5 ALLOW FILTERING`), "y")
	wantRows(t, rowsOf(t, s, 0, `SELECT c2 FROM m WHERE mp CONTAINS KEY 'k' ALLOW FILTERING`), "x")
	// Partitions come in token order: (1, 3) before (1, 2).
	wantRows(t, rowsOf(t, s, 0, `SELECT c2 FROM m WHERE a = 1 ALLOW FILTERING`), "w", "y", "z", "x")
	wantRows(t, rowsOf(t, s, 0, `SELECT mp['k'], st['p'] FROM m WHERE a = 1 AND b = 2 AND c1 = 1`), "1|p")
	// SELECT * lists the key columns in key order, then the others by name.
	it := s.Query(`SELECT * FROM m WHERE a = 1 AND b = 2`).Iter()
	var names []string
	for _, c := range it.Columns() {
		names = append(names, c.Name)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c1", "c2", "l", "mp", "st"}; !slices.Equal(names, want) {
		t.Fatalf("SELECT * columns %q, want %q", names, want)
	}
}

// TestPreparedSelectAfterAlter: a prepared SELECT * whose columns an ALTER
// changed is prepared again, so the driver decodes the new columns.
func TestPreparedSelectAfterAlter(t *testing.T) {
	_, s := selectEnv(t)
	q := `SELECT * FROM t WHERE pk = 'a' AND ck = 1`
	cols := func() []string {
		it := s.Query(q).Iter()
		var names []string
		for _, c := range it.Columns() {
			names = append(names, c.Name)
		}
		row := map[string]any{}
		if !it.MapScan(row) {
			t.Fatalf("no row: %v", it.Close())
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return names
	}
	wantRows(t, cols(), "pk", "ck", "s", "v")
	cqltest.Exec(t, s, `ALTER TABLE t ADD extra int`)
	wantRows(t, cols(), "pk", "ck", "s", "extra", "v")
}
