package exec

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// keyColumn is a partition key column as token(...) relations see it.
type keyColumn struct {
	name string
	typ  *cqltype.Type
}

// tokenBounds are the token(pk) relations of a SELECT, of a table or of a
// system table: the bounds of the partitions' tokens, nil when open.
type tokenBounds struct{ lower, upper *tokenBound }

// tokenBound is one side of a token range: token(pk) op value.
type tokenBound struct {
	value ast.Term
	// key, when set, holds the partition key values of token(...) on the
	// right side: the bound is their token.
	key       []ast.Term
	inclusive bool
}

func (b *tokenBounds) restricted() bool { return b.lower != nil || b.upper != nil }

// add takes the relation token(k...) op value over a table whose partition
// key is key, with Cassandra's rules and messages: the whole partition key
// in order, compared with a bigint or with token(values). recv types
// the relation's bind markers.
func (b *tokenBounds) add(rel *ast.Relation, key []keyColumn, recv func(term ast.Term, name string, typ *cqltype.Type)) error {
	if len(rel.Columns) != len(key) {
		return invalidf("The token() function must be applied to all partition key components or none of them")
	}
	for i, name := range rel.Columns {
		if key[i].name != name {
			return invalidf("The token function arguments must be in the partition key order: %s", tokenText(key))
		}
	}
	bound := &tokenBound{value: rel.Value}
	if c, ok := rel.Value.(*ast.Call); ok && c.Name == "token" && (c.Keyspace == "" || c.Keyspace == "system") {
		// token(k) > token('x'): the token of the key the values make.
		if len(c.Args) != len(key) {
			return invalidf("Invalid number of arguments in call to function token: %d required but %d provided", len(key), len(c.Args))
		}
		bound.key = c.Args
		for i, a := range c.Args {
			recv(a, key[i].name, key[i].typ)
		}
	} else {
		recv(rel.Value, "partition key token", cqltype.BigintType)
	}
	switch rel.Op {
	case ast.OpGt, ast.OpGte:
		if b.lower != nil {
			return invalidf("More than one restriction was found for the start bound on %s", tokenText(key))
		}
		bound.inclusive = rel.Op == ast.OpGte
		b.lower = bound
	case ast.OpLt, ast.OpLte:
		if b.upper != nil {
			return invalidf("More than one restriction was found for the end bound on %s", tokenText(key))
		}
		bound.inclusive = rel.Op == ast.OpLte
		b.upper = bound
	case ast.OpEq:
		if b.restricted() {
			return invalidf("Columns %s cannot be restricted by both an equality and an inequality relation", tokenText(key))
		}
		bound.inclusive = true
		b.lower, b.upper = bound, bound
	default:
		return invalidf("%s cannot be used with the token function", rel.Op)
	}
	return nil
}

// tokenText is token(k...) of a partition key, for messages.
func tokenText(key []keyColumn) string {
	names := make([]string, len(key))
	for i, c := range key {
		names[i] = c.name
	}
	return "token(" + strings.Join(names, ", ") + ")"
}

// eval evaluates the bounds into an inclusive range of tokens; first > last
// when it is empty.
func (b *tokenBounds) eval(x *execCtx, key []keyColumn) (first, last int64, err error) {
	first, last = math.MinInt64, math.MaxInt64
	if b.lower != nil {
		if first, err = b.lower.eval(x, key); err != nil {
			return 0, 0, err
		}
		if !b.lower.inclusive {
			if first == math.MaxInt64 {
				return 1, 0, nil
			}
			first++
		}
	}
	if b.upper != nil {
		if last, err = b.upper.eval(x, key); err != nil {
			return 0, 0, err
		}
		if !b.upper.inclusive {
			if last == math.MinInt64 {
				return 1, 0, nil
			}
			last--
		}
	}
	return first, last, nil
}

// eval evaluates the bound: a bigint, or the token of the key that
// token(values) makes.
func (b *tokenBound) eval(x *execCtx, key []keyColumn) (int64, error) {
	if b.key == nil {
		v, unset, err := x.eval(cqltype.BigintType, b.value, "partition key token")
		if err != nil {
			return 0, err
		}
		if unset || len(v) != 8 {
			return 0, invalidf("Invalid null or unset token value")
		}
		return int64(binary.BigEndian.Uint64(v)), nil
	}
	vals := make([][]byte, len(b.key))
	for i, term := range b.key {
		v, unset, err := x.eval(key[i].typ, term, key[i].name)
		if err != nil {
			return 0, err
		}
		if unset || v == nil {
			return 0, invalidf("Invalid null or unset value for partition key part %s", key[i].name)
		}
		vals[i] = v
	}
	_, tok, err := partitionKeyOf(vals)
	return tok, err
}
