package values

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// elems serializes a collection or tuple body for expectations: count
// (when withCount) then each element with its length; nil is null.
func elems(withCount bool, vs ...[]byte) []byte {
	var b []byte
	if withCount {
		b = append(b, 0, 0, 0, byte(len(vs)))
	}
	for _, v := range vs {
		b = appendElem(b, v)
	}
	return b
}

func i32(n int32) []byte { return []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }

var pointType = cqltype.UDTOf("ks", "point", []string{"x", "y", "Label"},
	[]*cqltype.Type{cqltype.IntType, cqltype.IntType, cqltype.TextType})

func TestEncodeComposite(t *testing.T) {
	one, two, three := num("1"), num("2"), num("3")
	tests := []struct {
		name string
		typ  *cqltype.Type
		term ast.Term
		want []byte
	}{
		{"list", cqltype.MustParse("list<int>"), &ast.List{Elems: []ast.Term{two, one, two}},
			elems(true, i32(2), i32(1), i32(2))},
		{"empty list", cqltype.MustParse("list<int>"), &ast.List{}, elems(true)},
		{"set sorted and deduplicated", cqltype.MustParse("set<int>"), &ast.Set{Elems: []ast.Term{three, one, three, two}},
			elems(true, i32(1), i32(2), i32(3))},
		{"empty map literal as set", cqltype.MustParse("set<text>"), &ast.Map{}, elems(true)},
		{"empty set literal as map", cqltype.MustParse("map<int, int>"), &ast.Set{}, elems(true)},
		{"map sorted by key, last value wins", cqltype.MustParse("map<int, text>"),
			&ast.Map{Keys: []ast.Term{two, one, two}, Values: []ast.Term{str("b"), str("a"), str("c")}},
			nil},
		{"tuple with missing and null components", cqltype.MustParse("tuple<int, text, int>"),
			&ast.Tuple{Elems: []ast.Term{one, null()}}, elems(false, i32(1), nil, nil)},
		{"udt fields by name, missing null", pointType,
			&ast.Map{Keys: []ast.Term{&ast.Ident{Name: "y"}, &ast.Ident{Name: "Label"}}, Values: []ast.Term{two, str("p")}},
			elems(false, nil, i32(2), []byte("p"))},
		{"frozen nested", cqltype.MustParse("frozen<map<text, frozen<set<int>>>>"),
			&ast.Map{Keys: []ast.Term{str("b"), str("a")}, Values: []ast.Term{
				&ast.Set{Elems: []ast.Term{two, one}}, &ast.Set{}}},
			append([]byte{0, 0, 0, 2}, elems(false, []byte("a"), elems(true), []byte("b"), elems(true, i32(1), i32(2)))...)},
		{"list of tuples", cqltype.MustParse("list<frozen<tuple<int, text>>>"),
			&ast.List{Elems: []ast.Term{&ast.Tuple{Elems: []ast.Term{one, str("x")}}}},
			elems(true, elems(false, i32(1), []byte("x")))},
		{"set of udts", cqltype.SetOf(pointType, false),
			&ast.Set{Elems: []ast.Term{&ast.Map{Keys: []ast.Term{&ast.Ident{Name: "x"}}, Values: []ast.Term{one}}}},
			elems(true, elems(false, i32(1), nil, nil))},
	}
	// The map case's expectation: a repeated key keeps its last value.
	tests[5].want = func() []byte {
		b := []byte{0, 0, 0, 2}
		b = appendElem(appendElem(b, i32(1)), []byte("a"))
		return appendElem(appendElem(b, i32(2)), []byte("c"))
	}()
	for _, tc := range tests {
		got, err := Encode(tc.typ, tc.term, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: got %x, want %x", tc.name, got, tc.want)
		}
		if err := cqltype.Validate(tc.typ, got); err != nil {
			t.Errorf("%s: result does not validate: %v", tc.name, err)
		}
	}
}

