package values

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/sedimentdb/sediment/cql/ast"
	"github.com/sedimentdb/sediment/cqltype"
)

// Resolver evaluates a term Encode cannot evaluate alone: a bind marker, a
// function call, a type hint or an identifier, given the type the value
// must have. It returns nil for null.
type Resolver func(t *cqltype.Type, term ast.Term) ([]byte, error)

// Encode returns the serialized value of term for type t, or nil for null.
//
// Literals, collection, tuple and user-type literals are evaluated here;
// every other term, at any depth, is handed to resolve with the type it
// must have. A value resolve returns for a whole term is returned as it is
// (the executor validates bound values itself); values it returns for
// elements are validated, since they become part of a larger value. Sets
// and maps are sorted and deduplicated as Cassandra stores them.
//
// A term that does not fit t yields an *Error (see the package comment);
// errors from resolve are returned unchanged.
func Encode(t *cqltype.Type, term ast.Term, resolve Resolver) ([]byte, error) {
	switch term.(type) {
	case *ast.List, *ast.Set, *ast.Map, *ast.Tuple:
		v, err := encode(t, term, resolve)
		if err != nil || v == nil {
			return v, err
		}
		return cqltype.Normalize(t, v)
	}
	return encode(t, term, resolve)
}

func encode(t *cqltype.Type, term ast.Term, resolve Resolver) ([]byte, error) {
	switch x := term.(type) {
	case *ast.Literal:
		return encodeLiteral(t, x)
	case *ast.List:
		if t.Kind != cqltype.List {
			return nil, literalError("list", t)
		}
		return encodeElems(nil, t.Elems[0], x.Elems, resolve)
	case *ast.Set:
		switch {
		case t.Kind == cqltype.Set:
			return encodeElems(nil, t.Elems[0], x.Elems, resolve)
		case t.Kind == cqltype.Map && len(x.Elems) == 0:
			return []byte{0, 0, 0, 0}, nil
		}
		return nil, literalError("set", t)
	case *ast.Map:
		switch {
		case t.Kind == cqltype.Map:
			return encodeMap(t, x, resolve)
		case t.Kind == cqltype.Set && len(x.Keys) == 0:
			return []byte{0, 0, 0, 0}, nil
		case t.Kind == cqltype.UDT:
			return encodeUDT(t, x, resolve)
		}
		return nil, literalError("map", t)
	case *ast.Tuple:
		return encodeTuple(t, x, resolve)
	case nil:
		return nil, errorf("Missing value")
	}
	if resolve == nil {
		return nil, errorf(fmt.Sprintf("Cannot evaluate %T here", term))
	}
	return resolve(t, term)
}

// literalError is Cassandra's message for a collection, tuple or user-type
// literal assigned to a type of another shape.
func literalError(what string, t *cqltype.Type) error {
	return receiverError("Invalid "+what+" literal for ", " of type "+t.String(), false)
}

// element encodes a term nested in a larger value: null is refused where
// Cassandra refuses it, and values from resolve are validated.
func element(t *cqltype.Type, term ast.Term, resolve Resolver, nullOK bool) ([]byte, error) {
	v, err := encode(t, term, resolve)
	if err != nil {
		return nil, err
	}
	if v == nil {
		if !nullOK {
			return nil, errorf("null is not supported inside collections")
		}
		return nil, nil
	}
	switch term.(type) {
	case *ast.Literal, *ast.List, *ast.Set, *ast.Map, *ast.Tuple:
	default:
		if err := cqltype.Validate(t, v); err != nil {
			var me *cqltype.MarshalError
			if errors.As(err, &me) {
				return nil, errorf(me.Msg)
			}
			return nil, err
		}
	}
	return v, nil
}

func appendElem(dst, v []byte) []byte {
	if v == nil {
		return binary.BigEndian.AppendUint32(dst, 0xffffffff)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

func encodeElems(dst []byte, et *cqltype.Type, elems []ast.Term, resolve Resolver) ([]byte, error) {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(elems)))
	for _, e := range elems {
		v, err := element(et, e, resolve, false)
		if err != nil {
			return nil, within(err, step{kind: stepValue})
		}
		dst = appendElem(dst, v)
	}
	return dst, nil
}

func encodeMap(t *cqltype.Type, m *ast.Map, resolve Resolver) ([]byte, error) {
	if len(m.Keys) != len(m.Values) {
		return nil, literalError("map", t)
	}
	dst := binary.BigEndian.AppendUint32(nil, uint32(len(m.Keys)))
	for i := range m.Keys {
		k, err := element(t.Elems[0], m.Keys[i], resolve, false)
		if err != nil {
			return nil, within(err, step{kind: stepKey})
		}
		v, err := element(t.Elems[1], m.Values[i], resolve, false)
		if err != nil {
			return nil, within(err, step{kind: stepValue})
		}
		dst = appendElem(appendElem(dst, k), v)
	}
	return dst, nil
}

func encodeTuple(t *cqltype.Type, x *ast.Tuple, resolve Resolver) ([]byte, error) {
	if t.Kind != cqltype.Tuple {
		return nil, receiverError("Invalid tuple type literal for ", " of type "+t.String(), false)
	}
	if len(x.Elems) > len(t.Elems) {
		return nil, receiverError("Invalid tuple literal for ",
			fmt.Sprintf(": too many elements. Type %s expects %d but got %d", t, len(t.Elems), len(x.Elems)), false)
	}
	var dst []byte
	for i, et := range t.Elems {
		var v []byte
		if i < len(x.Elems) {
			var err error
			if v, err = element(et, x.Elems[i], resolve, true); err != nil {
				return nil, within(err, step{kind: stepComponent, index: i})
			}
		}
		dst = appendElem(dst, v)
	}
	return dst, nil
}

