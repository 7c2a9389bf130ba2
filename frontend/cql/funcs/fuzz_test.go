package funcs

import (
	"slices"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// fuzzFunctions are every registered signature, plus the any-type ones
// for a few types, in a fixed order.
var fuzzFunctions = func() []*Function {
	var names []string
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	var fs []*Function
	for _, name := range names {
		fs = append(fs, registry[name]...)
	}
	for _, t := range []string{"int", "decimal", "frozen<map<text, frozen<list<double>>>>", "tuple<int, inet>"} {
		for _, name := range []string{"count", "min", "max", "tojson"} {
			f, err := Lookup("", name, []Arg{{Type: cqltype.MustParse(t)}})
			if err != nil {
				panic(err)
			}
			fs = append(fs, f)
		}
	}
	return append(fs, FromJSON(cqltype.MustParse("list<int>")))
}()

// FuzzCall calls every function with arbitrary argument bytes, as a
// client's bound values could reach them: no panic, and results are valid
// values of the return type.
func FuzzCall(f *testing.F) {
	for i := range fuzzFunctions {
		f.Add(uint16(i), []byte{0, 0, 0, 1}, []byte{})
		f.Add(uint16(i), []byte{0x80, 0, 0, 0, 0, 0, 0, 0}, []byte{0x7f, 0xff, 0xff, 0xff, 1})
	}
	f.Add(uint16(0), []byte("[1, 2]"), []byte(nil))
	f.Fuzz(func(t *testing.T, fi uint16, a, b []byte) {
		fn := fuzzFunctions[int(fi)%len(fuzzFunctions)]
		if fn.IsAggregate() {
			acc := fn.New()
			_ = acc.Add(a)
			_ = acc.Add(b)
			if v := acc.Result(); v != nil {
				if err := cqltype.Validate(fn.Return, v); err != nil {
					t.Fatalf("%s of %x, %x = %x: %v", fn, a, b, v, err)
				}
			}
			return
		}
		args := [][]byte{a, b}[:len(fn.Args)]
		v, err := fn.Call(args)
		if err != nil || v == nil {
			return
		}
		// Arguments are valid once the executor has checked them; only then
		// is the result promised to be valid.
		for i, t := range fn.Args {
			if cqltype.Validate(t, args[i]) != nil {
				return
			}
		}
		if err := cqltype.Validate(fn.Return, v); err != nil {
			t.Fatalf("%s(%x) = %x: %v", fn, args, v, err)
		}
	})
}

// FuzzLookupLiteral resolves calls with a literal of any kind and text, as
// the parser passes a client's statement: no panic, and a literal of a
// number kind whose text parses picks a signature of its kind.
func FuzzLookupLiteral(f *testing.F) {
	for _, s := range []struct {
		kind uint8
		text string
	}{
		{uint8(ast.LitInteger), "1"}, {uint8(ast.LitInteger), "-9223372036854775809"},
		{uint8(ast.LitFloat), "1.5"}, {uint8(ast.LitFloat), "0.10000000000000000001"},
		{uint8(ast.LitFloat), "1e400"}, {uint8(ast.LitFloat), "1e-400"}, {uint8(ast.LitFloat), "-Infinity"},
		{uint8(ast.LitString), "é"}, {uint8(ast.LitUUID), "d2177dd0-eaa2-11de-a572-001b779c76e3"},
		{uint8(ast.LitBlob), "0x01"}, {uint8(ast.LitNull), "null"}, {200, "x"},
	} {
		f.Add(s.kind, s.text)
	}
	f.Fuzz(func(t *testing.T, kind uint8, text string) {
		lit := &ast.Literal{Kind: ast.LitKind(kind), Text: text}
		arg := []Arg{{Text: text, Term: lit}}
		for _, name := range []string{"sum", "max", "intasblob", "totimestamp"} {
			_, _ = Lookup("", name, arg)
		}
		if p := preferredType(lit); p != nil && lit.Kind == ast.LitInteger {
			switch p.Kind {
			case cqltype.Int, cqltype.Bigint, cqltype.Varint:
			default:
				t.Fatalf("integer %q preferred as %s", text, p)
			}
		}
	})
}
