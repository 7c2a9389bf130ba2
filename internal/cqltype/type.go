// Package cqltype describes CQL types and orders their values.
//
// Values are handled in their native protocol v4 serialized form, the bytes
// drivers send and the bytes Sediment stores:
//
//	type                  serialized form
//	--------------------  --------------------------------------------------
//	ascii, text, blob     the bytes (ascii: 7-bit only; text: UTF-8)
//	boolean               1 byte, 0 is false, anything else true
//	tinyint..bigint       1, 2, 4, 8 bytes big-endian two's complement
//	counter, timestamp    8 bytes big-endian two's complement (timestamp: ms)
//	varint                big-endian two's complement, any length
//	decimal               4-byte big-endian scale, then varint unscaled value
//	float, double         IEEE 754 binary32 / binary64, big-endian
//	date                  uint32 days, 2^31 is 1970-01-01
//	time                  int64 nanoseconds since midnight
//	uuid, timeuuid        16 bytes (timeuuid: version 1 only)
//	inet                  4 (IPv4) or 16 (IPv6) bytes
//	duration              three signed vints: months, days, nanoseconds
//	list, set             int32 count, then per element int32 length + bytes
//	map                   int32 count, then per entry key and value as above
//	tuple, UDT            per component int32 length + bytes, length < 0 is
//	                      null; trailing components may be missing
//
// The empty value (zero bytes) is valid for every type except smallint,
// tinyint, date, time, duration and the collections, and sorts before every
// other value, as in Cassandra. For a tuple it differs from a tuple of
// nulls, which sorts after it.
//
// Compare orders two values exactly as Cassandra's AbstractType.compare does
// for the type, Validate rejects malformed values with Cassandra-like
// messages, and Normalize sorts and deduplicates sets and maps as Cassandra
// does before it stores them.
package cqltype

import (
	"strings"
)

// Kind is the kind of a CQL type.
type Kind uint8

// The CQL type kinds. varchar is an alias of Text.
const (
	Invalid Kind = iota
	Ascii
	Bigint
	Blob
	Boolean
	Counter
	Date
	Decimal
	Double
	Duration
	Float
	Inet
	Int
	Smallint
	Text
	Time
	Timestamp
	Timeuuid
	Tinyint
	UUID
	Varint
	List
	Set
	Map
	Tuple
	UDT
)

var nativeNames = [...]string{
	Ascii:     "ascii",
	Bigint:    "bigint",
	Blob:      "blob",
	Boolean:   "boolean",
	Counter:   "counter",
	Date:      "date",
	Decimal:   "decimal",
	Double:    "double",
	Duration:  "duration",
	Float:     "float",
	Inet:      "inet",
	Int:       "int",
	Smallint:  "smallint",
	Text:      "text",
	Time:      "time",
	Timestamp: "timestamp",
	Timeuuid:  "timeuuid",
	Tinyint:   "tinyint",
	UUID:      "uuid",
	Varint:    "varint",
	List:      "list",
	Set:       "set",
	Map:       "map",
	Tuple:     "tuple",
	UDT:       "udt",
}

// String returns the CQL name of the kind.
func (k Kind) String() string {
	if int(k) < len(nativeNames) && nativeNames[k] != "" {
		return nativeNames[k]
	}
	return "invalid"
}

// Native reports whether the kind is a native (non-parameterized) type.
func (k Kind) Native() bool { return k >= Ascii && k <= Varint }

// Type describes a CQL type. Types are immutable once built: share them
// freely, never modify one that may be in use.
type Type struct {
	Kind Kind
	// Frozen is set on collections and UDTs stored as one value rather than
	// one cell per element. Tuples are always frozen, and so is everything
	// nested inside a frozen type or a collection.
	Frozen bool
	// Elems holds the element type of a list or set, the key and value
	// types of a map, the component types of a tuple and the field types of
	// a UDT.
	Elems []*Type
	// Keyspace, Name and Fields describe a user-defined type.
	Keyspace string
	Name     string
	Fields   []string
}

// Native types, shared.
var (
	AsciiType     = &Type{Kind: Ascii}
	BigintType    = &Type{Kind: Bigint}
	BlobType      = &Type{Kind: Blob}
	BooleanType   = &Type{Kind: Boolean}
	CounterType   = &Type{Kind: Counter}
	DateType      = &Type{Kind: Date}
	DecimalType   = &Type{Kind: Decimal}
	DoubleType    = &Type{Kind: Double}
	DurationType  = &Type{Kind: Duration}
	FloatType     = &Type{Kind: Float}
	InetType      = &Type{Kind: Inet}
	IntType       = &Type{Kind: Int}
	SmallintType  = &Type{Kind: Smallint}
	TextType      = &Type{Kind: Text}
	TimeType      = &Type{Kind: Time}
	TimestampType = &Type{Kind: Timestamp}
	TimeuuidType  = &Type{Kind: Timeuuid}
	TinyintType   = &Type{Kind: Tinyint}
	UUIDType      = &Type{Kind: UUID}
	VarintType    = &Type{Kind: Varint}
)

