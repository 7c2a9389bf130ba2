package funcs

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

func mustOp(t *testing.T, op byte, l, r *cqltype.Type) *Function {
	t.Helper()
	f, err := Operation(op, Arg{Text: "l", Type: l}, Arg{Text: "r", Type: r})
	if err != nil {
		t.Fatalf("%s %c %s: %v", l, op, r, err)
	}
	return f
}

func enc(t *testing.T, typ *cqltype.Type, s string) []byte {
	t.Helper()
	v, err := values.Parse(typ, s)
	if err != nil {
		t.Fatalf("%s %q: %v", typ, s, err)
	}
	return v
}

func TestOperationResults(t *testing.T) {
	ty := cqltype.MustParse
	for _, tc := range []struct {
		l, r   string // types
		op     byte
		lv, rv string
		ret    string
		want   string
	}{
		{"int", "int", '+', "2147483647", "1", "int", "-2147483648"},
		{"bigint", "bigint", '*', "9223372036854775807", "2", "bigint", "-2"},
		{"int", "int", '/', "-2147483648", "-1", "int", "-2147483648"},
		{"int", "int", '%', "-7", "2", "int", "-1"},
		{"tinyint", "smallint", '-', "-128", "1", "smallint", "-129"},
		{"smallint", "smallint", '+', "32767", "1", "smallint", "-32768"},
		{"counter", "int", '+', "1", "2", "bigint", "3"},
		{"int", "float", '/', "1", "3", "float", "0.33333334"},
		{"bigint", "float", '+', "1", "0.1", "double", "1.1000000014901161"},
		{"double", "double", '%', "-7.5", "2", "double", "-1.5"},
		{"varint", "int", '%', "-7", "2", "varint", "-1"},
		{"varint", "bigint", '*', "9223372036854775807", "9223372036854775807", "varint", "85070591730234615847396907784232501249"},
		{"decimal", "decimal", '+', "1.25", "1.5", "decimal", "2.75"},
		{"decimal", "int", '*', "1.5", "2", "decimal", "3.00"},
		{"decimal", "decimal", '/', "1", "3", "decimal", "0.33333333333333333333333333333333"},
		{"decimal", "decimal", '/', "2", "3", "decimal", "0.66666666666666666666666666666667"},
		{"decimal", "decimal", '/', "-2", "3", "decimal", "-0.66666666666666666666666666666667"},
		{"decimal", "decimal", '/', "100", "4", "decimal", "25"},
		{"decimal", "decimal", '/', "1E+3", "1", "decimal", "1E+3"},
		{"decimal", "varint", '%', "7.5", "2", "decimal", "1.5"},
		{"float", "varint", '+', "0.5", "1", "decimal", "1.5"},
		{"double", "decimal", '+', "1E20", "0", "decimal", "100000000000000000000"},
	} {
		lt, rt := ty(tc.l), ty(tc.r)
		f := mustOp(t, tc.op, lt, rt)
		if f.Return.String() != tc.ret {
			t.Errorf("%s %c %s returns %s, want %s", tc.l, tc.op, tc.r, f.Return, tc.ret)
			continue
		}
		v, err := f.Call([][]byte{enc(t, lt, tc.lv), enc(t, rt, tc.rv)})
		if err != nil {
			t.Errorf("%s %c %s: %v", tc.lv, tc.op, tc.rv, err)
			continue
		}
		if got := values.Text(f.Return, v); got != tc.want {
			t.Errorf("%s %s %c %s %s = %s, want %s", tc.l, tc.lv, tc.op, tc.r, tc.rv, got, tc.want)
		}
	}
}

func bigI(n int64) *big.Int { return big.NewInt(n) }

func TestJavaDecimal(t *testing.T) {
	for f, want := range map[float64]dec{
		1:       {bigI(10), 1},
		8.5:     {bigI(85), 1},
		0:       {bigI(0), 1},
		-0.001:  {bigI(-1), 3},
		1e7:     {bigI(10), -6},
		1.25e-5: {bigI(125), 7},
		123.0:   {bigI(1230), 1},
	} {
		got := javaDecimal(f)
		if got.unscaled.Cmp(want.unscaled) != 0 || got.scale != want.scale {
			t.Errorf("javaDecimal(%g) = %s scale %d, want %s scale %d", f, got.unscaled, got.scale, want.unscaled, want.scale)
		}
	}
}

