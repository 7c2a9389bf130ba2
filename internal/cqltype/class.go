package cqltype

import (
	"fmt"
	"strings"
)

// Types may also be written as the Java class of Cassandra's AbstractType,
// in a string literal, as Cassandra's grammar allows wherever a type goes
// ('org.apache.cassandra.db.marshal.Int32Type' is int). The string is
// Cassandra's TypeParser syntax: a class name, its package optional, with
// parameters in parentheses:
//
//	class                                  type
//	-------------------------------------  ---------------------------
//	Int32Type, UTF8Type, ... (natives)     int, text, ...
//	ListType(E), SetType(E), MapType(K,V)  list<E>, set<E>, map<K, V>
//	TupleType(A,B,...)                     tuple<A, B, ...>
//	FrozenType(T)                          frozen<T>
//	ReversedType(T)                        T (the order is the table's)
//
// Collection elements are frozen, as TypeParser freezes them
// (ListType(ListType(Int32Type)) is list<frozen<list<int>>>). Other
// classes (LexicalUUIDType, CompositeType, user types by their hex
// names, ...) have no CQL type Sediment stores, and are refused.

const marshalPackage = "org.apache.cassandra.db.marshal."

var classNatives = map[string]*Type{
	"AsciiType":         AsciiType,
	"LongType":          BigintType,
	"BytesType":         BlobType,
	"BooleanType":       BooleanType,
	"CounterColumnType": CounterType,
	"SimpleDateType":    DateType,
	"DecimalType":       DecimalType,
	"DoubleType":        DoubleType,
	"DurationType":      DurationType,
	"FloatType":         FloatType,
	"InetAddressType":   InetType,
	"Int32Type":         IntType,
	"ShortType":         SmallintType,
	"UTF8Type":          TextType,
	"TimeType":          TimeType,
	"TimestampType":     TimestampType,
	"TimeUUIDType":      TimeuuidType,
	"ByteType":          TinyintType,
	"UUIDType":          UUIDType,
	"IntegerType":       VarintType,
}

// classType parses a type written as a class name.
func classType(s string) (*Type, error) {
	p := classParser{src: s}
	t, err := p.parse(0)
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("%w: unexpected %q after type in '%s'", ErrSyntax, p.src[p.pos:], s)
	}
	// The CQL form goes through Parse, so that a class name obeys the
	// same rules (frozen nesting, counters, durations) as the type written.
	return Parse(t.String(), nil)
}

type classParser struct {
	src string
	pos int
}

func (p *classParser) parse(depth int) (*Type, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: types nested deeper than %d in '%s'", ErrSyntax, maxDepth, p.src)
	}
	p.space()
	start := p.pos
	for p.pos < len(p.src) && (identByte(p.src[p.pos]) || p.src[p.pos] == '.' || p.src[p.pos] == '$') {
		p.pos++
	}
	class := p.src[start:p.pos]
	if class == "" {
		return nil, fmt.Errorf("%w: expected a class name in '%s'", ErrSyntax, p.src)
	}
	p.space()
	var params []*Type
	if p.pos < len(p.src) && p.src[p.pos] == '(' {
		p.pos++
		for {
			t, err := p.parse(depth + 1)
			if err != nil {
				return nil, err
			}
			params = append(params, t)
			if p.pos < len(p.src) && p.src[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos >= len(p.src) || p.src[p.pos] != ')' {
				return nil, fmt.Errorf("%w: expected ')' in '%s'", ErrSyntax, p.src)
			}
			p.pos++
			break
		}
		p.space()
	}
	short := strings.TrimPrefix(class, marshalPackage)
	if strings.Contains(short, ".") {
		return nil, fmt.Errorf("cqltype: Unable to find abstract-type class '%s'", class)
	}
	if t, ok := classNatives[short]; ok && params == nil {
		return t, nil
	}
	n := len(params)
	switch {
	case short == "ListType" && n == 1:
		return ListOf(params[0], false), nil
	case short == "SetType" && n == 1:
		return SetOf(params[0], false), nil
	case short == "MapType" && n == 2:
		return MapOf(params[0], params[1], false), nil
	case short == "TupleType" && n > 0:
		return TupleOf(params...), nil
	case short == "FrozenType" && n == 1:
		return Freeze(params[0]), nil
	case short == "ReversedType" && n == 1:
		return params[0], nil
	}
	return nil, fmt.Errorf("cqltype: the custom type '%s%s' is not supported by Sediment", marshalPackage, short)
}

func (p *classParser) space() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
}
