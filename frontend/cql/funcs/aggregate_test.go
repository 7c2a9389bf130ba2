package funcs

import (
	"math"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

func TestAggregates(t *testing.T) {
	dec := func(s string) []byte {
		v, err := values.Parse(cqltype.DecimalType, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name, typ string
		in        [][]byte
		want      string // Text of the result
	}{
		{"count", "int", [][]byte{i32(1), nil, i32(3)}, "2"},
		{"count", "list<int>", nil, "0"},
		{"countrows", "", [][]byte{nil, {}, i32(1)}, "3"},
		{"min", "int", [][]byte{nil, i32(3), i32(-2), i32(7)}, "-2"},
		{"max", "int", [][]byte{i32(3), nil, i32(-2), i32(7)}, "7"},
		{"max", "text", [][]byte{[]byte("b"), []byte("ab"), []byte("é")}, "é"},
		{"min", "frozen<list<int>>", [][]byte{
			append([]byte{0, 0, 0, 1}, append([]byte{0, 0, 0, 4}, i32(2)...)...),
			append([]byte{0, 0, 0, 1}, append([]byte{0, 0, 0, 4}, i32(1)...)...),
		}, "[1]"},
		{"min", "int", [][]byte{nil}, "null"},
		{"max", "timeuuid", nil, "null"},
		{"sum", "int", [][]byte{i32(1), i32(2), nil, i32(3)}, "6"},
		{"sum", "int", [][]byte{i32(math.MaxInt32), i32(1)}, "-2147483648"}, // wraps, as Java's int
		{"sum", "tinyint", [][]byte{{100}, {100}}, "-56"},
		{"sum", "bigint", nil, "0"},
		{"sum", "counter", [][]byte{bigint(5), bigint(-7)}, "-2"},
		{"sum", "varint", [][]byte{{0x7f}, {0x01}}, "128"},
		{"sum", "decimal", [][]byte{dec("1.5"), dec("2.25"), dec("1E+1")}, "13.75"},
		{"sum", "decimal", nil, "0"},
		{"sum", "double", [][]byte{f64(0.1), f64(0.2), f64(0.3)}, "0.6"},
		{"sum", "float", [][]byte{f32(1.5), f32(2)}, "3.5"},
		{"avg", "int", [][]byte{i32(1), i32(2)}, "1"},
		{"avg", "int", [][]byte{i32(-1), i32(-2)}, "-1"},
		{"avg", "int", [][]byte{i32(math.MaxInt32), i32(math.MaxInt32)}, "2147483647"}, // no overflow
		{"avg", "bigint", [][]byte{bigint(math.MaxInt64), bigint(math.MaxInt64)}, "9223372036854775807"},
		{"avg", "smallint", nil, "0"},
		{"avg", "varint", [][]byte{{0x05}, {0x02}}, "3"},
		// Cassandra averages decimals incrementally: 1, then 1 + (2-1)/2
		// rounded half even at scale 0, which is 1 + 0.
		{"avg", "decimal", [][]byte{dec("1"), dec("2")}, "1"},
		{"avg", "decimal", [][]byte{dec("1"), dec("4")}, "3"}, // 1 + 1.5 rounds to 1 + 2
		{"avg", "decimal", nil, "0"},
		{"avg", "decimal", [][]byte{dec("1.0"), dec("2.0")}, "1.5"},
		{"avg", "decimal", [][]byte{dec("2.5"), dec("2.5"), dec("2.6")}, "2.5"},
		{"avg", "double", [][]byte{f64(1), f64(2), nil}, "1.5"},
		{"avg", "double", [][]byte{f64(math.MaxFloat64), f64(math.MaxFloat64), f64(-math.MaxFloat64)}, "5.992310449541053E307"},
		{"sum", "double", [][]byte{f64(math.Inf(1)), f64(math.Inf(1))}, "Infinity"},
		{"sum", "double", [][]byte{f64(math.Inf(1)), f64(math.Inf(-1))}, "NaN"},
		{"avg", "float", [][]byte{f32(1), f32(2)}, "1.5"},
		{"max", "counter", [][]byte{bigint(3), bigint(-4)}, "3"},
		{"avg", "float", nil, "0.0"},
		{"avg", "counter", [][]byte{bigint(3), bigint(4)}, "3"},
	}
	for _, tc := range tests {
		args := types(tc.typ)
		if tc.typ == "" {
			args = nil
		}
		f, err := Lookup("", tc.name, args)
		if err != nil {
			t.Errorf("%s(%s): %v", tc.name, tc.typ, err)
			continue
		}
		if !f.IsAggregate() {
			t.Errorf("%s is not an aggregate", f)
			continue
		}
		if _, err := f.Call(nil); err == nil {
			t.Errorf("%s: Call succeeded on an aggregate", f)
		}
		acc := f.New()
		for _, v := range tc.in {
			if err := acc.Add(v); err != nil {
				t.Errorf("%s: Add(%x): %v", f, v, err)
			}
		}
		got := acc.Result()
		if got != nil {
			if err := cqltype.Validate(f.Return, got); err != nil {
				t.Errorf("%s: invalid result %x: %v", f, got, err)
			}
		}
		if s := values.Text(f.Return, got); s != tc.want {
			t.Errorf("%s of %d values = %s, want %s", f, len(tc.in), s, tc.want)
		}
	}
	// Scalars have no accumulator.
	if f, _ := Lookup("", "now", nil); f.New() != nil || f.IsAggregate() {
		t.Error("now() is an aggregate")
	}
}

func TestAggregateBadInput(t *testing.T) {
	for _, name := range []string{"sum", "avg", "min", "max"} {
		f, err := Lookup("", name, types("int"))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.New().Add([]byte{1, 2, 3}); err == nil {
			t.Errorf("%s accepted a 3-byte int", name)
		}
	}
	for _, name := range []string{"sum", "avg"} {
		f, _ := Lookup("", name, types("decimal"))
		acc := f.New()
		if err := acc.Add([]byte{0, 0, 0, 0, 1}); err != nil {
			t.Fatal(err)
		}
		if err := acc.Add([]byte{0x7f, 0xff, 0xff, 0xff, 1}); err == nil {
			t.Errorf("%s of decimals with scales 0 and 2^31-1 did not refuse", name)
		}
	}
}
