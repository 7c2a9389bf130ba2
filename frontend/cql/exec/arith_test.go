package exec_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

const codeFunctionFailure = 0x1400

// arithEnv has table n: row 1 holds a value of each number type, a
// timestamp and a date; row 2 a tinyint at its maximum and nulls.
func arithEnv(t *testing.T) *gocql.Session {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		`CREATE TABLE n (k int PRIMARY KEY, a tinyint, b smallint, c int, d bigint, e float, f double, g varint, h decimal, ts timestamp, dt date, bo boolean, tx text)`,
		`INSERT INTO n (k, a, b, c, d, e, f, g, h, ts, dt, bo, tx) VALUES (1, 1, 2, 3, 4, 5.5, 6.5, 7, 8.5, '2024-01-31 10:00:00+0000', '2024-01-31', true, 'x')`,
		`INSERT INTO n (k, a, h) VALUES (2, 127, 0)`,
		`CREATE TABLE cn (k int PRIMARY KEY, n counter)`,
		`UPDATE cn SET n = n + 5 WHERE k = 1`,
	)
	return s
}

// arithOne selects one expression of a row: its column's name and type
// and its value as text.
func arithOne(t *testing.T, s *gocql.Session, expr, from string, k int) (name, typ, val string) {
	t.Helper()
	iter := s.Query(fmt.Sprintf("SELECT %s FROM %s WHERE k = %d", expr, from, k)).Iter()
	rows, err := iter.SliceMap()
	if err != nil {
		t.Fatalf("SELECT %s: %v", expr, err)
	}
	if len(rows) != 1 {
		t.Fatalf("SELECT %s: %d rows", expr, len(rows))
	}
	col := iter.Columns()[0]
	v := rows[0][col.Name]
	switch x := v.(type) {
	case time.Time:
		val = x.UTC().Format("2006-01-02 15:04:05")
	default:
		val = fmt.Sprint(x)
	}
	return col.Name, col.TypeInfo.Type().String(), val
}

// TestArithmeticValues: result types and values of Cassandra 4.0's
// OperationFctsTest for each pair of number types that matters.
func TestArithmeticValues(t *testing.T) {
	s := arithEnv(t)
	for _, tc := range []struct {
		expr, typ, val string
		k              int
	}{
		{"c + c", "int", "6", 1},
		{"c + d", "bigint", "7", 1},
		{"c + f", "double", "9.5", 1},
		{"a + e", "float", "6.5", 1},
		{"d + e", "double", "9.5", 1}, // bigint and float: the larger size
		{"a + b", "smallint", "3", 1},
		{"g + c", "varint", "10", 1},
		{"h + c", "decimal", "11.5", 1},
		{"e + g", "decimal", "12.5", 1}, // a float and a varint make a decimal
		{"a * h", "decimal", "8.50", 1}, // 1 is BigDecimal.valueOf(1.0)
		{"g * h", "decimal", "59.5", 1},
		{"c / h", "decimal", "0.35294117647058823529411764705882", 1},
		{"h / c", "decimal", "2.83333333333333333333333333333333", 1},
		{"g / e", "decimal", "1.27272727272727272727272727272727", 1},
		{"h / h", "decimal", "1", 1},
		{"h % c", "decimal", "2.5", 1},
		{"a / c", "int", "0", 1},
		{"d / c", "bigint", "1", 1},
		{"d % c", "bigint", "1", 1},
		{"e % c", "float", "2.5", 1},
		{"e / d", "double", "1.375", 1},
		{"g / d", "varint", "1", 1},
		{"f / 0", "double", "+Inf", 1},
		{"-c", "int", "-3", 1},
		{"-h", "decimal", "-8.5", 1},
		{"-g", "varint", "-7", 1},
		{"-e", "float", "-5.5", 1},
		// Fixed sizes wrap as Java's arithmetic.
		{"a + a", "tinyint", "-2", 2},
		{"-a", "tinyint", "-127", 2},
		{"a * a", "tinyint", "1", 2},
		// Literals and markers take the other operand's type.
		{"c - 1", "int", "2", 1},
		{"1 - c", "int", "-2", 1},
		{"a + 1", "tinyint", "-128", 2},
		{"(bigint)1 + c", "bigint", "4", 1},
		// Null operands give null.
		{"h + c", "decimal", "<nil>", 2},
		// Precedence.
		{"a + b * 2", "smallint", "5", 1},
		{"-c * 2", "int", "-6", 1},
		{"(c + d) * 2", "bigint", "14", 1},
		{"c - d - a", "bigint", "-2", 1},
		{"c - (d - a)", "bigint", "0", 1},
		{"d / c * c", "bigint", "3", 1},
		// Temporals.
		{"ts - 1d", "timestamp", "2024-01-30 10:00:00", 1},
		{"ts + 1mo", "timestamp", "2024-02-29 10:00:00", 1},
		{"ts + 1h30m", "timestamp", "2024-01-31 11:30:00", 1},
		{"ts - 1y1mo", "timestamp", "2022-12-31 10:00:00", 1},
		{"dt + 2d", "date", "2024-02-02 00:00:00", 1},
		{"dt + 1mo", "date", "2024-02-29 00:00:00", 1},
		{"dt - 31d", "date", "2023-12-31 00:00:00", 1},
	} {
		_, typ, val := arithOne(t, s, tc.expr, "n", tc.k)
		if typ != tc.typ || val != tc.val {
			t.Errorf("SELECT %s (row %d) = %s %s, want %s %s", tc.expr, tc.k, typ, val, tc.typ, tc.val)
		}
	}
	// A counter counts as a bigint; its negation keeps its type.
	if _, typ, val := arithOne(t, s, "n * 2", "cn", 1); typ != "bigint" || val != "10" {
		t.Errorf("SELECT n * 2 = %s %s, want bigint 10", typ, val)
	}
	if _, typ, val := arithOne(t, s, "-n", "cn", 1); typ != "counter" || val != "-5" {
		t.Errorf("SELECT -n = %s %s, want counter -5", typ, val)
	}
	// Null operands give null, also to a negation.
	for _, expr := range []string{"c + 1", "-c", "c * d"} {
		var v *int64
		if err := s.Query(`SELECT ` + expr + ` FROM n WHERE k = 2`).Scan(&v); err != nil || v != nil {
			t.Errorf("SELECT %s of nulls = %v, %v; want null", expr, v, err)
		}
	}
	// Bound markers take the other operand's type too.
	var sum int64
	if err := s.Query(`SELECT d + ? FROM n WHERE k = 1`, int64(10)).Scan(&sum); err != nil || sum != 14 {
		t.Errorf("SELECT d + ? = %d, %v; want 14", sum, err)
	}
}