func TestEncodeCompositeErrors(t *testing.T) {
	listInt := cqltype.MustParse("list<int>")
	tests := []struct {
		name string
		typ  *cqltype.Type
		term ast.Term
		want string
	}{
		{"list for int", cqltype.IntType, &ast.List{}, "Invalid list literal for k of type int"},
		{"set for list", listInt, &ast.Set{Elems: []ast.Term{num("1")}}, "Invalid set literal for k of type list<int>"},
		{"map for list", listInt, &ast.Map{Keys: []ast.Term{num("1")}, Values: []ast.Term{num("1")}}, "Invalid map literal for k of type list<int>"},
		{"tuple for list", listInt, &ast.Tuple{Elems: []ast.Term{num("1"), num("2")}}, "Invalid tuple type literal for k of type list<int>"},
		{"literal for list", listInt, num("1"), `Invalid INTEGER constant (1) for "k" of type list<int>`},
		{"bad list element", listInt, &ast.List{Elems: []ast.Term{num("1"), str("x")}}, "Invalid list literal for k: value 'x' is not of type int"},
		{"null list element", listInt, &ast.List{Elems: []ast.Term{null()}}, "null is not supported inside collections"},
		{"bad map key", cqltype.MustParse("map<int, text>"), &ast.Map{Keys: []ast.Term{str("a")}, Values: []ast.Term{str("b")}},
			"Invalid map literal for k: key 'a' is not of type int"},
		{"bad map value", cqltype.MustParse("map<int, text>"), &ast.Map{Keys: []ast.Term{num("1")}, Values: []ast.Term{num("2")}},
			"Invalid map literal for k: value 2 is not of type text"},
		{"bad nested", cqltype.MustParse("list<frozen<tuple<int, text>>>"),
			&ast.List{Elems: []ast.Term{&ast.Tuple{Elems: []ast.Term{num("1"), num("2")}}}},
			"Invalid list literal for k: value (1, 2) is not of type frozen<tuple<int, text>>"},
		{"tuple too long", cqltype.MustParse("tuple<int, int>"), &ast.Tuple{Elems: []ast.Term{num("1"), num("2"), num("3")}},
			"Invalid tuple literal for k: too many elements. Type frozen<tuple<int, int>> expects 2 but got 3"},
		{"unknown udt field", pointType, &ast.Map{Keys: []ast.Term{&ast.Ident{Name: "z"}}, Values: []ast.Term{num("1")}},
			"Unknown field 'z' in value of user defined type point"},
		{"udt field case", pointType, &ast.Map{Keys: []ast.Term{&ast.Ident{Name: "label"}}, Values: []ast.Term{str("x")}},
			"Unknown field 'label' in value of user defined type point"},
		{"bad udt field", pointType, &ast.Map{Keys: []ast.Term{&ast.Ident{Name: "Label"}}, Values: []ast.Term{num("1")}},
			`Invalid user type literal for k: field "Label" is not of type text`},
		{"udt with value keys", pointType, &ast.Map{Keys: []ast.Term{str("x")}, Values: []ast.Term{num("1")}},
			"Invalid user type literal for k of type point"},
		{"duplicate udt field", pointType, &ast.Map{Keys: []ast.Term{&ast.Ident{Name: "x"}, &ast.Ident{Name: "x"}}, Values: []ast.Term{num("1"), num("2")}},
			"Duplicate field 'x' in value of user defined type point"},
		{"bad tuple component", cqltype.MustParse("tuple<int, text>"), &ast.Tuple{Elems: []ast.Term{str("a"), str("b")}},
			"Invalid tuple literal for k: component 0 is not of type int"},
		{"bad set element", cqltype.MustParse("set<text>"), &ast.Set{Elems: []ast.Term{str("a"), &ast.List{}}},
			"Invalid set literal for k: value [] is not of type text"},
		{"out of range element", listInt, &ast.List{Elems: []ast.Term{num("2147483648")}}, "Unable to make int from '2147483648'"},
		{"bind without resolver", cqltype.IntType, &ast.Bind{}, "Cannot evaluate *ast.Bind here"},
	}
	for _, tc := range tests {
		got, err := Encode(tc.typ, tc.term, nil)
		if err == nil {
			t.Errorf("%s: got %x, want error", tc.name, got)
			continue
		}
		if msg := message(err); msg != tc.want {
			t.Errorf("%s: error %q, want %q", tc.name, msg, tc.want)
		}
	}
}

