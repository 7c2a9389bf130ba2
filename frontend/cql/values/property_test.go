package values

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/cqltype/cqltypetest"
)

// randomType returns a random type: key types, plus the kinds keys may
// not hold (duration, counter at the top, non-frozen collections).
func randomType(r *rand.Rand) *cqltype.Type {
	switch r.IntN(8) {
	case 0:
		return cqltype.DurationType
	case 1:
		return cqltype.ListOf(cqltypetest.KeyType(r, 1), false)
	case 2:
		return cqltype.MapOf(cqltypetest.KeyType(r, 1), cqltype.DurationType, false)
	case 3:
		return cqltype.CounterType
	}
	return cqltypetest.KeyType(r, 2)
}

// fitsText reports whether every part of v has a text form that reads
// back: times lie within a day, and in JSON floats are finite (JSON has no
// NaN), tuples and user types are not the empty value (JSON writes it as
// all nulls, as Cassandra does) and neither are varints (Cassandra's
// fromJson refuses "" for a varint).
func fitsText(t *cqltype.Type, v []byte, inJSON bool) bool {
	if v == nil {
		return true
	}
	if len(v) == 0 {
		return !inJSON || t.Kind != cqltype.Tuple && t.Kind != cqltype.UDT && t.Kind != cqltype.Varint
	}
	switch t.Kind {
	case cqltype.Time:
		ns := int64(binary.BigEndian.Uint64(v))
		return ns >= 0 && ns < nanosPerDay
	case cqltype.Float:
		f := float64(math.Float32frombits(binary.BigEndian.Uint32(v)))
		return !inJSON || !math.IsNaN(f) && !math.IsInf(f, 0)
	case cqltype.Double:
		f := math.Float64frombits(binary.BigEndian.Uint64(v))
		return !inJSON || !math.IsNaN(f) && !math.IsInf(f, 0)
	case cqltype.List, cqltype.Set, cqltype.Map:
		n, rest := collectionCount(v)
		if t.Kind == cqltype.Map {
			n *= 2
		}
		for i := 0; i < n; i++ {
			var e []byte
			e, rest = nextElem(rest)
			et := t.Elems[0]
			if t.Kind == cqltype.Map {
				et = t.Elems[i%2]
			}
			if !fitsText(et, e, inJSON) {
				return false
			}
		}
	case cqltype.Tuple, cqltype.UDT:
		rest := v
		for i := 0; i < len(t.Elems) && len(rest) > 0; i++ {
			var e []byte
			e, rest = nextElem(rest)
			if !fitsText(t.Elems[i], e, inJSON) {
				return false
			}
		}
	}
	return true
}

// termOf writes a value as the term a statement would hold: literals
// from the value's text form, and bind markers (resolved to the bytes
// themselves) for empty values, which no literal but ” can express.
func termOf(t *cqltype.Type, v []byte, binds *[][]byte) ast.Term {
	if v == nil {
		return null()
	}
	bind := func() ast.Term {
		*binds = append(*binds, v)
		return &ast.Bind{Index: len(*binds) - 1}
	}
	switch t.Kind {
	case cqltype.List, cqltype.Set:
		n, rest := collectionCount(v)
		var elems []ast.Term
		for i := 0; i < n; i++ {
			var e []byte
			e, rest = nextElem(rest)
			elems = append(elems, termOf(t.Elems[0], e, binds))
		}
		if t.Kind == cqltype.List {
			return &ast.List{Elems: elems}
		}
		return &ast.Set{Elems: elems}
	case cqltype.Map:
		n, rest := collectionCount(v)
		m := &ast.Map{}
		for i := 0; i < n; i++ {
			var k, e []byte
			k, rest = nextElem(rest)
			e, rest = nextElem(rest)
			m.Keys = append(m.Keys, termOf(t.Elems[0], k, binds))
			m.Values = append(m.Values, termOf(t.Elems[1], e, binds))
		}
		return m
	case cqltype.Tuple, cqltype.UDT:
		if len(v) == 0 {
			return bind() // the empty value, not a tuple of nulls
		}
		rest := v
		tuple, udt := &ast.Tuple{}, &ast.Map{}
		for i := 0; i < len(t.Elems) && len(rest) > 0; i++ {
			var e []byte
			e, rest = nextElem(rest)
			tuple.Elems = append(tuple.Elems, termOf(t.Elems[i], e, binds))
			if t.Kind == cqltype.UDT {
				udt.Keys = append(udt.Keys, &ast.Ident{Name: t.Fields[i]})
			}
		}
		if t.Kind == cqltype.UDT {
			udt.Values = tuple.Elems
			return udt
		}
		return tuple
	}
	if len(v) == 0 {
		if t.Kind == cqltype.Blob {
			return lit(ast.LitBlob, "0x")
		}
		return bind()
	}
	s := nativeText(t, v)
	switch t.Kind {
	case cqltype.Ascii, cqltype.Text, cqltype.Inet, cqltype.Date, cqltype.Time, cqltype.Timestamp:
		return str(s)
	case cqltype.Tinyint, cqltype.Smallint, cqltype.Int, cqltype.Bigint, cqltype.Counter, cqltype.Varint:
		return num(s)
	case cqltype.Decimal, cqltype.Float, cqltype.Double:
		return flt(s)
	case cqltype.Boolean:
		return lit(ast.LitBoolean, s)
	case cqltype.Blob:
		return lit(ast.LitBlob, s)
	case cqltype.UUID, cqltype.Timeuuid:
		return lit(ast.LitUUID, s)
	case cqltype.Duration:
		return lit(ast.LitDuration, s)
	}
	return bind()
}