func TestOperationFailures(t *testing.T) {
	ty := cqltype.MustParse
	for _, tc := range []struct {
		l, r   string
		op     byte
		lv, rv string
		msg    string
	}{
		{"int", "int", '/', "1", "0", "the operation 'int / int' failed: / by zero"},
		{"tinyint", "bigint", '%', "1", "0", "the operation 'tinyint % bigint' failed: / by zero"},
		{"decimal", "decimal", '/', "0", "0", "the operation 'decimal / decimal' failed: Division undefined"},
		{"decimal", "float", '+', "1", "Infinity", "the operation 'decimal + float' failed: An infinite number cannot be converted into a decimal"},
		{"decimal", "double", '+', "1", "NaN", "the operation 'decimal + double' failed: A NaN cannot be converted into a decimal"},
	} {
		lt, rt := ty(tc.l), ty(tc.r)
		_, err := mustOp(t, tc.op, lt, rt).Call([][]byte{enc(t, lt, tc.lv), enc(t, rt, tc.rv)})
		var fe *FailureError
		if !errors.As(err, &fe) || fe.Msg != tc.msg || fe.Function != opNames[tc.op] {
			t.Errorf("%s %c %s: %v, want %q", tc.lv, tc.op, tc.rv, err, tc.msg)
		}
	}
	// Float division by zero is no failure.
	v, err := mustOp(t, '/', cqltype.DoubleType, cqltype.IntType).Call([][]byte{enc(t, cqltype.DoubleType, "1"), enc(t, cqltype.IntType, "0")})
	if err != nil || !math.IsInf(math.Float64frombits(binary.BigEndian.Uint64(v)), 1) {
		t.Errorf("1.0 / 0 = %x, %v", v, err)
	}
}

func TestOperationRefusals(t *testing.T) {
	for _, tc := range []struct {
		op   byte
		l, r Arg
	}{
		{'+', Arg{Text: "a", Type: cqltype.IntType}, Arg{Text: "b", Type: cqltype.BooleanType}},
		{'*', Arg{Text: "ts", Type: cqltype.TimestampType}, Arg{Text: "d", Type: cqltype.DurationType}},
		{'+', Arg{Text: "d", Type: cqltype.DurationType}, Arg{Text: "ts", Type: cqltype.TimestampType}},
		{'+', Arg{Text: "t", Type: cqltype.TimeType}, Arg{Text: "d", Type: cqltype.DurationType}},
		{'+', Arg{Text: "a", Type: cqltype.TextType}, Arg{Text: "b", Type: cqltype.TextType}},
	} {
		_, err := Operation(tc.op, tc.l, tc.r)
		want := "the '" + string(tc.op) + "' operation is not supported between " + tc.l.Text + " and " + tc.r.Text
		var e *Error
		if !errors.As(err, &e) || e.Msg != want {
			t.Errorf("%s %c %s: %v, want %q", tc.l.Text, tc.op, tc.r.Text, err, want)
		}
	}
	if _, err := Negation(Arg{Text: "b", Type: cqltype.BooleanType}); err == nil {
		t.Error("-b of a boolean resolved")
	}
}

