package parse

import (
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

// bind records a new marker; named is the name of a :name marker.
func (p *parser) bind(t token, name string) *ast.Bind {
	b := &ast.Bind{Index: len(p.binds), Name: name, Pos: t.pos}
	p.binds = append(p.binds, b)
	return b
}

// isMarker reports whether the current token starts a bind marker.
func (p *parser) isMarker() bool {
	t := p.tok()
	return p.isPunct(t, "?") || p.isPunct(t, ":") && p.isMarkerName(p.peek(1))
}

// isMarkerName reports whether t can name a :name marker: any identifier
// or keyword that is not reserved.
func (p *parser) isMarkerName(t token) bool { return p.isIdent(t) }

// marker parses ? or :name.
func (p *parser) marker() *ast.Bind {
	t := p.tok()
	if p.acceptPunct("?") {
		return p.bind(t, "")
	}
	if p.isPunct(t, ":") {
		p.next()
		return p.bind(t, p.ident())
	}
	p.noViable(t)
	return nil
}

// literal parses a constant, or returns nil if the current token is not
// one.
func (p *parser) literal() *ast.Literal {
	t := p.tok()
	lit := &ast.Literal{Text: t.text, Pos: t.pos}
	switch t.kind {
	case tString:
		lit.Kind = ast.LitString
	case tInteger:
		lit.Kind = ast.LitInteger
	case tFloat:
		lit.Kind = ast.LitFloat
	case tUUID:
		lit.Kind = ast.LitUUID
	case tHex:
		lit.Kind = ast.LitBlob
	case tDuration:
		lit.Kind = ast.LitDuration
	case tIdent:
		switch w := t.word; w {
		case "true", "false":
			lit.Kind, lit.Text = ast.LitBoolean, w
		case "null":
			lit.Kind, lit.Text = ast.LitNull, w
		case "nan":
			lit.Kind, lit.Text = ast.LitFloat, "NaN"
		case "infinity":
			lit.Kind, lit.Text = ast.LitFloat, "Infinity"
		default:
			return nil
		}
	default:
		return nil
	}
	if t.kind == tFloat && strings.HasPrefix(t.text, "-") && !isDigit(t.text[1]) {
		// -NaN and -Infinity, spelled as the other literals are.
		if strings.EqualFold(t.text, "-nan") {
			lit.Text = "NaN" // NaN has no sign
		} else {
			lit.Text = "-Infinity"
		}
	}
	p.next()
	return lit
}

// isCallStart reports whether the current tokens start a function call:
// name( or ks.name( .
func (p *parser) isCallStart() bool {
	if !p.isFunctionName(p.tok()) {
		return false
	}
	if p.isPunct(p.peek(1), "(") {
		return true
	}
	return p.isPunct(p.peek(1), ".") && p.isFunctionName(p.peek(2)) && p.isPunct(p.peek(3), "(")
}

// isFunctionName reports whether t can name a function: an identifier,
// or token and count, which are reserved elsewhere.
func (p *parser) isFunctionName(t token) bool {
	return p.isIdent(t) || p.isKw(t, "token")
}

// functionName parses [ks.]name, the name in lower case unless quoted.
func (p *parser) functionName() (ks, name string) {
	name = p.fname()
	if p.acceptPunct(".") {
		ks, name = name, p.fname()
	}
	return ks, name
}

func (p *parser) fname() string {
	if p.isKw(p.tok(), "token") {
		p.next()
		return "token"
	}
	return p.ident()
}

// term parses a value: a constant, a marker, a collection, tuple or
// user-type literal, a function call or a type hint.
func (p *parser) term() ast.Term {
	p.enter()
	defer p.leave()
	if lit := p.literal(); lit != nil {
		return lit
	}
	t := p.tok()
	switch {
	case p.isMarker():
		return p.marker()
	case p.isPunct(t, "["):
		p.next()
		l := &ast.List{}
		if !p.acceptPunct("]") {
			l.Elems = p.termList()
			p.expectPunct("]")
		}
		return l
	case p.isPunct(t, "{"):
		return p.braces()
	case p.isPunct(t, "("):
		if h := p.tryHint(); h != nil {
			return h
		}
		p.next()
		tup := &ast.Tuple{Elems: p.termList()}
		p.expectPunct(")")
		return tup
	case p.isCallStart():
		return p.call()
	}
	p.noViable(t)
	return nil
}

// termList parses term (, term)* .
func (p *parser) termList() []ast.Term {
	list := []ast.Term{p.term()}
	for p.acceptPunct(",") {
		list = append(list, p.term())
	}
	return list
}

// call parses name(args).
func (p *parser) call() *ast.Call {
	ks, name := p.functionName()
	p.expectPunct("(")
	c := &ast.Call{Keyspace: ks, Name: name}
	if !p.acceptPunct(")") {
		c.Args = p.termList()
		p.expectPunct(")")
	}
	return c
}

// braces parses {} (an empty map), {k: v, ...}, {t, ...} or a user-type
// literal {field: v, ...}, whose keys become Ident terms.
func (p *parser) braces() ast.Term {
	p.expectPunct("{")
	if p.acceptPunct("}") {
		return &ast.Map{}
	}
	if p.isIdent(p.tok()) && p.isPunct(p.peek(1), ":") && !p.isCallStart() {
		m := &ast.Map{}
		for {
			m.Keys = append(m.Keys, &ast.Ident{Name: p.ident()})
			p.expectPunct(":")
			m.Values = append(m.Values, p.term())
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct("}")
		return m
	}
	first := p.term()
	if p.acceptPunct(":") {
		m := &ast.Map{Keys: []ast.Term{first}, Values: []ast.Term{p.term()}}
		for p.acceptPunct(",") {
			m.Keys = append(m.Keys, p.term())
			p.expectPunct(":")
			m.Values = append(m.Values, p.term())
		}
		p.expectPunct("}")
		return m
	}
	s := &ast.Set{Elems: []ast.Term{first}}
	for p.acceptPunct(",") {
		s.Elems = append(s.Elems, p.term())
	}
	p.expectPunct("}")
	return s
}

// tryHint parses (type) term if the tokens at '(' read that way, and
// otherwise leaves the position alone and returns nil. A hint differs
// from a tuple by a type and ')' followed by the start of a term.
func (p *parser) tryHint() ast.Term {
	save := p.i
	p.next()
	typ, ok := p.tryType()
	if !ok || !p.acceptPunct(")") || !p.startsTerm(p.tok()) {
		p.i = save
		return nil
	}
	return &ast.Hint{Type: typ, Term: p.term()}
}

// startsTerm reports whether t can begin a term.
func (p *parser) startsTerm(t token) bool {
	switch t.kind {
	case tString, tInteger, tFloat, tUUID, tHex, tDuration:
		return true
	case tPunct:
		return t.text == "?" || t.text == ":" || t.text == "[" || t.text == "{" || t.text == "("
	case tIdent:
		switch t.word {
		case "true", "false", "null", "nan", "infinity", "token":
			return true
		}
		return p.isIdent(t)
	}
	return false
}

// Types. A type is returned as text that cqltype.Parse reads: names in
// lower case unless quoted, quoted names re-quoted.

// typ parses a type or fails.
func (p *parser) typ() string {
	t := p.tok()
	from := p.i
	s, ok := p.tryType()
	p.typeActions(from, p.i)
	if !ok {
		p.i = p.indexOf(t)
		p.noViable(p.tok())
	}
	return s
}

// typeActions raises, among the tokens toks[from:to] of a type, the
// errors of the actions in Cassandra's type rules: a user type named with
// one of the words set aside for types to come (Parser.g's
// reservedTypeNames, compared as written, so BYTE passes; "date" is a
// native type), and frozen<> around a native type, which CQL3Type.Raw
// refuses once the '>' has parsed.
func (p *parser) typeActions(from, to int) {
	for i := from; i < to && i < len(p.toks); i++ {
		t := p.toks[i]
		if t.kind != tIdent || i+1 < len(p.toks) && p.isPunct(p.toks[i+1], ".") {
			continue // not a name, or a keyspace
		}
		if ast.ReservedTypeName(p.src[t.pos:t.end]) {
			p.actionf(t, "Invalid (reserved) user type name %s", p.src[t.pos:t.end])
		}
		if t.word == "frozen" && i+3 < to && p.isPunct(p.toks[i+1], "<") && p.isPunct(p.toks[i+3], ">") {
			if n := p.toks[i+2]; n.kind == tIdent && nativeTypes[n.word] {
				p.actionf(t, "frozen<> is only allowed on collections, tuples, and user-defined types (got %s)", n.word)
			}
		}
	}
}

// nativeTypes are the words of Cassandra's native_type rule.
var nativeTypes = map[string]bool{
	"ascii": true, "bigint": true, "blob": true, "boolean": true, "counter": true,
	"date": true, "decimal": true, "double": true, "duration": true, "float": true,
	"inet": true, "int": true, "smallint": true, "text": true, "time": true,
	"timestamp": true, "timeuuid": true, "tinyint": true, "uuid": true,
	"varchar": true, "varint": true,
}

func (p *parser) indexOf(t token) int {
	for i, tk := range p.toks {
		if tk.pos == t.pos {
			return i
		}
	}
	return p.i
}

// tryType parses a type, reporting false (with the position anywhere)
// when the tokens are not one.
func (p *parser) tryType() (string, bool) {
	if p.depth > maxDepth {
		return "", false
	}
	p.depth++
	defer func() { p.depth-- }()
	t := p.tok()
	switch t.kind {
	case tString:
		// A custom type class name; cqltype rejects it with its message.
		p.next()
		return "'" + strings.ReplaceAll(t.text, "'", "''") + "'", true
	case tQuoted, tIdent:
	default:
		return "", false
	}
	w := t.word
	if t.kind == tIdent {
		switch w {
		case "frozen", "map", "list", "set", "tuple":
			if !p.isPunct(p.peek(1), "<") {
				break
			}
			p.next()
			p.next()
			var args []string
			for {
				a, ok := p.tryType()
				if !ok {
					return "", false
				}
				args = append(args, a)
				if !p.acceptPunct(",") {
					break
				}
			}
			if !p.acceptPunct(">") {
				return "", false
			}
			return w + "<" + strings.Join(args, ", ") + ">", true
		}
		if ast.Reserved(w) || w == "set" {
			return "", false
		}
	} else if t.text == "" {
		return "", false
	}
	p.next()
	name := typeName(t)
	if p.isPunct(p.tok(), ".") && (p.isIdent(p.peek(1))) {
		p.next()
		name += "." + typeName(p.next())
	}
	return name, true
}

// typeName is a type's name as type text: quoted when written quoted, and
// when written unquoted in another case than a reserved type name's (COMPLEX
// passes as Cassandra compares as written, but its text, complex, would not
// parse back unquoted).
func typeName(t token) string {
	switch {
	case t.kind == tQuoted:
		return `"` + strings.ReplaceAll(t.text, `"`, `""`) + `"`
	case ast.ReservedTypeName(t.word):
		return `"` + t.word + `"`
	}
	return t.word
}
