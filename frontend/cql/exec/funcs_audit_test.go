package exec_test

import (
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// funcsAuditEnv has table n with a column of most native types; row 1
// holds values at the edges of their types, row 2 NaN and Infinity.
func funcsAuditEnv(t *testing.T) *gocql.Session {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, `CREATE TABLE n (k int PRIMARY KEY, ti tinyint, si smallint, i int, bi bigint, f float, d double,
		dc decimal, vi varint, tx text, ts timestamp, dt date, tm time, tu timeuuid, b boolean, bl blob)`)
	cqltest.Exec(t, s, `INSERT INTO n (k, ti, si, i, bi, f, d, dc, vi, tx, ts, dt, tm, tu, b, bl) VALUES (1, 100, 30000,
		2147483647, 9223372036854775807, 3.9, -3.9, 1.50, 123456789012345678901234567890, 'x',
		'2024-01-02 03:04:05.678+0000', '2024-01-02', '03:04:05.123456789', 50554d6e-29bb-11e5-b345-feff819cdc9f, true, 0x0102)`)
	cqltest.Exec(t, s, `INSERT INTO n (k, ti, si, i, bi, f, d, dc, vi) VALUES (2, 100, 30000, 2, 1, NaN, Infinity, 2.25, -5)`)
	return s
}

// TestCastRefusedAudit: a CAST with no conversion is refused in Cassandra
// 4's words (Selectable.WithCast): "<column> cannot be cast to <type as
// written>", the column being the first one the selection collected, even
// one of an earlier selector.
func TestCastRefusedAudit(t *testing.T) {
	s := funcsAuditEnv(t)
	for _, tc := range []struct{ q, msg string }{
		{`SELECT cast(tx AS int) FROM n`, "tx cannot be cast to int"},
		{`SELECT CAST(bl AS varchar) FROM n`, "bl cannot be cast to varchar"},
		{`SELECT cast(tx AS ascii) FROM n`, "tx cannot be cast to ascii"},
		{`SELECT cast(ts AS bigint) FROM n`, "ts cannot be cast to bigint"},
		{`SELECT cast(writetime(i) AS date) FROM n`, "i cannot be cast to date"},
		{`SELECT toJson(cast(textAsBlob(tx) AS int)) FROM n`, "tx cannot be cast to int"},
		// defs.get(0): the selection's first column, not the argument.
		{`SELECT k, cast(tx AS int) FROM n`, "k cannot be cast to int"},
		{`SELECT toJson(b), cast(tx AS int) FROM n`, "b cannot be cast to int"},
		// Without any column Cassandra fails with an index error; the
		// argument's type is named instead.
		{`SELECT cast(now() AS int) FROM n`, "timeuuid cannot be cast to int"},
	} {
		wantExactErr(t, s, tc.q, codeInvalid, tc.msg)
	}
}

