// Package ast is the syntax tree of CQL statements, as the parser
// (package cql/parse) builds it and the executor reads it. Nodes hold what
// the text said, unresolved: names are not checked against the schema and
// terms are not typed; that is the executor's work, once it knows the
// columns a term is assigned to or compared with.
package ast

// A Term is a value in a statement: a literal, a bind marker, a collection,
// tuple or user-type literal, a function call or a type hint.
type Term interface{ term() }

// LitKind is the lexical kind of a Literal.
type LitKind uint8

// Literal kinds, as the lexer tells them apart.
const (
	LitString   LitKind = iota // 'text'; Text holds the unescaped value
	LitInteger                 // -?[0-9]+
	LitFloat                   // -?[0-9]+(.[0-9]*)?([eE][+-]?[0-9]+)?, NaN, Infinity, -Infinity
	LitBoolean                 // true or false (Text is lower case)
	LitUUID                    // 8-4-4-4-12 hex digits
	LitBlob                    // 0x followed by hex digits (Text keeps the 0x)
	LitDuration                // 1h30m, P1DT2H, P0001-02-03T04:05:06, ...
	LitNull                    // null
)

// Literal is a constant as written. Its meaning depends on the type it is
// assigned to: '2024-01-01' is text, a date or a timestamp.
type Literal struct {
	Kind LitKind
	Text string
	Pos  int // byte offset in the statement
}

// Bind is a bind marker: ? (Name empty) or :name. Index is its position
// among the statement's markers, from 0, in order of appearance.
type Bind struct {
	Index int
	Name  string
	Pos   int
}

// List is [t, ...].
type List struct{ Elems []Term }

// Set is {t, ...}. An empty {} is a Map with no entries: its type comes
// from the column it is assigned to.
type Set struct{ Elems []Term }

// Map is {k: v, ...}. It is also how a user-type literal {field: v} is
// written: such keys are Ident terms, which the executor reads as field
// names when the target type is a user type.
type Map struct{ Keys, Values []Term }

// Tuple is (t, ...) with at least two elements, or one in a tuple context
// such as IN or a multi-column relation.
type Tuple struct{ Elems []Term }

// Ident is a bare identifier in term position: a user-type field name
// inside a Map, or a column name where the grammar allows one (as in
// SET c = c + 1). Name is already case-folded unless it was quoted.
type Ident struct{ Name string }

// Call is a function call such as now(), toTimestamp(x) or
// system.blobAsText(x). Name is lower case unless quoted; Keyspace is
// empty when not given.
type Call struct {
	Keyspace, Name string
	Args           []Term
}

// Hint is a type hint: (type) term, as in (int)?.
type Hint struct {
	Type string // the type as written, parsed by cqltype.Parse
	Term Term
}

func (*Literal) term() {}
func (*Bind) term()    {}
func (*List) term()    {}
func (*Set) term()     {}
func (*Map) term()     {}
func (*Tuple) term()   {}
func (*Ident) term()   {}
func (*Call) term()    {}
func (*Hint) term()    {}
