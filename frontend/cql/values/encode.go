package values

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
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
		return encodeElems(nil, "list", t.Elems[0], x.Elems, resolve)
	case *ast.Set:
		switch {
		case t.Kind == cqltype.Set:
			return encodeElems(nil, "set", t.Elems[0], x.Elems, resolve)
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

// notOfType is Cassandra's message for an element of a collection,
// tuple or user-type literal that cannot be assigned to its type, which the
// whole literal's check reports before any element is evaluated.
func notOfType(what, part string, t *cqltype.Type) error {
	return receiverError("Invalid "+what+" literal for ", ": "+part+" is not of type "+t.String(), false)
}

func encodeElems(dst []byte, what string, et *cqltype.Type, elems []ast.Term, resolve Resolver) ([]byte, error) {
	for _, e := range elems {
		if !Assignable(et, e) {
			return nil, notOfType(what, "value "+TermText(e), et)
		}
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(elems)))
	for _, e := range elems {
		v, err := element(et, e, resolve, false)
		if err != nil {
			return nil, err
		}
		dst = appendElem(dst, v)
	}
	return dst, nil
}

func encodeMap(t *cqltype.Type, m *ast.Map, resolve Resolver) ([]byte, error) {
	if len(m.Keys) != len(m.Values) {
		return nil, literalError("map", t)
	}
	for i := range m.Keys {
		if !Assignable(t.Elems[0], m.Keys[i]) {
			return nil, notOfType("map", "key "+TermText(m.Keys[i]), t.Elems[0])
		}
		if !Assignable(t.Elems[1], m.Values[i]) {
			return nil, notOfType("map", "value "+TermText(m.Values[i]), t.Elems[1])
		}
	}
	dst := binary.BigEndian.AppendUint32(nil, uint32(len(m.Keys)))
	for i := range m.Keys {
		k, err := element(t.Elems[0], m.Keys[i], resolve, false)
		if err != nil {
			return nil, err
		}
		v, err := element(t.Elems[1], m.Values[i], resolve, false)
		if err != nil {
			return nil, err
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
	for i, e := range x.Elems {
		if !Assignable(t.Elems[i], e) {
			return nil, notOfType("tuple", fmt.Sprintf("component %d", i), t.Elems[i])
		}
	}
	var dst []byte
	for i, et := range t.Elems {
		var v []byte
		if i < len(x.Elems) {
			var err error
			if v, err = element(et, x.Elems[i], resolve, true); err != nil {
				return nil, err
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
		if !Assignable(t.Elems[f], m.Values[i]) {
			return nil, notOfType("user type", "field "+cqltype.QuoteIdent(id.Name), t.Elems[f])
		}
		v, err := element(t.Elems[f], m.Values[i], resolve, true)
		if err != nil {
			return nil, err
		}
		vals[f] = v
	}
	return udtValue(vals), nil
}

// udtValue serializes a user type's value from its fields' values in field
// order (nil for a null or missing field).
func udtValue(fields [][]byte) []byte {
	var dst []byte
	for _, v := range fields {
		dst = appendElem(dst, v)
	}
	return dst
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
// by its shape, as Cassandra's testAssignment does: the kind of a literal,
// whether a collection literal is a list, set, map, tuple or user-type
// literal, and recursively its elements. Terms it cannot judge (bind
// markers, calls, hints, identifiers) are assignable. Function overload
// resolution uses it to tell toTimestamp('2024-01-01') (a date) from
// toTimestamp(<timeuuid>).
func Assignable(t *cqltype.Type, term ast.Term) bool {
	all := func(et *cqltype.Type, terms []ast.Term) bool {
		for _, e := range terms {
			if !Assignable(et, e) {
				return false
			}
		}
		return true
	}
	switch x := term.(type) {
	case *ast.Literal:
		return int(x.Kind) < len(litKindNames) && literalFits(x.Kind, t)
	case *ast.List:
		return t.Kind == cqltype.List && all(t.Elems[0], x.Elems)
	case *ast.Set:
		return t.Kind == cqltype.Set && all(t.Elems[0], x.Elems) || len(x.Elems) == 0 && t.Kind == cqltype.Map
	case *ast.Map:
		switch t.Kind {
		case cqltype.Map:
			return len(x.Keys) == len(x.Values) && all(t.Elems[0], x.Keys) && all(t.Elems[1], x.Values)
		case cqltype.Set:
			return len(x.Keys) == 0
		case cqltype.UDT:
			for i, k := range x.Keys {
				id, ok := k.(*ast.Ident)
				if !ok || i >= len(x.Values) {
					return false
				}
				// Unknown fields are refused when the value is made.
				if f := fieldIndex(t, id.Name); f >= 0 && !Assignable(t.Elems[f], x.Values[i]) {
					return false
				}
			}
			return true
		}
		return false
	case *ast.Tuple:
		if t.Kind != cqltype.Tuple || len(x.Elems) > len(t.Elems) {
			return false
		}
		for i, e := range x.Elems {
			if !Assignable(t.Elems[i], e) {
				return false
			}
		}
		return true
	}
	return true
}

// TermText writes a term as Cassandra's Term.Raw.getText does, for
// messages: strings in single quotes, collections in their brackets.
func TermText(term ast.Term) string {
	join := func(terms []ast.Term) string {
		s := make([]string, len(terms))
		for i, t := range terms {
			s[i] = TermText(t)
		}
		return strings.Join(s, ", ")
	}
	switch x := term.(type) {
	case *ast.Literal:
		switch x.Kind {
		case ast.LitString:
			return "'" + x.Text + "'"
		case ast.LitNull:
			return "NULL"
		}
		return x.Text
	case *ast.Bind:
		if x.Name != "" {
			return ":" + x.Name
		}
		return "?"
	case *ast.List:
		return "[" + join(x.Elems) + "]"
	case *ast.Set:
		return "{" + join(x.Elems) + "}"
	case *ast.Map:
		s := make([]string, min(len(x.Keys), len(x.Values)))
		for i := range s {
			s[i] = TermText(x.Keys[i]) + ": " + TermText(x.Values[i])
		}
		return "{" + strings.Join(s, ", ") + "}"
	case *ast.Tuple:
		return "(" + join(x.Elems) + ")"
	case *ast.Ident:
		return cqltype.QuoteIdent(x.Name)
	case *ast.Call:
		name := x.Name
		if x.Keyspace != "" {
			name = x.Keyspace + "." + name
		}
		return name + "(" + join(x.Args) + ")"
	case *ast.Hint:
		return "(" + x.Type + ")" + TermText(x.Term)
	}
	return fmt.Sprintf("%T", term)
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