func TestEncodeResolve(t *testing.T) {
	errBind := errors.New("no value for marker 1")
	resolve := func(typ *cqltype.Type, term ast.Term) ([]byte, error) {
		switch x := term.(type) {
		case *ast.Bind:
			switch x.Index {
			case 0:
				if typ.Kind != cqltype.Int {
					t.Errorf("marker 0 resolved for %s, want int", typ)
				}
				return i32(7), nil
			case 1:
				return nil, errBind
			case 2:
				return nil, nil
			case 3:
				return []byte{1, 2}, nil // not a valid int
			}
		case *ast.Call:
			return i32(9), nil
		}
		t.Fatalf("unexpected term %T", term)
		return nil, nil
	}
	setInt := cqltype.MustParse("set<int>")

	// Whole terms come back as resolve returns them.
	if v, err := Encode(cqltype.IntType, &ast.Bind{Index: 3}, resolve); err != nil || !bytes.Equal(v, []byte{1, 2}) {
		t.Errorf("top-level marker: %x, %v", v, err)
	}
	// Elements are resolved with the element type, then sorted.
	v, err := Encode(setInt, &ast.Set{Elems: []ast.Term{&ast.Call{Name: "f"}, &ast.Bind{Index: 0}}}, resolve)
	if want := elems(true, i32(7), i32(9)); err != nil || !bytes.Equal(v, want) {
		t.Errorf("set of marker and call: %x, %v; want %x", v, err, want)
	}
	if _, err := Encode(setInt, &ast.Set{Elems: []ast.Term{&ast.Bind{Index: 1}}}, resolve); err != errBind {
		t.Errorf("resolve error: got %v, want it unchanged", err)
	}
	if _, err := Encode(setInt, &ast.Set{Elems: []ast.Term{&ast.Bind{Index: 2}}}, resolve); err == nil || message(err) != "null is not supported inside collections" {
		t.Errorf("null element from resolve: %v", err)
	}
	if _, err := Encode(setInt, &ast.Set{Elems: []ast.Term{&ast.Bind{Index: 3}}}, resolve); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid element from resolve: %v, want ErrInvalid", err)
	}
	// A null marker is fine in a tuple.
	v, err = Encode(cqltype.MustParse("tuple<int, int>"), &ast.Tuple{Elems: []ast.Term{&ast.Bind{Index: 2}, &ast.Bind{Index: 0}}}, resolve)
	if want := elems(false, nil, i32(7)); err != nil || !bytes.Equal(v, want) {
		t.Errorf("tuple: %x, %v; want %x", v, err, want)
	}
}

func TestAssignable(t *testing.T) {
	tests := []struct {
		typ  string
		term ast.Term
		want bool
	}{
		{"date", str("2024-01-01"), true},
		{"timeuuid", str("2024-01-01"), false},
		{"int", num("1"), true},
		{"counter", null(), false},
		{"int", null(), true},
		{"set<int>", &ast.Map{}, true},
		{"set<int>", &ast.Map{Keys: []ast.Term{num("1")}, Values: []ast.Term{num("1")}}, false},
		{"map<int, int>", &ast.Set{}, true},
		{"list<int>", &ast.Set{}, false},
		{"tuple<int, int>", &ast.Tuple{Elems: []ast.Term{num("1"), num("1"), num("1")}}, false},
		{"int", &ast.Bind{}, true},
		{"list<int>", &ast.List{Elems: []ast.Term{str("x")}}, false},
		{"frozen<map<int, frozen<list<text>>>>", &ast.Map{Keys: []ast.Term{num("1")}, Values: []ast.Term{&ast.List{Elems: []ast.Term{num("1")}}}}, false},
		{"frozen<map<int, frozen<list<text>>>>", &ast.Map{Keys: []ast.Term{num("1")}, Values: []ast.Term{&ast.List{Elems: []ast.Term{str("1")}}}}, true},
	}
	udt := &ast.Map{Keys: []ast.Term{&ast.Ident{Name: "x"}}, Values: []ast.Term{str("1")}}
	if Assignable(pointType, udt) {
		t.Error("{x: '1'} is assignable to a UDT whose x is an int")
	}
	for _, tc := range tests {
		if got := Assignable(cqltype.MustParse(tc.typ), tc.term); got != tc.want {
			t.Errorf("Assignable(%s, %#v) = %v", tc.typ, tc.term, got)
		}
	}
}

func TestTermText(t *testing.T) {
	term := &ast.List{Elems: []ast.Term{
		str("a"), num("1"), null(), &ast.Bind{}, &ast.Bind{Name: "v"},
		&ast.Set{Elems: []ast.Term{flt("1.5")}},
		&ast.Map{Keys: []ast.Term{&ast.Ident{Name: "Field"}}, Values: []ast.Term{lit(ast.LitBlob, "0x01")}},
		&ast.Tuple{Elems: []ast.Term{lit(ast.LitBoolean, "true"), lit(ast.LitUUID, "u")}},
		&ast.Call{Keyspace: "system", Name: "now"},
		&ast.Hint{Type: "int", Term: &ast.Bind{}},
	}}
	want := `['a', 1, NULL, ?, :v, {1.5}, {"Field": 0x01}, (true, u), system.now(), (int)?]`
	if got := TermText(term); got != want {
		t.Errorf("TermText = %s, want %s", got, want)
	}
}
