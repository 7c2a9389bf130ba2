// Package parse turns CQL text into the statements of package cql/ast.
//
// It is a hand-written recursive-descent parser over a token slice that
// the lexer produces up front, following the grammar of Cassandra 4
// (src/antlr/Lexer.g and Parser.g in apache/cassandra). It mostly needs
// one token of lookahead; the few places where Cassandra's grammar uses
// syntactic predicates (SELECT JSON, a type hint against a tuple) look a
// few tokens further.
//
// Lexical rules, as Cassandra's:
//
//	keywords      case-insensitive; the unreserved ones (key, type, ttl,
//	              timestamp, json, ...) are also identifiers
//	identifiers   [a-zA-Z][a-zA-Z0-9_]*, folded to lower case, or "Quoted"
//	              with "" for a quote, kept as written
//	strings       'text' with '' for a quote, or $$text$$
//	numbers       -?[0-9]+, -?[0-9]+(.[0-9]*)?([eE][+-]?[0-9]+)?, NaN,
//	              Infinity, -NaN, -Infinity
//	blobs, uuids  0x[0-9a-fA-F]*, 8-4-4-4-12 hex digits
//	durations     (-?[0-9]+unit)+ with units y mo w d h m s ms us µs ns,
//	              or ISO 8601: P1Y2M3DT4H5M6S, P2W, P0001-02-03T04:05:06
//	markers       ? and :name
//	comments      -- and // to the end of the line, /* ... */
//
// A syntax error is an *Error worded like Cassandra's, with the line and
// the column (from 0) of the offending token and a snippet of the text
// around it: "line 1:9 mismatched input 'FORM' expecting K_FROM (SELECT *
// [FORM] t)". The executor returns it to the client as a Syntax_error.
// Errors that Cassandra raises from a grammar action rather than from
// ANTLR's recognizer (addRecognitionError, or a SyntaxException thrown by
// an action) read as the bare message, as Cassandra sends them:
// "Multiple definition for property 'a'". The few checks that Cassandra's
// grammar actions make with an InvalidRequestException are an
// *InvalidError, which the executor sends as Invalid.
//
// Bind markers are numbered from 0 in order of appearance; each
// statement that takes them lists them in its Binds field (ast.Binds).
package parse