// TestArithmeticNames: result columns are named as Cassandra prints the
// selectable, without the parentheses written; an alias wins.
func TestArithmeticNames(t *testing.T) {
	s := arithEnv(t)
	for expr, want := range map[string]string{
		"a + b":                       "a + b",
		"-a":                          "-a",
		"a + b * 2":                   "a + b * 2",
		"(c + d) * 2":                 "c + d * 2",
		"-c * 2":                      "-c * 2",
		"ts - 1d":                     "ts - 1d",
		"c + d AS total":              "total",
		"blobAsInt(intAsBlob(c)) + 1": "system.blobasint(system.intasblob(c)) + 1",
	} {
		if name, _, _ := arithOne(t, s, expr, "n", 1); name != want {
			t.Errorf("SELECT %s names its column %q, want %q", expr, name, want)
		}
	}
}

// TestArithmeticErrors: operations on values that fail are a
// FUNCTION_FAILURE at execution; operand types without an operation are
// refused at preparation.
func TestArithmeticErrors(t *testing.T) {
	s := arithEnv(t)
	for _, tc := range []struct {
		q, msg string
		code   int
	}{
		{"SELECT c / 0 FROM n WHERE k = 1", "the operation 'int / int' failed: / by zero", codeFunctionFailure},
		{"SELECT c % 0 FROM n WHERE k = 1", "the operation 'int % int' failed: / by zero", codeFunctionFailure},
		{"SELECT g / 0 FROM n WHERE k = 1", "the operation 'varint / varint' failed: BigInteger divide by zero", codeFunctionFailure},
		{"SELECT a / h FROM n WHERE k = 2", "the operation 'tinyint / decimal' failed: Division by zero", codeFunctionFailure},
		{"SELECT dt + 2h FROM n WHERE k = 1", "the operation 'date + duration' failed: The duration must have a day precision. Was: 2h", codeFunctionFailure},
		{"SELECT c + bo FROM n", "the '+' operation is not supported between c and bo", codeInvalid},
		{"SELECT bo + 1 FROM n", "the '+' operation is not supported between bo and 1", codeInvalid},
		{"SELECT 1 + bo FROM n", "the '+' operation is not supported between 1 and bo", codeInvalid},
		{"SELECT c / bo FROM n", "the '/' operation is not supported between c and bo", codeInvalid},
		{"SELECT tx + tx FROM n", "the '+' operation is not supported between tx and tx", codeInvalid},
		{"SELECT ts * 1d FROM n", "the '*' operation is not supported between ts and 1d", codeInvalid},
		{"SELECT ts + c FROM n", "the '+' operation is not supported between ts and c", codeInvalid},
		{"SELECT ts + ts FROM n", "the '+' operation is not supported between ts and ts", codeInvalid},
		{"SELECT 1d + ts FROM n", "the '+' operation is not supported between 1d and ts", codeInvalid},
		{"SELECT c + 'x' FROM n", "the '+' operation is not supported between c and 'x'", codeInvalid},
		{"SELECT e + zz FROM n", "Undefined column name zz in selection clause", codeInvalid},
	} {
		wantExactErr(t, s, tc.q, tc.code, tc.msg)
	}
	// A refusal comes at preparation, before any row is read.
	if _, err := s.Query("SELECT bo * 2 FROM n WHERE k = ?", 1).Iter().SliceMap(); err == nil {
		t.Error("bo * 2 prepared")
	}
}
