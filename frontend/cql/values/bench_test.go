package values

import (
	"fmt"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// benchCases are typical column values: a scalar, a timestamp string and
// collections of growing size.
func benchCases(b *testing.B) []struct {
	name string
	typ  *cqltype.Type
	term ast.Term
} {
	list := func(n int) ast.Term {
		l := &ast.List{}
		for i := 0; i < n; i++ {
			l.Elems = append(l.Elems, num(fmt.Sprint(i*7919%1000)))
		}
		return l
	}
	set := func(n int) ast.Term {
		s := &ast.Set{}
		for i := 0; i < n; i++ {
			s.Elems = append(s.Elems, str(fmt.Sprintf("member-%d", i*7919%n)))
		}
		return s
	}
	return []struct {
		name string
		typ  *cqltype.Type
		term ast.Term
	}{
		{"int", cqltype.IntType, num("123456")},
		{"timestamp", cqltype.TimestampType, str("2024-01-02 03:04:05.678+0100")},
		{"list=16", cqltype.MustParse("list<int>"), list(16)},
		{"set=256", cqltype.MustParse("set<text>"), set(256)},
		{"udt", pointType, &ast.Map{Keys: []ast.Term{&ast.Ident{Name: "x"}, &ast.Ident{Name: "Label"}},
			Values: []ast.Term{num("1"), str("label")}}},
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, c := range benchCases(b) {
		b.Run(c.name, func(b *testing.B) {
			v, err := Encode(c.typ, c.term, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(v)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(c.typ, c.term, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkJSON(b *testing.B) {
	for _, c := range benchCases(b) {
		v, err := Encode(c.typ, c.term, nil)
		if err != nil {
			b.Fatal(err)
		}
		j, err := ToJSON(c.typ, v)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("to/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(j)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ToJSON(c.typ, v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("from/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(j)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := FromJSON(c.typ, j); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
