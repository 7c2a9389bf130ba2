package parse

import (
	"fmt"
	"strings"
	"testing"
)

// render shows tokens as kind:text, one per token, EOF left out.
func render(toks []token) string {
	names := map[tokKind]string{tIdent: "id", tQuoted: "q", tString: "s", tInteger: "int", tFloat: "float",
		tUUID: "uuid", tHex: "hex", tDuration: "dur", tPunct: "p"}
	var parts []string
	for _, t := range toks {
		if t.kind == tEOF {
			break
		}
		parts = append(parts, names[t.kind]+":"+t.text)
	}
	return strings.Join(parts, " ")
}

func TestLex(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT a,b FROM t;", "id:SELECT id:a p:, id:b id:FROM id:t p:;"},
		{`"Quoted ""x""" ""`, `q:Quoted "x" q:`},
		{`'it''s' '' $$a'b$c$$ $$$$`, `s:it's s: s:a'b$c s:`},
		{"1 -1 007 1.5 -1.5 1. 1e3 1E-3 -2.5e+10 1e", "int:1 int:-1 int:007 float:1.5 float:-1.5 float:1. float:1e3 float:1E-3 float:-2.5e+10 int:1 id:e"},
		{"NaN -NaN Infinity -Infinity -nan", "id:NaN float:-NaN id:Infinity float:-Infinity float:-nan"},
		{"0x 0xCAFEbabe 0X1f", "hex:0x hex:0xCAFEbabe hex:0X1f"},
		{"123e4567-e89b-12d3-a456-426614174000 DEADBEEF-dead-BEEF-dead-beefdeadbeef", "uuid:123e4567-e89b-12d3-a456-426614174000 uuid:DEADBEEF-dead-BEEF-dead-beefdeadbeef"},
		{"1h 1h30m -2d 3mo 4ms 5us 6µs 7ns 8y 9w 10s 1H2M", "dur:1h dur:1h30m dur:-2d dur:3mo dur:4ms dur:5us dur:6µs dur:7ns dur:8y dur:9w dur:10s dur:1H2M"},
		{"P1Y P1Y2M3D PT1H P1DT2H3M4S P2W P0001-02-03T04:05:06 -P1D", "dur:P1Y dur:P1Y2M3D dur:PT1H dur:P1DT2H3M4S dur:P2W dur:P0001-02-03T04:05:06 dur:-P1D"},
		// Not durations: lower-case designators, identifiers that only
		// start like one, a lone P.
		{"p1d P1Dx P Pa", "id:p1d id:P1Dx id:P id:Pa"},
		{"a<=b>=c!=d<e>f=g", "id:a p:<= id:b p:>= id:c p:!= id:d p:< id:e p:> id:f p:= id:g"},
		{"m[1..2] ? :name + - * / % { } ( ) . : [ ]", "id:m p:[ int:1 p:.. int:2 p:] p:? p:: id:name p:+ p:- p:* p:/ p:% p:{ p:} p:( p:) p:. p:: p:[ p:]"},
		{"map<text,frozen<list<int>>>", "id:map p:< id:text p:, id:frozen p:< id:list p:< id:int p:> p:> p:>"},
		{"a -- comment\nb // comment\r\nc /* multi\nline */ d/**/e", "id:a id:b id:c id:d id:e"},
		{"c-1 c - 1", "id:c int:-1 id:c p:- int:1"},
		{"x_1 _x", "id:x_1"}, // '_' cannot start an identifier: an error below
	} {
		toks, err := lex(c.in)
		if strings.HasPrefix(c.in, "x_1 _x") {
			if err == nil {
				t.Errorf("lex(%q) succeeded", c.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("lex(%q): %v", c.in, err)
			continue
		}
		if got := render(toks); got != c.want {
			t.Errorf("lex(%q)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

func TestLexPositions(t *testing.T) {
	toks, err := lex("a\n  bb 'é' c\r\n\td")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		got = append(got, fmt.Sprintf("%d:%d@%d", tk.line, tk.col, tk.pos))
	}
	// Columns count characters, not bytes: 'é' is two bytes.
	want := "1:0@0 2:2@4 2:5@7 2:9@12 3:1@16 3:2@17"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("positions %s, want %s", s, want)
	}
}

// lex returns the tokens of src, ending with a tEOF token.
func lex(src string) ([]token, error) {
	l := lexer{src: src, line: 1}
	toks := make([]token, 0, len(src)/3+1)
	for {
		t, err := l.next()
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		if t.kind == tEOF {
			return toks, nil
		}
	}
}
