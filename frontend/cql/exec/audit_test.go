package exec_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// TestSelectionLiteralArguments: literals and markers passed to functions
// take the parameter's type, as in Cassandra, so the documented
// mintimeuuid('2013-01-01 00:05+0000') works in a selection, and
// fromJson works wherever a value is written.
func TestSelectionLiteralArguments(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		`CREATE TABLE ev (k int, tu timeuuid, ts timestamp, d date, tm time, n int, l list<int>, PRIMARY KEY (k, tu))`,
		`INSERT INTO ev (k, tu, ts) VALUES (1, maxtimeuuid('2024-01-02 03:04:05+0000'), currenttimestamp())`,
		`INSERT INTO ev (k, tu, ts) VALUES (1, mintimeuuid('2024-01-02 03:04:07+0000'), '2024-01-02')`,
		`INSERT INTO ev (k, tu, d, tm) VALUES (2, now(), currentdate(), currenttime())`,
	)
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	var lo, hi gocql.UUID
	if err := s.Query(`SELECT mintimeuuid('2024-01-02 03:04:05+0000'), maxtimeuuid('2024-01-02 03:04:05+0000') FROM ev WHERE k = 1 LIMIT 1`).Scan(&lo, &hi); err != nil {
		t.Fatal(err)
	}
	if !lo.Time().Equal(at) || !hi.Time().Truncate(time.Millisecond).Equal(at) || lo == hi {
		t.Fatalf("mintimeuuid %v (%v), maxtimeuuid %v (%v)", lo, lo.Time(), hi, hi.Time())
	}
	// The least and greatest timeuuids of the millisecond bound it.
	wantRows(t, rowsOf(t, s, 0, `SELECT unixtimestampof(tu), dateof(tu) FROM ev WHERE k = 1 AND tu >= mintimeuuid('2024-01-02 03:04:05+0000') AND tu <= maxtimeuuid('2024-01-02 03:04:05+0000')`),
		"1704164645000|2024-01-02 03:04:05 +0000 UTC")
	wantRows(t, rowsOf(t, s, 0, `SELECT tounixtimestamp(tu) FROM ev WHERE k = 1 AND tu > maxtimeuuid('2024-01-02 03:04:05+0000')`),
		"1704164647000")
	// A marker passed to a function is typed by its parameter.
	var got gocql.UUID
	if err := s.Query(`SELECT mintimeuuid(?) FROM ev WHERE k = 1 LIMIT 1`, at).Scan(&got); err != nil || !got.Time().Equal(at) {
		t.Fatalf("mintimeuuid(?): %v %v", got, err)
	}
	// Literals keep their own type where it fits: count(1), intasblob(5).
	wantRows(t, rowsOf(t, s, 0, `SELECT count(1), intasblob(5) FROM ev WHERE k = 1`), "2|&[0 0 0 5]") // rowsOf prints a blob as a pointer
	// currentTimestamp, currentDate and currentTime wrote today.
	var ts time.Time
	if err := s.Query(`SELECT ts FROM ev WHERE k = 1 AND tu = maxtimeuuid('2024-01-02 03:04:05+0000')`).Scan(&ts); err != nil || time.Since(ts) > time.Hour || time.Since(ts) < -time.Hour {
		t.Fatalf("currenttimestamp() wrote %v (%v)", ts, err)
	}
	var d time.Time
	var tm time.Duration
	if err := s.Query(`SELECT d, tm FROM ev WHERE k = 2`).Scan(&d, &tm); err != nil || time.Since(d) > 48*time.Hour || tm <= 0 || tm >= 24*time.Hour {
		t.Fatalf("currentdate(), currenttime() wrote %v %v (%v)", d, tm, err)
	}

	// fromJson where a value is written, typed by its receiver.
	cqltest.Exec(t, s,
		`INSERT INTO ev (k, tu, n, l) VALUES (3, fromJson('"d2177dd0-eaa2-11de-a572-001b779c76e3"'), fromJson('7'), fromJson('[1, 2]'))`,
		`UPDATE ev SET ts = fromJson('"2024-05-06 07:08:09.010Z"'), n = fromJson('"8"') WHERE k = 3 AND tu = d2177dd0-eaa2-11de-a572-001b779c76e3`,
	)
	wantRows(t, rowsOf(t, s, 0, `SELECT n, l, ts FROM ev WHERE k = 3`), "8|[1 2]|2024-05-06 07:08:09.01 +0000 UTC")
	if err := s.Query(`INSERT INTO ev (k, tu, n) VALUES (4, now(), fromJson(?))`, "9").Exec(); err != nil {
		t.Fatal(err)
	}
	wantRows(t, rowsOf(t, s, 0, `SELECT n FROM ev WHERE k = 4`), "9")
	wantError(t, s, `INSERT INTO ev (k, tu, n) VALUES (5, now(), fromJson('"x"'))`, "Unable to make int from 'x'")
	wantError(t, s, `SELECT mintimeuuid('nope') FROM ev`, "Unable to coerce 'nope' to a formatted date (long)")
}

