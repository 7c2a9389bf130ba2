package cqltype

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func testUDTs(name string) (*Type, error) {
	switch name {
	case "address", "ks.address":
		return UDTOf("ks", "address", []string{"street", "zip"}, []*Type{TextType, IntType}), nil
	case "Mixed Case":
		return UDTOf("ks", "Mixed Case", []string{"x"}, []*Type{IntType}), nil
	case "nested":
		return UDTOf("ks", "nested", []string{"l"}, []*Type{ListOf(IntType, false)}), nil
	}
	return nil, fmt.Errorf("unknown type %s", name)
}

func TestParseString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"int", "int"},
		{"  VarChar ", "text"},
		{"TEXT", "text"},
		{"list<int>", "list<int>"},
		{"set< timeuuid >", "set<timeuuid>"},
		{"map<text,int>", "map<text, int>"},
		{"frozen<map<text, list<int>>>", "frozen<map<text, frozen<list<int>>>>"},
		{"map<text, frozen<list<int>>>", "map<text, frozen<list<int>>>"},
		{"tuple<int, text>", "frozen<tuple<int, text>>"},
		{"frozen<tuple<int, text>>", "frozen<tuple<int, text>>"},
		{"tuple<int, list<text>>", "frozen<tuple<int, frozen<list<text>>>>"},
		{"list<tuple<int, blob>>", "list<frozen<tuple<int, blob>>>"},
		{"address", "address"},
		{"frozen<ks.address>", "frozen<address>"},
		{"list<frozen<address>>", "list<frozen<address>>"},
		{`frozen<"Mixed Case">`, `frozen<"Mixed Case">`},
		{"frozen<list<nested>>", "frozen<list<frozen<nested>>>"},
		{"map<duration, int>", ""},
		{"set<duration>", ""},
		{"list<duration>", "list<duration>"},
		{"list<counter>", ""},
		{"tuple<counter>", ""},
		{"list<list<int>>", ""},
		{"list<address>", ""},
		{"frozen<int>", ""},
		{"map<int>", ""},
		{"list<int, int>", ""},
		{"list<int", ""},
		{"list<int>>", ""},
		{"", ""},
		{"unknown", ""},
		{`"unterminated`, ""},
		{"int;", ""},
		{"ks.", ""},
		{strings.Repeat("frozen<list<", 40) + "int" + strings.Repeat(">>", 40), ""},
	} {
		got, err := Parse(tc.in, testUDTs)
		if tc.want == "" {
			if err == nil {
				t.Errorf("Parse(%q) = %s, want error", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if s := got.String(); s != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, s, tc.want)
		}
		// The canonical form parses back to the same type.
		again, err := Parse(got.String(), testUDTs)
		if err != nil || !again.Equal(got) {
			t.Errorf("Parse(%q) = %v, %v; want %s", got.String(), again, err, got)
		}
	}
}

func TestParseFreezesNested(t *testing.T) {
	typ, err := Parse("frozen<map<text, list<frozen<tuple<int, set<int>>>>>>", nil)
	if err != nil {
		t.Fatal(err)
	}
	var walk func(*Type)
	walk = func(x *Type) {
		if !x.Kind.Native() && !x.Frozen {
			t.Errorf("%s not frozen inside %s", x, typ)
		}
		for _, e := range x.Elems {
			walk(e)
		}
	}
	walk(typ)
	if l := MustParse("list<int>"); !l.MultiCell() {
		t.Error("list<int> should be multi-cell")
	}
}

func TestParseErrors(t *testing.T) {
	_, err := Parse("list<int", nil)
	if !errors.Is(err, ErrSyntax) {
		t.Errorf("Parse(list<int) error %v, want ErrSyntax", err)
	}
	_, err = Parse("frozen<int>", nil)
	if err == nil || !strings.Contains(err.Error(), "frozen<> is only allowed") {
		t.Errorf("frozen<int>: %v", err)
	}
	_, err = Parse("list<list<int>>", nil)
	if err == nil || !strings.Contains(err.Error(), "non-frozen collections are not allowed inside collections") {
		t.Errorf("list<list<int>>: %v", err)
	}
}

func TestQuoteIdent(t *testing.T) {
	for in, want := range map[string]string{
		"abc": "abc", "a_1": "a_1", "Abc": `"Abc"`, "1a": `"1a"`, "a b": `"a b"`,
		`a"b`: `"a""b"`, "select": `"select"`, "": `""`,
	} {
		if got := QuoteIdent(in); got != want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", in, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"int", "frozen<map<text, list<int>>>", "tuple<int, text>",
		`frozen<"Mixed Case">`, "ks.address", "list<list<int>>", "map<", `"a""b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		typ, err := Parse(s, testUDTs)
		if err != nil {
			return
		}
		again, err := Parse(typ.String(), testUDTs)
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", typ.String(), s, err)
		}
		if !again.Equal(typ) {
			t.Fatalf("%q: round trip changed %s to %s", s, typ, again)
		}
	})
}
