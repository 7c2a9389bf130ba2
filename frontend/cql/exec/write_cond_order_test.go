package exec_test

import (
	"fmt"
	"strings"
	"testing"
)

// condOrderTypes are the ordered CQL types with three literals each in
// the type's order, lo < mid < hi, and eq, a literal equal to mid by the
// type's comparison (a different spelling where the type has one). lo is
// empty where mid is the type's least value. Where the type's order is not
// the order of its bytes (signed numbers, varint, decimal, timestamps),
// lo and mid are chosen so that a byte comparison would get them wrong.
var condOrderTypes = []struct {
	name, typ, lo, mid, eq, hi string
}{
	{"ti", "tinyint", "-2", "3", "3", "100"},
	{"si", "smallint", "-300", "3", "3", "300"},
	{"i", "int", "-2", "3", "3", "70000"},
	{"bi", "bigint", "-5000000000", "3", "3", "5000000000"},
	{"vi", "varint", "-100000000000000000000", "3", "3", "100000000000000000000"},
	{"de", "decimal", "-1.5", "3.25", "3.250", "12.5"},
	{"fl", "float", "-1.5", "3.5", "3.5", "1e10"},
	{"db", "double", "-1.5", "3.5", "3.50", "1e300"},
	{"tx", "text", "'a'", "'m'", "'m'", "'é'"},
	{"vc", "varchar", "'a'", "'m'", "'m'", "'z'"},
	{"as", "ascii", "'A'", "'M'", "'M'", "'a'"},
	{"bl", "blob", "0x00", "0x7f", "0x7f", "0xff"},
	{"bo", "boolean", "", "false", "false", "true"},
	{"ts", "timestamp", "'1969-12-31 00:00:00+0000'", "'2020-01-01 00:00:00+0000'", "1577836800000", "'2030-01-01 00:00:00+0000'"},
	{"da", "date", "'1969-01-01'", "'2020-01-01'", "'2020-01-01'", "'2030-01-01'"},
	{"tm", "time", "'01:00:00'", "'12:00:00'", "'12:00:00.000000000'", "'23:00:00'"},
	{"u", "uuid", "10000000-0000-4000-8000-000000000000", "20000000-0000-4000-8000-000000000000", "20000000-0000-4000-8000-000000000000", "30000000-0000-4000-8000-000000000000"},
	// Version 1, ordered by time, which the bytes' order is not: lo's
	// time_low is the greatest, hi's time_hi.
	{"tu", "timeuuid", "ffffffff-0000-1000-8000-000000000000", "00000000-0001-1000-8000-000000000000", "00000000-0001-1000-8000-000000000000", "00000000-0000-1001-8000-000000000000"},
	{"ip", "inet", "'10.0.0.1'", "'127.0.0.1'", "'127.0.0.1'", "'192.168.0.1'"},
	{"tp", "tuple<int, text>", "(-1, 'z')", "(3, 'b')", "(3, 'b')", "(3, 'c')"},
	{"fli", "frozen<list<int>>", "[-1, 5]", "[3]", "[3]", "[3, 0]"},
	{"fs", "frozen<set<text>>", "{'a', 'z'}", "{'b'}", "{'b'}", "{'b', 'c'}"},
}

// testWriteConditionOrder checks the ordering conditions of conditional
// writes at their boundaries for every ordered type, as Cassandra's
// ColumnCondition answers them: a stored value equal to the bound satisfies
// <= and >= but not < and >, and an ordering comparison with a null stored
// value, or with a row that does not exist, is false (only != holds).
func testWriteConditionOrder(t *testing.T, e *writeEnv) {
	s := e.s
	var cols, names, mids []string
	for _, ty := range condOrderTypes {
		cols = append(cols, ty.name+" "+ty.typ)
		names = append(names, ty.name)
		mids = append(mids, ty.mid)
	}
	mustExec(t, s,
		"CREATE TABLE ord (k int PRIMARY KEY, marker int, "+strings.Join(cols, ", ")+")",
		"INSERT INTO ord (k, "+strings.Join(names, ", ")+") VALUES (1, "+strings.Join(mids, ", ")+")",
		"INSERT INTO ord (k) VALUES (2)", // every column null
	)
	type check struct {
		k    int
		cond string
		want bool
	}
	for _, ty := range condOrderTypes {
		t.Run(ty.typ, func(t *testing.T) {
			c := ty.name
			checks := []check{
				{1, c + " < " + ty.eq, false},
				{1, c + " <= " + ty.eq, true},
				{1, c + " > " + ty.eq, false},
				{1, c + " >= " + ty.eq, true},
				{1, c + " = " + ty.eq, true},
				{1, c + " != " + ty.eq, false},
				{1, c + " < " + ty.hi, true},
				{1, c + " <= " + ty.hi, true},
				{1, c + " > " + ty.hi, false},
				{1, c + " >= " + ty.hi, false},
				// Stored null: every ordering is false, != holds.
				{2, c + " < " + ty.mid, false},
				{2, c + " <= " + ty.mid, false},
				{2, c + " > " + ty.mid, false},
				{2, c + " >= " + ty.mid, false},
				{2, c + " != " + ty.mid, true},
				{2, c + " = null", true},
				// No row: as null.
				{3, c + " >= " + ty.mid, false},
				{3, c + " <= " + ty.mid, false},
			}
			if ty.lo != "" {
				checks = append(checks,
					check{1, c + " > " + ty.lo, true},
					check{1, c + " >= " + ty.lo, true},
					check{1, c + " < " + ty.lo, false},
					check{1, c + " <= " + ty.lo, false},
				)
			}
			for _, ch := range checks {
				// SET marker: the compared values never change.
				stmt := fmt.Sprintf("UPDATE ord SET marker = 1 WHERE k = %d IF %s", ch.k, ch.cond)
				applied, err := s.Query(stmt).MapScanCAS(map[string]any{})
				if err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
				if applied != ch.want {
					t.Errorf("%s: applied %v, want %v", stmt, applied, ch.want)
				}
			}
			for _, op := range []string{"<", "<=", ">", ">="} {
				wantInvalidCode(t, s, fmt.Sprintf("Invalid comparison with null for operator %q", op),
					fmt.Sprintf("UPDATE ord SET marker = 1 WHERE k = 1 IF %s %s null", c, op))
			}
		})
	}
}