func TestTemporalOperations(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.DateTime, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		from string
		op   byte
		dur  string
		want string
	}{
		{"2024-01-31 10:00:00", '+', "1mo", "2024-02-29 10:00:00"},
		{"2023-01-31 10:00:00", '+', "1mo", "2023-02-28 10:00:00"},
		{"2024-03-31 00:00:00", '-', "1mo", "2024-02-29 00:00:00"},
		{"2024-01-01 00:00:00", '-', "1mo1d", "2023-11-30 00:00:00"},
		{"2024-12-15 00:00:00", '+', "1y1mo", "2026-01-15 00:00:00"},
		{"2024-01-01 00:00:00", '+', "1h500us", "2024-01-01 01:00:00"},
		{"1969-12-31 23:59:59", '+', "1s", "1970-01-01 00:00:00"},
	} {
		f := mustOp(t, tc.op, cqltype.TimestampType, cqltype.DurationType)
		ts := binary.BigEndian.AppendUint64(nil, uint64(at(tc.from).UnixMilli()))
		v, err := f.Call([][]byte{ts, enc(t, cqltype.DurationType, tc.dur)})
		if err != nil {
			t.Fatalf("%s %c %s: %v", tc.from, tc.op, tc.dur, err)
		}
		got := time.UnixMilli(int64(binary.BigEndian.Uint64(v))).UTC().Format(time.DateTime)
		if got != tc.want {
			t.Errorf("%s %c %s = %s, want %s", tc.from, tc.op, tc.dur, got, tc.want)
		}
	}
	f := mustOp(t, '-', cqltype.DateType, cqltype.DurationType)
	v, err := f.Call([][]byte{enc(t, cqltype.DateType, "1970-01-01"), enc(t, cqltype.DurationType, "1d")})
	if err != nil || values.Text(cqltype.DateType, v) != "1969-12-31" {
		t.Errorf("1970-01-01 - 1d = %s, %v", values.Text(cqltype.DateType, v), err)
	}
}

func TestOperationLiterals(t *testing.T) {
	for _, tc := range []struct {
		op    byte
		other *cqltype.Type
		kind  ast.LitKind
		lit   string
		want  string
	}{
		{'+', cqltype.IntType, ast.LitInteger, "1", "int"},
		{'+', cqltype.CounterType, ast.LitInteger, "1", "bigint"},
		{'-', cqltype.TimestampType, ast.LitDuration, "1d", "duration"},
		{'*', cqltype.TinyintType, ast.LitInteger, "1", "tinyint"},
	} {
		lit := &ast.Literal{Kind: tc.kind, Text: tc.lit}
		f, err := Operation(tc.op, Arg{Text: "x", Type: tc.other}, Arg{Text: tc.lit, Term: lit})
		if err != nil {
			t.Errorf("x %c %s: %v", tc.op, tc.lit, err)
			continue
		}
		if f.Args[1].String() != tc.want {
			t.Errorf("x %c %s: literal typed %s, want %s", tc.op, tc.lit, f.Args[1], tc.want)
		}
	}
	if _, err := Operation('+', Arg{Text: "?"}, Arg{Text: "?"}); err == nil {
		t.Error("? + ? resolved")
	}
}

// FuzzOperation calls every operation with arbitrary operand bytes: no
// panic, and results of valid operands are valid values of the result.
func FuzzOperation(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0})
	f.Add(uint8(6), uint8(6), uint8(3), []byte{0, 0, 0, 1, 5}, []byte{0x7f, 0xff, 0xff, 0xff, 3})
	f.Add(uint8(9), uint8(11), uint8(0), []byte{0, 0, 1, 0, 0, 0, 0, 0}, []byte{2, 4, 0})
	f.Add(uint8(10), uint8(11), uint8(1), []byte{0x80, 0, 0, 0}, []byte{2, 0, 0})
	types := append(slices.Clone(numberKinds), cqltype.TimestampType, cqltype.DateType, cqltype.DurationType)
	f.Fuzz(func(t *testing.T, li, ri, oi uint8, a, b []byte) {
		lt, rt := types[int(li)%len(types)], types[int(ri)%len(types)]
		op := "+-*/%"[int(oi)%5]
		fn, err := Operation(op, Arg{Text: "a", Type: lt}, Arg{Text: "b", Type: rt})
		if err != nil {
			return
		}
		v, err := fn.Call([][]byte{a, b})
		if err != nil || v == nil || cqltype.Validate(lt, a) != nil || cqltype.Validate(rt, b) != nil {
			return
		}
		if err := cqltype.Validate(fn.Return, v); err != nil {
			t.Fatalf("%x %c %x = %x: %v", a, op, b, v, err)
		}
	})
}