func encodeUDT(t *cqltype.Type, m *ast.Map, resolve Resolver) ([]byte, error) {
	vals := make([][]byte, len(t.Fields))
	seen := make([]bool, len(t.Fields))
	for i, k := range m.Keys {
		id, ok := k.(*ast.Ident)
		if !ok || i >= len(m.Values) {
			return nil, literalError("user type", t)
		}
		f := fieldIndex(t, id.Name)
		if f < 0 {
			return nil, errorf(fmt.Sprintf("Unknown field '%s' in value of user defined type %s", id.Name, t.Name))
		}
		if seen[f] {
			return nil, errorf(fmt.Sprintf("Duplicate field '%s' in value of user defined type %s", id.Name, t.Name))
		}
		seen[f] = true
		v, err := element(t.Elems[f], m.Values[i], resolve, true)
		if err != nil {
			return nil, within(err, step{kind: stepField, field: cqltype.QuoteIdent(id.Name)})
		}
		vals[f] = v
	}
	var dst []byte
	for _, v := range vals {
		dst = appendElem(dst, v)
	}
	return dst, nil
}

func fieldIndex(t *cqltype.Type, name string) int {
	for i, f := range t.Fields {
		if f == name {
			return i
		}
	}
	return -1
}

// litKindNames are the names Cassandra gives literal kinds in messages.
var litKindNames = [...]string{
	ast.LitString:   "STRING",
	ast.LitInteger:  "INTEGER",
	ast.LitFloat:    "FLOAT",
	ast.LitBoolean:  "BOOLEAN",
	ast.LitUUID:     "UUID",
	ast.LitBlob:     "HEX",
	ast.LitDuration: "DURATION",
	ast.LitNull:     "NULL",
}

// literalFits reports whether a literal of kind k may be assigned to a
// value of type t (Cassandra's Constants.Literal.testAssignment).
func literalFits(k ast.LitKind, t *cqltype.Type) bool {
	switch k {
	case ast.LitNull:
		return t.Kind != cqltype.Counter
	case ast.LitString:
		switch t.Kind {
		case cqltype.Ascii, cqltype.Text, cqltype.Inet, cqltype.Date, cqltype.Time, cqltype.Timestamp:
			return true
		}
	case ast.LitInteger:
		switch t.Kind {
		case cqltype.Bigint, cqltype.Counter, cqltype.Date, cqltype.Decimal, cqltype.Double, cqltype.Duration,
			cqltype.Float, cqltype.Int, cqltype.Smallint, cqltype.Time, cqltype.Timestamp, cqltype.Tinyint, cqltype.Varint:
			return true
		}
	case ast.LitFloat:
		return t.Kind == cqltype.Decimal || t.Kind == cqltype.Double || t.Kind == cqltype.Float
	case ast.LitBoolean:
		return t.Kind == cqltype.Boolean
	case ast.LitUUID:
		return t.Kind == cqltype.UUID || t.Kind == cqltype.Timeuuid
	case ast.LitBlob:
		return t.Kind == cqltype.Blob
	case ast.LitDuration:
		return t.Kind == cqltype.Duration
	}
	return false
}

// Assignable reports whether term may be assigned to type t, judging only
// by its shape: the kind of a literal, whether a collection literal is a
// list, set, map or tuple. Terms it cannot judge (bind markers, calls,
// hints, identifiers) are assignable. Function overload resolution uses it
// to tell toTimestamp('2024-01-01') (a date) from toTimestamp(<timeuuid>).
func Assignable(t *cqltype.Type, term ast.Term) bool {
	switch x := term.(type) {
	case *ast.Literal:
		return int(x.Kind) < len(litKindNames) && literalFits(x.Kind, t)
	case *ast.List:
		return t.Kind == cqltype.List
	case *ast.Set:
		return t.Kind == cqltype.Set || len(x.Elems) == 0 && t.Kind == cqltype.Map
	case *ast.Map:
		return t.Kind == cqltype.Map || t.Kind == cqltype.UDT || len(x.Keys) == 0 && t.Kind == cqltype.Set
	case *ast.Tuple:
		return t.Kind == cqltype.Tuple && len(x.Elems) <= len(t.Elems)
	}
	return true
}

func encodeLiteral(t *cqltype.Type, lit *ast.Literal) ([]byte, error) {
	if int(lit.Kind) >= len(litKindNames) {
		return nil, errorf(fmt.Sprintf("Unknown literal kind %d", lit.Kind))
	}
	if lit.Kind == ast.LitNull {
		if t.Kind == cqltype.Counter {
			return nil, errorf("Invalid null value for counter increment/decrement")
		}
		return nil, nil
	}
	if !literalFits(lit.Kind, t) {
		return nil, receiverError(fmt.Sprintf("Invalid %s constant (%s) for ", litKindNames[lit.Kind], lit.Text),
			" of type "+t.String(), true)
	}
	switch {
	case lit.Kind == ast.LitBlob:
		if len(lit.Text) < 2 || lit.Text[0] != '0' || (lit.Text[1] != 'x' && lit.Text[1] != 'X') {
			return nil, errorf(fmt.Sprintf("cannot parse '%s' as hex bytes", lit.Text))
		}
		b, err := hex.DecodeString(lit.Text[2:])
		if err != nil {
			return nil, errorf(fmt.Sprintf("cannot parse '%s' as hex bytes", lit.Text[2:]))
		}
		return b, nil
	case t.Kind == cqltype.Counter:
		return Parse(cqltype.BigintType, lit.Text)
	case lit.Kind != ast.LitString && lit.Text == "":
		// Only a string literal may stand for the empty value.
		return nil, errorf(fmt.Sprintf("Invalid empty %s constant", litKindNames[lit.Kind]))
	}
	return Parse(t, lit.Text)
}
