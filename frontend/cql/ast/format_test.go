package ast

import "testing"

func TestQuoteName(t *testing.T) {
	for name, want := range map[string]string{
		"a": "a", "a_1": "a_1", "key": "key", "ttl": "ttl",
		"A": `"A"`, "1a": `"1a"`, "_a": `"_a"`, "select": `"select"`, "true": `"true"`,
		`say "hi"`: `"say ""hi"""`, "": `""`, "é": `"é"`, "a b": `"a b"`,
	} {
		if got := QuoteName(name); got != want {
			t.Errorf("QuoteName(%q) = %s, want %s", name, got, want)
		}
	}
	if got := (TableName{Keyspace: "Ks", Name: "t"}).String(); got != `"Ks".t` {
		t.Errorf("TableName.String() = %s", got)
	}
}

func TestFormatTerm(t *testing.T) {
	for _, c := range []struct {
		term Term
		want string
	}{
		{&Literal{Kind: LitString, Text: "it's"}, "'it''s'"},
		{&Literal{Kind: LitInteger, Text: "-1"}, "-1"},
		{&Bind{Index: 0}, "?"},
		{&Bind{Index: 1, Name: "Key"}, `:"Key"`},
		{&List{Elems: []Term{&Literal{Kind: LitInteger, Text: "1"}}}, "[1]"},
		{&Set{}, "{}"},
		{&Map{Keys: []Term{&Ident{Name: "f"}}, Values: []Term{&Literal{Kind: LitNull, Text: "null"}}}, "{f: null}"},
		{&Tuple{Elems: []Term{&Bind{}, &Bind{Index: 1}}}, "(?, ?)"},
		{&Call{Keyspace: "system", Name: "now"}, "system.now()"},
		{&Call{Name: "token", Args: []Term{&Literal{Kind: LitInteger, Text: "1"}}}, "token(1)"},
		{&Hint{Type: "frozen<list<int>>", Term: &Bind{}}, "(frozen<list<int>>)?"},
	} {
		if got := FormatTerm(c.term); got != c.want {
			t.Errorf("FormatTerm(%#v) = %s, want %s", c.term, got, c.want)
		}
	}
}