// TestWritetimeOfCollections: WRITETIME and TTL refuse non-frozen
// collections and user types with Cassandra's message, and take frozen ones.
func TestWritetimeOfCollections(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		`CREATE TYPE u (a int)`,
		`CREATE TABLE t (k int PRIMARY KEY, l list<int>, st set<int>, m map<int, int>, uu u, fl frozen<list<int>>, fu frozen<u>)`,
		`INSERT INTO t (k, l, st, m, uu, fl, fu) VALUES (1, [1], {1}, {1: 1}, {a: 1}, [1], {a: 1}) USING TIMESTAMP 42 AND TTL 1000`,
	)
	for q, msg := range map[string]string{
		`SELECT writetime(l) FROM t`: "Cannot use selection function writeTime on non-frozen collection l",
		`SELECT ttl(st) FROM t`:      "Cannot use selection function ttl on non-frozen collection st",
		`SELECT writetime(m) FROM t`: "Cannot use selection function writeTime on non-frozen collection m",
		`SELECT ttl(uu) FROM t`:      "Cannot use selection function ttl on non-frozen UDT uu",
	} {
		wantError(t, s, q, msg)
	}
	var wt1, wt2 int64
	var ttl int
	if err := s.Query(`SELECT writetime(fl), writetime(fu), ttl(fl) FROM t WHERE k = 1`).Scan(&wt1, &wt2, &ttl); err != nil || wt1 != 42 || wt2 != 42 || ttl <= 0 || ttl > 1000 {
		t.Fatalf("frozen: writetime %d %d, ttl %d, %v", wt1, wt2, ttl, err)
	}
}

// TestGroupByPaging: GROUP BY answers the same groups whatever the page
// size, over several partitions and after a flush.
func TestGroupByPaging(t *testing.T) {
	srv, s := selectEnv(t)
	cqltest.Exec(t, s, `CREATE TABLE g (a int, b int, c int, v int, PRIMARY KEY (a, b, c))`)
	for a := range 4 {
		for b := range 3 {
			for c := range 5 {
				if err := s.Query(`INSERT INTO g (a, b, c, v) VALUES (?, ?, ?, ?)`, a, b, c, a*100+b*10+c).Exec(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	srv.Flush(t, "ks", "g")
	for _, q := range []string{
		`SELECT a, b, count(*), max(v) FROM g GROUP BY a, b`,
		`SELECT a, sum(v) FROM g GROUP BY a`,
		`SELECT a, b, c FROM g WHERE a IN (1, 3) GROUP BY a, b`,
		`SELECT a, b, min(c) FROM g WHERE a = 2 AND b > 0 GROUP BY a, b`,
	} {
		all := rowsOf(t, s, 0, q)
		if len(all) == 0 {
			t.Fatalf("%s: no rows", q)
		}
		for _, size := range []int{1, 2, 5} {
			if got := rowsOf(t, s, size, q); strings.Join(got, ",") != strings.Join(all, ",") {
				t.Fatalf("%s with pages of %d:\n  %q\nwant\n  %q", q, size, got, all)
			}
		}
	}
	wantRows(t, rowsOf(t, s, 2, `SELECT a, count(*) FROM g GROUP BY a`), "1|15", "0|15", "2|15", "3|15")
}

// TestSpecialFloatLiterals: NaN and Infinity, signed, as literals.
func TestSpecialFloatLiterals(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, `CREATE TABLE f (k int PRIMARY KEY, d double, f float)`,
		`INSERT INTO f (k, d, f) VALUES (1, Infinity, -Infinity)`,
		`INSERT INTO f (k, d, f) VALUES (2, -Infinity, NaN)`,
		`INSERT INTO f (k, d, f) VALUES (3, NaN, Infinity)`)
	for k, want := range map[int][2]float64{1: {math.Inf(1), math.Inf(-1)}, 2: {math.Inf(-1), math.NaN()}, 3: {math.NaN(), math.Inf(1)}} {
		var d float64
		var f float32
		if err := s.Query(`SELECT d, f FROM f WHERE k = ?`, k).Scan(&d, &f); err != nil {
			t.Fatal(err)
		}
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if !same(d, want[0]) || !same(float64(f), want[1]) {
			t.Errorf("k=%d: %v %v, want %v", k, d, f, want)
		}
	}
}

// TestSerialConsistencyAndRefusedOperators: a conditional write with
// either serial consistency, and != and LIKE refused as without an index.
func TestSerialConsistencyAndRefusedOperators(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, `CREATE TABLE c (k int PRIMARY KEY, v text)`)
	for i, sc := range []gocql.SerialConsistency{gocql.Serial, gocql.LocalSerial} {
		m := map[string]any{}
		applied, err := s.Query(`INSERT INTO c (k, v) VALUES (?, 'x') IF NOT EXISTS`, i).SerialConsistency(sc).MapScanCAS(m)
		if err != nil || !applied {
			t.Fatalf("serial consistency %v: applied %v, %v", sc, applied, err)
		}
		applied, err = s.Query(`UPDATE c SET v = 'y' WHERE k = ? IF v = 'z'`, i).SerialConsistency(sc).MapScanCAS(m)
		if err != nil || applied || m["v"] != "x" {
			t.Fatalf("serial consistency %v: applied %v, current %v, %v", sc, applied, m, err)
		}
	}
	wantError(t, s, `SELECT * FROM c WHERE v != 'x' ALLOW FILTERING`, `Unsupported "!=" relation: v != 'x'`)
	wantError(t, s, `SELECT * FROM c WHERE v LIKE 'x%' ALLOW FILTERING`, "LIKE restriction is only supported on properly indexed columns. v LIKE 'x%' is not valid.")
}
