package cqltype

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax marks a malformed type string.
var ErrSyntax = errors.New("cqltype: syntax error")

// Parse parses CQL type syntax, such as "frozen<map<text, list<int>>>" or
// "tuple<int, text>". Native type names and unquoted identifiers are case
// insensitive. Any other name is a user-defined type, resolved by udt: it is
// called with the name as written, "name" or "keyspace.name" (quotes
// removed, unquoted parts in lower case), and must return a UDT. udt may be
// nil when no user-defined types are known.
//
// Parse enforces Cassandra's rules: collections and UDTs nested in a
// non-frozen collection must be frozen explicitly; everything inside
// frozen<...> or a tuple is frozen implicitly; counters may not be nested;
// durations may not be set elements or map keys.
func Parse(s string, udt func(name string) (*Type, error)) (*Type, error) {
	p := parser{src: s, udt: udt}
	p.next()
	t, err := p.parseType(false)
	if err != nil {
		return nil, err
	}
	if p.tok != tokEOF {
		return nil, p.errorf("unexpected %q after type", p.text)
	}
	return t, nil
}

// MustParse is Parse for types known to be valid, such as literals in tests
// and built-in tables. It panics on error.
func MustParse(s string) *Type {
	t, err := Parse(s, nil)
	if err != nil {
		panic(err)
	}
	return t
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokQuoted
	tokString // a '...' literal: a type written as its Java class
	tokPunct
	tokBad
)

type parser struct {
	src  string
	pos  int
	tok  tokKind
	text string // identifier (lower-cased unless quoted) or punctuation
	udt  func(string) (*Type, error)
	// depth counts enclosing type parameters, bounded so that crafted
	// input cannot recurse without limit.
	depth int
}

const maxDepth = 64

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s in %q", ErrSyntax, fmt.Sprintf(format, args...), p.src)
}

// next scans the following token.
func (p *parser) next() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
	if p.pos >= len(p.src) {
		p.tok, p.text = tokEOF, ""
		return
	}
	c := p.src[p.pos]
	switch {
	case c == '<' || c == '>' || c == ',' || c == '.':
		p.tok, p.text = tokPunct, p.src[p.pos:p.pos+1]
		p.pos++
	case c == '"':
		p.quoted('"', tokQuoted, "unterminated quoted identifier")
	case c == '\'':
		p.quoted('\'', tokString, "unterminated string")
	case identByte(c):
		i := p.pos
		for i < len(p.src) && identByte(p.src[i]) {
			i++
		}
		p.tok, p.text = tokIdent, strings.ToLower(p.src[p.pos:i])
		p.pos = i
	default:
		p.tok, p.text = tokBad, string(rune(c))
		p.pos = len(p.src)
	}
}

// quoted reads the token at p.pos quoted by q, in which a doubled q stands
// for one: a quoted identifier or a string, tok, or a tokBad with message
// unterminated.
func (p *parser) quoted(q byte, tok tokKind, unterminated string) {
	var b strings.Builder
	i := p.pos + 1
	for {
		j := strings.IndexByte(p.src[i:], q)
		if j < 0 {
			p.tok, p.text = tokBad, unterminated
			p.pos = len(p.src)
			return
		}
		b.WriteString(p.src[i : i+j])
		i += j + 1
		if i < len(p.src) && p.src[i] == q {
			b.WriteByte(q)
			i++
			continue
		}
		break
	}
	p.pos = i
	p.tok, p.text = tok, b.String()
}

func identByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func (p *parser) expect(punct string) error {
	if p.tok != tokPunct || p.text != punct {
		if p.tok == tokEOF {
			return p.errorf("expected %q, found end of input", punct)
		}
		return p.errorf("expected %q, found %q", punct, p.text)
	}
	p.next()
	return nil
}