var natives = map[string]*Type{
	"ascii":     AsciiType,
	"bigint":    BigintType,
	"blob":      BlobType,
	"boolean":   BooleanType,
	"counter":   CounterType,
	"date":      DateType,
	"decimal":   DecimalType,
	"double":    DoubleType,
	"duration":  DurationType,
	"float":     FloatType,
	"inet":      InetType,
	"int":       IntType,
	"smallint":  SmallintType,
	"text":      TextType,
	"varchar":   TextType,
	"time":      TimeType,
	"timestamp": TimestampType,
	"timeuuid":  TimeuuidType,
	"tinyint":   TinyintType,
	"uuid":      UUIDType,
	"varint":    VarintType,
}

// ListOf returns list<elem>, frozen or not. Nested types are frozen.
func ListOf(elem *Type, frozen bool) *Type {
	return &Type{Kind: List, Frozen: frozen, Elems: []*Type{Freeze(elem)}}
}

// SetOf returns set<elem>, frozen or not. Nested types are frozen.
func SetOf(elem *Type, frozen bool) *Type {
	return &Type{Kind: Set, Frozen: frozen, Elems: []*Type{Freeze(elem)}}
}

// MapOf returns map<key, value>, frozen or not. Nested types are frozen.
func MapOf(key, value *Type, frozen bool) *Type {
	return &Type{Kind: Map, Frozen: frozen, Elems: []*Type{Freeze(key), Freeze(value)}}
}

// TupleOf returns tuple<elems...>, which is always frozen.
func TupleOf(elems ...*Type) *Type {
	t := &Type{Kind: Tuple, Frozen: true, Elems: make([]*Type, len(elems))}
	for i, e := range elems {
		t.Elems[i] = Freeze(e)
	}
	return t
}

// UDTOf returns a non-frozen user-defined type. Field types that are
// collections or UDTs are frozen, as Cassandra requires of the fields of a
// non-frozen UDT.
func UDTOf(keyspace, name string, fields []string, types []*Type) *Type {
	t := &Type{Kind: UDT, Keyspace: keyspace, Name: name,
		Fields: append([]string(nil), fields...), Elems: make([]*Type, len(types))}
	for i, e := range types {
		t.Elems[i] = Freeze(e)
	}
	return t
}

// Freeze returns t frozen, together with everything nested in it. Native
// types are returned as they are.
func Freeze(t *Type) *Type {
	if t == nil || deepFrozen(t) {
		return t
	}
	f := *t
	f.Frozen = true
	f.Elems = make([]*Type, len(t.Elems))
	for i, e := range t.Elems {
		f.Elems[i] = Freeze(e)
	}
	return &f
}

func deepFrozen(t *Type) bool {
	if t.Kind.Native() {
		return true
	}
	if !t.Frozen {
		return false
	}
	for _, e := range t.Elems {
		if !deepFrozen(e) {
			return false
		}
	}
	return true
}

// MultiCell reports whether values of t are stored one cell per element: a
// non-frozen collection or UDT.
func (t *Type) MultiCell() bool {
	switch t.Kind {
	case List, Set, Map, UDT:
		return !t.Frozen
	}
	return false
}

// IsCollection reports whether t is a list, set or map.
func (t *Type) IsCollection() bool {
	return t.Kind == List || t.Kind == Set || t.Kind == Map
}

// Equal reports whether t and u are the same type.
func (t *Type) Equal(u *Type) bool {
	if t == u {
		return true
	}
	if t == nil || u == nil || t.Kind != u.Kind || t.Frozen != u.Frozen ||
		t.Keyspace != u.Keyspace || t.Name != u.Name ||
		len(t.Elems) != len(u.Elems) || len(t.Fields) != len(u.Fields) {
		return false
	}
	for i := range t.Elems {
		if !t.Elems[i].Equal(u.Elems[i]) {
			return false
		}
	}
	for i := range t.Fields {
		if t.Fields[i] != u.Fields[i] {
			return false
		}
	}
	return true
}

// String renders t in Cassandra's canonical form, as in system_schema:
// every frozen collection and UDT is written frozen<...> (also when nested in
// another frozen type), tuples always are, varchar is text, and a UDT is
// written by its (quoted if needed) name without keyspace.
func (t *Type) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

func (t *Type) write(b *strings.Builder) {
	if t == nil {
		b.WriteString("<nil>")
		return
	}
	if t.Kind.Native() {
		b.WriteString(nativeNames[t.Kind])
		return
	}
	if t.Frozen {
		b.WriteString("frozen<")
	}
	switch t.Kind {
	case UDT:
		b.WriteString(QuoteIdent(t.Name))
	default:
		b.WriteString(nativeNames[t.Kind])
		b.WriteByte('<')
		for i, e := range t.Elems {
			if i > 0 {
				b.WriteString(", ")
			}
			e.write(b)
		}
		b.WriteByte('>')
	}
	if t.Frozen {
		b.WriteByte('>')
	}
}

// QuoteIdent quotes a CQL identifier unless it is a plain lower-case one,
// as Cassandra's ColumnIdentifier.maybeQuote does.
func QuoteIdent(s string) string {
	if plainIdent(s) && !reserved[s] {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func plainIdent(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// reserved holds CQL's reserved keywords, which must be quoted to be used as
// identifiers.
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`add allow alter and apply asc authorize batch begin by
		columnfamily create default delete desc describe drop entries execute from full
		grant if in index infinity insert into is keyspace limit mbean mbeans modify nan
		norecursive not null of on or order primary rename replace revoke schema select set
		table to token truncate unlogged unset update use using view where with`) {
		reserved[w] = true
	}
}