// TestProperties checks, for random types and values, that the literal
// written from a value's text encodes back to an equal, valid value, and
// that JSON round trips.
func TestProperties(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, s := range []uint64{1, seed} {
		r := rand.New(rand.NewPCG(s, s))
		n := 3000
		if testing.Short() {
			n = 300
		}
		for i := 0; i < n; i++ {
			typ := randomType(r)
			v := cqltypetest.Value(r, typ)
			want, err := cqltype.Normalize(typ, v)
			if err != nil {
				t.Fatalf("seed %d: Normalize(%s, %x): %v", s, typ, v, err)
			}
			if !fitsText(typ, v, false) {
				continue
			}
			t.Run("", func(t *testing.T) {
				checkLiteral(t, typ, v, want)
				if fitsText(typ, v, true) {
					checkJSON(t, typ, v, want)
				}
			})
			if t.Failed() {
				t.Fatalf("seed %d", s)
			}
		}
	}
}

func checkLiteral(t *testing.T, typ *cqltype.Type, v, want []byte) {
	var binds [][]byte
	term := termOf(typ, v, &binds)
	got, err := Encode(typ, term, func(_ *cqltype.Type, term ast.Term) ([]byte, error) {
		return binds[term.(*ast.Bind).Index], nil
	})
	if err != nil {
		t.Fatalf("Encode(%s, %s): %v", typ, describe(term), err)
	}
	if err := cqltype.Validate(typ, got); err != nil {
		t.Fatalf("Encode(%s, %s) = %x does not validate: %v", typ, describe(term), got, err)
	}
	if cqltype.Compare(typ, got, want) != 0 {
		t.Fatalf("Encode(%s, %s) = %x, want %x", typ, describe(term), got, want)
	}
}

func checkJSON(t *testing.T, typ *cqltype.Type, v, want []byte) {
	j, err := ToJSON(typ, v)
	if err != nil {
		t.Fatalf("ToJSON(%s, %x): %v", typ, v, err)
	}
	got, err := FromJSON(typ, j)
	if err != nil {
		t.Fatalf("FromJSON(%s, %s): %v", typ, j, err)
	}
	if cqltype.Compare(typ, got, want) != 0 {
		t.Fatalf("FromJSON(%s, ToJSON(%x) = %s) = %x", typ, v, j, got)
	}
}

func describe(term ast.Term) string {
	switch x := term.(type) {
	case *ast.Literal:
		return fmt.Sprintf("%q", x.Text)
	case *ast.List:
		return fmt.Sprintf("list%v", describeAll(x.Elems))
	case *ast.Set:
		return fmt.Sprintf("set%v", describeAll(x.Elems))
	case *ast.Tuple:
		return fmt.Sprintf("tuple%v", describeAll(x.Elems))
	case *ast.Map:
		return fmt.Sprintf("map%v:%v", describeAll(x.Keys), describeAll(x.Values))
	}
	return fmt.Sprintf("%T", term)
}

func describeAll(ts []ast.Term) []string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = describe(t)
	}
	return s
}
