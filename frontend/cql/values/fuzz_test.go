package values

import (
	"errors"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// fuzzTypes are the types the fuzz targets pick from by index: every
// native type and some nested ones.
var fuzzTypes = func() []*cqltype.Type {
	var ts []*cqltype.Type
	for _, s := range []string{"ascii", "bigint", "blob", "boolean", "counter", "date", "decimal", "double",
		"duration", "float", "inet", "int", "smallint", "text", "time", "timestamp", "timeuuid", "tinyint",
		"uuid", "varint", "list<int>", "set<text>", "map<timestamp, frozen<list<decimal>>>",
		"tuple<int, text, frozen<set<double>>>", "frozen<map<frozen<tuple<int, inet>>, duration>>"} {
		ts = append(ts, cqltype.MustParse(s))
	}
	return append(ts, pointType, cqltype.ListOf(pointType, false))
}()

func FuzzFromJSON(f *testing.F) {
	for _, seed := range []struct {
		typ  uint8
		json string
	}{
		{0, `"abc"`}, {1, `-9223372036854775808`}, {2, `"0xcafe"`}, {3, `"TRUE"`}, {5, `"2024-02-29"`},
		{6, `1.5e-3`}, {7, `"NaN"`}, {8, `"P1Y2M"`}, {10, `"::ffff:1.2.3.4"`}, {12, `"-32768"`}, {14, `"23:59:59.9"`},
		{15, `"2024-01-02 03:04:05.678+01:00"`}, {16, `"d2177dd0-eaa2-11de-a572-001b779c76e3"`}, {19, `1e400`},
		{20, `[1, 2, null]`}, {21, `"[\"b\", \"a\"]"`}, {22, `{"1970-01-01": [1.0, "2"]}`}, {23, `[1, "x", [3, 2], 4]`},
		{24, `{"[1, \"::1\"]": "1h"}`}, {25, `{"x": 1, "\"Label\"": "p"}`}, {26, `[{"y": 2}, null]`},
		{20, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`},
		{9, `{"a": 1`}, {11, ``},
	} {
		f.Add(seed.typ, []byte(seed.json))
	}
	f.Fuzz(func(t *testing.T, ti uint8, data []byte) {
		typ := fuzzTypes[int(ti)%len(fuzzTypes)]
		if obj, err := DecodeObject(data); err == nil {
			for _, raw := range obj {
				_, _ = FromJSON(typ, raw)
			}
		}
		v, err := FromJSON(typ, data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("FromJSON(%s, %q): error %v is not an *Error", typ, data, err)
			}
			return
		}
		if v == nil {
			return
		}
		if err := cqltype.Validate(typ, v); err != nil {
			t.Fatalf("FromJSON(%s, %q) = %x, which does not validate: %v", typ, data, v, err)
		}
		out, err := ToJSON(typ, v)
		if err != nil {
			t.Fatalf("ToJSON(%s, %x): %v", typ, v, err)
		}
		_ = Text(typ, v)
		if !fitsText(typ, v, true) {
			return
		}
		back, err := FromJSON(typ, out)
		if err != nil {
			t.Fatalf("FromJSON(%s, ToJSON = %s): %v", typ, out, err)
		}
		if cqltype.Compare(typ, back, v) != 0 {
			t.Fatalf("%s: %q read as %x, written as %s, read back as %x", typ, data, v, out, back)
		}
	})
}

func FuzzLiteral(f *testing.F) {
	kinds := []ast.LitKind{ast.LitString, ast.LitInteger, ast.LitFloat, ast.LitBoolean, ast.LitUUID,
		ast.LitBlob, ast.LitDuration, ast.LitNull}
	for _, seed := range []struct {
		typ, kind uint8
		text      string
	}{
		{0, 0, "abc"}, {1, 1, "-9223372036854775809"}, {2, 5, "0xCAFE"}, {3, 3, "true"}, {5, 0, "-5877641-06-23"},
		{5, 1, "4294967295"}, {6, 2, "-1.5E-7"}, {7, 2, "-Infinity"}, {8, 6, "P0001-02-03T04:05:06"},
		{8, 6, "-1y2mo3w4d5h6m7s8ms9us10ns"}, {9, 2, "3.4028236e38"}, {10, 0, "fe80::1"}, {14, 0, "12:34:56.123456789"},
		{15, 0, "2024-01-02T03:04Z"}, {15, 0, "now"}, {16, 4, "d2177dd0-eaa2-11de-a572-001b779c76e3"},
		{19, 1, "-0"}, {18, 1, "+127"}, {6, 2, "1e-2147483648"}, {6, 2, ".5"},
	} {
		f.Add(seed.typ, seed.kind, seed.text)
	}
	f.Fuzz(func(t *testing.T, ti, ki uint8, text string) {
		typ := fuzzTypes[int(ti)%len(fuzzTypes)]
		term := &ast.Literal{Kind: kinds[int(ki)%len(kinds)], Text: text}
		v, err := Encode(typ, term, nil)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Encode(%s, %q): error %v is not an *Error", typ, text, err)
			}
			_ = e.Message("k")
			return
		}
		if v == nil {
			return
		}
		if err := cqltype.Validate(typ, v); err != nil {
			t.Fatalf("Encode(%s, %q) = %x, which does not validate: %v", typ, text, v, err)
		}
		if _, err := ToJSON(typ, v); err != nil {
			t.Fatalf("ToJSON(%s, %x): %v", typ, v, err)
		}
		_ = Text(typ, v)
		if typ.Kind.Native() {
			if _, err := Parse(typ, text); err != nil && term.Kind != ast.LitBlob {
				t.Fatalf("Encode accepted %q for %s but Parse refuses it: %v", text, typ, err)
			}
		}
	})
}