import (
	"fmt"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

// Error is a syntax error at a position of the statement text.
type Error struct {
	Line int // from 1
	Col  int // from 0, in characters, as Cassandra counts
	Msg  string
	// Bare marks an error of a grammar action, which Cassandra reports
	// as its message alone; Line and Col still locate it for tools.
	Bare bool
}

func newError(line, col int, format string, args ...any) *Error {
	return &Error{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Bare {
		return e.Msg
	}
	return fmt.Sprintf("line %d:%d %s", e.Line, e.Col, e.Msg)
}

// InvalidError is a statement that Cassandra's parser refuses with an
// InvalidRequestException thrown from a grammar action: an Invalid
// (0x2200) error for the client, not a syntax error.
type InvalidError struct {
	Line int // from 1
	Col  int // from 0
	Msg  string
}

func (e *InvalidError) Error() string { return e.Msg }

// maxDepth bounds the nesting of terms, types and selectors, so that a
// crafted statement cannot exhaust the stack.
const maxDepth = 256

// Statement parses one CQL statement, optionally followed by semicolons.
func Statement(text string) (ast.Statement, error) {
	p, err := newParser(text)
	if err != nil {
		return nil, err
	}
	var s ast.Statement
	err = p.run(func() {
		s = p.statement()
		for p.acceptPunct(";") {
		}
		if p.tok().kind != tEOF {
			p.failf(p.tok(), "mismatched input %s expecting EOF", p.quote(p.tok()))
		}
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Statements parses a script: statements separated by semicolons. Each
// statement numbers its bind markers from 0.
func Statements(text string) ([]ast.Statement, error) {
	p, err := newParser(text)
	if err != nil {
		return nil, err
	}
	var list []ast.Statement
	err = p.run(func() {
		for {
			for p.acceptPunct(";") {
			}
			if p.tok().kind == tEOF {
				return
			}
			list = append(list, p.statement())
			if p.tok().kind != tEOF && !p.isPunct(p.tok(), ";") {
				p.failf(p.tok(), "mismatched input %s expecting ';'", p.quote(p.tok()))
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return list, nil
}

// parser holds the state of one parse. Errors unwind the descent with a
// panic of type bailout, which run turns back into an error; nothing else
// is recovered, so a bug still shows as a crash in tests and fuzzing.
type parser struct {
	src string
	// lx lexes on demand: toks holds the tokens looked at so far, so
	// that a statement refused early (nested too deeply, say) costs the
	// tokens before the refusal, not those of its whole text.
	lx    lexer
	toks  []token
	i     int
	binds []*ast.Bind
	depth int
}

// bailout carries an *Error or an *InvalidError.
type bailout struct{ err error }

func newParser(text string) (*parser, error) {
	return &parser{src: text, lx: lexer{src: text, line: 1}}, nil
}

// fill lexes tokens until toks holds index i or ends with tEOF; a lexing
// error stops the parse.
func (p *parser) fill(i int) {
	for len(p.toks) <= i && (len(p.toks) == 0 || p.toks[len(p.toks)-1].kind != tEOF) {
		t, err := p.lx.next()
		if err != nil {
			panic(bailout{err})
		}
		p.toks = append(p.toks, t)
	}
}

func (p *parser) run(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			err = b.err
		}
	}()
	f()
	return nil
}

// tok is the current token; peek(n) the one n tokens further.
func (p *parser) tok() token { return p.peek(0) }

func (p *parser) peek(n int) token {
	p.fill(p.i + n)
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.tok()
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// failf stops the parse with an error at t, followed by Cassandra's
// snippet of the text around t.
func (p *parser) failf(t token, format string, args ...any) {
	msg := fmt.Sprintf(format, args...) + p.snippet(t)
	panic(bailout{&Error{Line: t.line, Col: t.col, Msg: msg}})
}

// actionf stops the parse with an error that Cassandra raises from a
// grammar action: its bare message, no position or snippet in the text.
// Cassandra keeps parsing after such an error and reports the first one
// collected, so callers raise it where Cassandra's action runs: after
// the parts of the rule before it have parsed.
func (p *parser) actionf(t token, format string, args ...any) {
	panic(bailout{&Error{Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...), Bare: true}})
}

// invalidf stops the parse with an *InvalidError, for the checks that
// Cassandra's grammar actions make by throwing InvalidRequestException.
// Such an exception ends Cassandra's parse at once.
func (p *parser) invalidf(t token, format string, args ...any) {
	panic(bailout{&InvalidError{Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)}})
}

// noViable is ANTLR's error when no alternative of a rule matches.
func (p *parser) noViable(t token) {
	p.failf(t, "no viable alternative at input %s", p.quote(t))
}

// quote renders a token as ANTLR does in its messages.
func (p *parser) quote(t token) string {
	if t.kind == tEOF {
		return "'<EOF>'"
	}
	return "'" + p.src[t.pos:t.end] + "'"
}

// snippet shows the text around t as Cassandra's ErrorCollector does: a
// few tokens before it, the token in brackets, one token after, and
// "..." where the text goes on. Line breaks are dropped.
func (p *parser) snippet(t token) string {
	idx := -1
	for i, tk := range p.toks {
		if tk.pos == t.pos && tk.kind == t.kind {
			idx = i
			break
		}
	}
	if idx < 0 || t.kind == tEOF {
		return ""
	}
	p.fill(idx + 1)
	from := p.toks[max(0, idx-5)]
	to := p.toks[min(len(p.toks)-1, idx+1)]
	if to.kind == tEOF {
		to = t
	}
	var b strings.Builder
	b.WriteString(" (")
	if from.pos > 0 {
		b.WriteString("...")
	}
	b.WriteString(p.src[from.pos:t.pos])
	b.WriteString("[" + p.src[t.pos:t.end] + "]")
	b.WriteString(p.src[t.end:to.end])
	if strings.TrimSpace(p.src[to.end:]) != "" {
		b.WriteString("...")
	}
	b.WriteString(")")
	return strings.NewReplacer("\r\n", "", "\n", "", "\r", "").Replace(b.String())
}

// enter and leave bound the recursion depth.
func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.failf(p.tok(), "statement nested too deeply (more than %d levels)", maxDepth)
	}
}

func (p *parser) leave() { p.depth-- }

// Keyword and punctuation tests. Keywords are identifier tokens compared
// without regard to case.

func (p *parser) isKw(t token, kw string) bool {
	return t.kind == tIdent && t.word == kw
}

func (p *parser) isPunct(t token, s string) bool {
	return t.kind == tPunct && t.text == s
}

func (p *parser) acceptKw(kw string) bool {
	if p.isKw(p.tok(), kw) {
		p.next()
		return true
	}
	return false
}

func (p *parser) acceptPunct(s string) bool {
	if p.isPunct(p.tok(), s) {
		p.next()
		return true
	}
	return false
}

// tokenName is the ANTLR name of a keyword token, as used in
// "expecting" messages.
func tokenName(kw string) string {
	switch kw {
	case "table":
		return "K_COLUMNFAMILY"
	case "schema":
		return "K_KEYSPACE"
	}
	return "K_" + strings.ToUpper(kw)
}

func (p *parser) expectKw(kw string) {
	if !p.acceptKw(kw) {
		p.failf(p.tok(), "mismatched input %s expecting %s", p.quote(p.tok()), tokenName(kw))
	}
}

func (p *parser) expectPunct(s string) {
	if !p.acceptPunct(s) {
		p.failf(p.tok(), "mismatched input %s expecting '%s'", p.quote(p.tok()), s)
	}
}

// isIdent reports whether t can be an identifier.
func (p *parser) isIdent(t token) bool {
	switch t.kind {
	case tIdent:
		return !ast.Reserved(t.word)
	case tQuoted:
		return t.text != ""
	}
	return false
}

// ident parses an identifier: a non-reserved word folded to lower case,
// or a quoted name as written.
func (p *parser) ident() string { return p.name("") }

// name parses an identifier that names a schema object of the given kind
// (keyspace, table, ...), which tells a marker in its place apart.
func (p *parser) name(kind string) string {
	t := p.tok()
	if !p.isIdent(t) {
		// Cassandra's rules for keyspace, table, index and role names
		// take a '?' only to refuse it from an action; a ':name' marker
		// matches no alternative.
		if kind == "view" {
			kind = "table" // a view's name is a columnFamilyName
		}
		switch kind {
		case "keyspace", "table", "index", "role":
			if p.isPunct(t, "?") {
				p.actionf(t, "Bind variables cannot be used for %s names", kind)
			}
		}
		p.noViable(t)
	}
	p.next()
	if t.kind == tQuoted {
		return t.text
	}
	return t.word
}

// identList parses ident (, ident)* .
func (p *parser) identList() []string {
	list := []string{p.ident()}
	for p.acceptPunct(",") {
		list = append(list, p.ident())
	}
	return list
}

// qualifiedName parses [keyspace.]name, where kind names what name is.
func (p *parser) qualifiedName(kind string) ast.TableName {
	if p.isPunct(p.peek(1), ".") {
		ksKind := "keyspace"
		if kind == "type" {
			ksKind = "" // userTypeName's keyspace is a plain noncol_ident
		}
		ks := p.name(ksKind)
		p.next()
		return ast.TableName{Keyspace: ks, Name: p.typeName(kind)}
	}
	return ast.TableName{Name: p.typeName(kind)}
}

// typeName is name(kind), refusing a reserved word for a user type.
func (p *parser) typeName(kind string) string {
	from := p.i
	n := p.name(kind)
	if kind == "type" {
		p.typeActions(from, p.i)
	}
	return n
}

// ifNotExists parses an optional IF NOT EXISTS.
func (p *parser) ifNotExists() bool {
	if p.isKw(p.tok(), "if") {
		p.next()
		p.expectKw("not")
		p.expectKw("exists")
		return true
	}
	return false
}

// ifExists parses an optional IF EXISTS.
func (p *parser) ifExists() bool {
	if p.isKw(p.tok(), "if") {
		p.next()
		p.expectKw("exists")
		return true
	}
	return false
}

// statement parses one statement, dispatching on its first keywords.
func (p *parser) statement() ast.Statement {
	p.binds = nil
	t := p.tok()
	if t.kind != tIdent {
		p.noViable(t)
	}
	switch t.word {
	case "select":
		return p.selectStmt()
	case "insert":
		return p.insert()
	case "update":
		return p.update()
	case "delete":
		return p.deleteStmt()
	case "begin":
		return p.batch()
	case "use":
		p.next()
		return &ast.Use{Keyspace: p.name("keyspace")}
	case "truncate":
		p.next()
		if !p.acceptKw("table") {
			p.acceptKw("columnfamily")
		}
		return &ast.Truncate{Table: p.qualifiedName("table")}
	case "create":
		return p.create()
	case "alter":
		return p.alter()
	case "drop":
		return p.drop()
	case "grant":
		return p.grant()
	case "revoke":
		return p.revoke()
	case "list":
		return p.list()
	case "describe", "desc":
		return p.describe()
	}
	p.noViable(t)
	return nil
}