// parseType parses one type. inFrozen says an enclosing frozen<...> or tuple
// freezes everything nested, so nested collections need no explicit frozen.
func (p *parser) parseType(inFrozen bool) (*Type, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errorf("types nested deeper than %d", maxDepth)
	}
	switch p.tok {
	case tokIdent:
	case tokQuoted:
		return p.parseUDT(inFrozen)
	case tokString:
		class := p.text
		p.next()
		return classType(class)
	case tokEOF:
		return nil, p.errorf("expected a type, found end of input")
	default:
		return nil, p.errorf("expected a type, found %q", p.text)
	}
	name := p.text
	switch name {
	case "frozen":
		p.next()
		if err := p.expect("<"); err != nil {
			return nil, err
		}
		inner, err := p.parseType(true)
		if err != nil {
			return nil, err
		}
		if err := p.expect(">"); err != nil {
			return nil, err
		}
		if inner.Kind.Native() {
			return nil, fmt.Errorf("cqltype: frozen<> is only allowed on collections, tuples, and user-defined types (got %s)", inner)
		}
		return Freeze(inner), nil
	case "list", "set", "map", "tuple":
		p.next()
		if p.tok != tokPunct || p.text != "<" {
			// Not parameterized: a UDT that happens to share the name.
			return p.resolveUDT("", name, inFrozen)
		}
		return p.parseParameterized(name, inFrozen)
	}
	if t, ok := natives[name]; ok {
		p.next()
		return t, nil
	}
	return p.parseUDT(inFrozen)
}

func (p *parser) parseParameterized(name string, inFrozen bool) (*Type, error) {
	p.next() // '<'
	var elems []*Type
	for {
		e, err := p.parseType(inFrozen || name == "tuple")
		if err != nil {
			return nil, err
		}
		elems = append(elems, e)
		if p.tok == tokPunct && p.text == "," {
			p.next()
			continue
		}
		if err := p.expect(">"); err != nil {
			return nil, err
		}
		break
	}
	want := map[string]int{"list": 1, "set": 1, "map": 2}[name]
	if want != 0 && len(elems) != want {
		return nil, p.errorf("%s takes %d type parameter(s), got %d", name, want, len(elems))
	}
	var t *Type
	switch name {
	case "list":
		t = &Type{Kind: List, Elems: elems}
	case "set":
		t = &Type{Kind: Set, Elems: elems}
	case "map":
		t = &Type{Kind: Map, Elems: elems}
	default:
		t = &Type{Kind: Tuple, Frozen: true, Elems: elems}
	}
	for i, e := range elems {
		if err := checkNested(t, i, e, inFrozen); err != nil {
			return nil, err
		}
		elems[i] = Freeze(e)
	}
	if inFrozen {
		return Freeze(t), nil
	}
	return t, nil
}

// checkNested applies Cassandra's rules for the i-th parameter e of t.
func checkNested(t *Type, i int, e *Type, inFrozen bool) error {
	if e.Kind == Counter {
		if t.Kind == Tuple {
			return errors.New("cqltype: counters are not allowed inside tuples")
		}
		return fmt.Errorf("cqltype: counters are not allowed inside collections: %s", t)
	}
	if e.Kind == Duration && t.Kind == Set {
		return fmt.Errorf("cqltype: durations are not allowed inside sets: %s", t)
	}
	if e.Kind == Duration && t.Kind == Map && i == 0 {
		return fmt.Errorf("cqltype: durations are not allowed as map keys: %s", t)
	}
	if t.Kind != Tuple && !inFrozen && e.MultiCell() {
		if e.Kind == UDT {
			return fmt.Errorf("cqltype: non-frozen UDTs are not allowed inside collections: %s", t)
		}
		return fmt.Errorf("cqltype: non-frozen collections are not allowed inside collections: %s", t)
	}
	return nil
}

func (p *parser) parseUDT(inFrozen bool) (*Type, error) {
	first := p.text
	p.next()
	if p.tok == tokPunct && p.text == "." {
		p.next()
		if p.tok != tokIdent && p.tok != tokQuoted {
			return nil, p.errorf("expected a type name after %q", first+".")
		}
		name := p.text
		p.next()
		return p.resolveUDT(first, name, inFrozen)
	}
	return p.resolveUDT("", first, inFrozen)
}

func (p *parser) resolveUDT(keyspace, name string, inFrozen bool) (*Type, error) {
	full := name
	if keyspace != "" {
		full = keyspace + "." + name
	}
	if p.udt == nil {
		return nil, fmt.Errorf("cqltype: unknown type %s", full)
	}
	t, err := p.udt(full)
	if err != nil {
		return nil, err
	}
	if t == nil || t.Kind != UDT {
		return nil, fmt.Errorf("cqltype: unknown type %s", full)
	}
	if inFrozen {
		return Freeze(t), nil
	}
	return t, nil
}