// TestCastToOwnTypeAudit: a cast to the argument's own type is dropped,
// as Cassandra's WithCast returns the argument's selector: the column is
// named after the argument.
func TestCastToOwnTypeAudit(t *testing.T) {
	s := funcsAuditEnv(t)
	it := s.Query(`SELECT cast(i AS int), CAST(tx AS varchar), cast(i AS int) AS x, cast(i AS bigint), cast(i AS varchar) FROM n WHERE k = 1`).Iter()
	var names []string
	for _, c := range it.Columns() {
		names = append(names, c.Name)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// A cast is named with its result type's name: varchar is text.
	wantRows(t, names, "i", "tx", "x", "cast(i as bigint)", "cast(i as text)")
}

// TestFuncValuesAudit pins values that already match Cassandra 4.0's
// CastFcts, TimeFcts and AggregateFcts, so a later audit need not redo
// them.
func TestFuncValuesAudit(t *testing.T) {
	s := funcsAuditEnv(t)
	for q, want := range map[string]string{
		// Number casts: Java's Number methods; decimals from the double.
		`SELECT cast(f AS int), cast(d AS int), cast(dc AS int), cast(vi AS int), cast(cast(f AS decimal) AS text),
			cast(cast(bi AS decimal) AS text), cast(cast(ti AS decimal) AS text), cast(cast(bi AS float) AS text)
			FROM n WHERE k = 1`: "3|-3|1|1312754386|3.9000000953674316|9.223372036854776E+18|100.0|9.223372E18",
		`SELECT cast(f AS int), cast(d AS bigint), cast(f AS text), cast(d AS text) FROM n WHERE k = 2`: "0|9223372036854775807|NaN|Infinity",
		// Text forms: toCQLLiteral.
		`SELECT cast(d AS text), cast(dc AS text), cast(ts AS text), cast(dt AS text), cast(tm AS text), cast(b AS text)
			FROM n WHERE k = 1`: "-3.9|1.50|2024-01-02T03:04:05.678Z|2024-01-02|03:04:05.123456789|true",
		// Time functions.
		`SELECT tounixtimestamp(cast(ts AS date)), tounixtimestamp(cast(dt AS timestamp)), unixtimestampof(tu),
			tounixtimestamp(todate(tu)) FROM n WHERE k = 1`: "1704153600000|1704153600000|1436832018805|1436832000000",
		`SELECT cast(mintimeuuid(ts) AS text), cast(maxtimeuuid(ts) AS text) FROM n WHERE k = 1`: "96f2f4e0-a91b-11ee-8080-808080808080|96f31bef-a91b-11ee-7f7f-7f7f7f7f7f7f",
		// Aggregates: fixed-size sums wrap, averages sum exactly then
		// truncate, decimal averages round half even incrementally, float
		// sums keep NaN and Infinity.
		`SELECT cast(sum(ti) AS text), cast(sum(si) AS text), cast(sum(i) AS text), cast(sum(bi) AS text),
			cast(avg(i) AS text), cast(avg(bi) AS text) FROM n`: "-56|-5536|-2147483647|-9223372036854775808|1073741824|4611686018427387904",
		`SELECT cast(sum(f) AS text), cast(avg(d) AS text), cast(sum(dc) AS text), cast(avg(dc) AS text),
			cast(avg(vi) AS text), cast(max(f) AS text), cast(min(f) AS text) FROM n`: "NaN|Infinity|3.75|1.88|61728394506172839450617283942|NaN|3.9",
		`SELECT cast(sum(dc) AS text), cast(avg(dc) AS text), cast(avg(f) AS text), count(dc), cast(min(i) AS text)
			FROM n WHERE k = 3`: "0|0|0.0|0|",
	} {
		got := rowsOf(t, s, 0, q)
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s:\n got %q\nwant %q", q, got, want)
		}
	}
}

// TestCastFunctionNamesAudit: CastFcts registers its functions as castAsT
// (castAsInt), which only a quoted name calls, and names their columns as
// CAST does.
func TestCastFunctionNamesAudit(t *testing.T) {
	s := funcsAuditEnv(t)
	it := s.Query(`SELECT "castAsInt"(f), "castAsText"(dc), system."castAsDate"(ts) FROM n WHERE k = 1`).Iter()
	var names []string
	for _, c := range it.Columns() {
		names = append(names, c.Name)
	}
	var i int
	var tx string
	var dt time.Time
	if !it.Scan(&i, &tx, &dt) {
		t.Fatalf("no row: %v", it.Close())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	wantRows(t, names, "cast(f as int)", "cast(dc as text)", "cast(ts as date)")
	if i != 3 || tx != "1.50" || dt.Format(time.DateOnly) != "2024-01-02" {
		t.Errorf("got %d, %q, %v; want 3, 1.50, 2024-01-02", i, tx, dt)
	}
	wantExactErr(t, s, `SELECT castAsInt(f) FROM n`, codeInvalid, "Unknown function 'castasint'")
}

// TestEmptyTimeuuidAudit: the time functions of an empty timeuuid are
// null, as Cassandra's TimeFcts answer, not an error.
func TestEmptyTimeuuidAudit(t *testing.T) {
	s := funcsAuditEnv(t)
	cqltest.Exec(t, s, `INSERT INTO n (k, tu) VALUES (3, blobAsTimeuuid(0x))`)
	// Nulls read as empty strings through CAST; an empty value would read
	// "null" (toCQLLiteral).
	wantRows(t, rowsOf(t, s, 0, `SELECT cast(toDate(tu) AS text), cast(toTimestamp(tu) AS text),
		cast(toUnixTimestamp(tu) AS text), cast(dateOf(tu) AS text), cast(unixTimestampOf(tu) AS text)
		FROM n WHERE k = 3`), "||||")
}
