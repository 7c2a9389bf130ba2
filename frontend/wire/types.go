package wire

import (
	"strings"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// The [option] IDs of types.
const (
	typeCustom    = 0x0000
	typeAscii     = 0x0001
	typeBigint    = 0x0002
	typeBlob      = 0x0003
	typeBoolean   = 0x0004
	typeCounter   = 0x0005
	typeDecimal   = 0x0006
	typeDouble    = 0x0007
	typeFloat     = 0x0008
	typeInt       = 0x0009
	typeText      = 0x000A // v1 and v2 only; read as varchar
	typeTimestamp = 0x000B
	typeUUID      = 0x000C
	typeVarchar   = 0x000D
	typeVarint    = 0x000E
	typeTimeuuid  = 0x000F
	typeInet      = 0x0010
	typeDate      = 0x0011 // v4
	typeTime      = 0x0012 // v4
	typeSmallint  = 0x0013 // v4
	typeTinyint   = 0x0014 // v4
	typeDuration  = 0x0015 // v5
	typeList      = 0x0020
	typeMap       = 0x0021
	typeSet       = 0x0022
	typeUDT       = 0x0030
	typeTuple     = 0x0031
)

// nativeIDs maps native kinds to their IDs and the version that
// introduced them; older versions get them as custom types named by
// their Cassandra class, as Cassandra sends them.
var nativeIDs = map[cqltype.Kind]struct {
	id    uint16
	since Version
}{
	cqltype.Ascii: {typeAscii, 1}, cqltype.Bigint: {typeBigint, 1}, cqltype.Blob: {typeBlob, 1},
	cqltype.Boolean: {typeBoolean, 1}, cqltype.Counter: {typeCounter, 1}, cqltype.Decimal: {typeDecimal, 1},
	cqltype.Double: {typeDouble, 1}, cqltype.Float: {typeFloat, 1}, cqltype.Int: {typeInt, 1},
	cqltype.Timestamp: {typeTimestamp, 1}, cqltype.UUID: {typeUUID, 1}, cqltype.Text: {typeVarchar, 1},
	cqltype.Varint: {typeVarint, 1}, cqltype.Timeuuid: {typeTimeuuid, 1}, cqltype.Inet: {typeInet, 1},
	cqltype.Date: {typeDate, 4}, cqltype.Time: {typeTime, 4}, cqltype.Smallint: {typeSmallint, 4},
	cqltype.Tinyint: {typeTinyint, 4}, cqltype.Duration: {typeDuration, 5},
}

const marshalPackage = "org.apache.cassandra.db.marshal."

// classNames are the Cassandra classes of the native types.
var classNames = map[cqltype.Kind]string{
	cqltype.Ascii: "AsciiType", cqltype.Bigint: "LongType", cqltype.Blob: "BytesType",
	cqltype.Boolean: "BooleanType", cqltype.Counter: "CounterColumnType", cqltype.Decimal: "DecimalType",
	cqltype.Double: "DoubleType", cqltype.Float: "FloatType", cqltype.Int: "Int32Type",
	cqltype.Timestamp: "TimestampType", cqltype.UUID: "UUIDType", cqltype.Text: "UTF8Type",
	cqltype.Varint: "IntegerType", cqltype.Timeuuid: "TimeUUIDType", cqltype.Inet: "InetAddressType",
	cqltype.Date: "SimpleDateType", cqltype.Time: "TimeType", cqltype.Smallint: "ShortType",
	cqltype.Tinyint: "ByteType", cqltype.Duration: "DurationType",
}

var classKinds = func() map[string]cqltype.Kind {
	m := make(map[string]cqltype.Kind, len(classNames))
	for k, n := range classNames {
		m[n] = k
	}
	return m
}()

// ClassName returns the Cassandra class of a native kind, such as
// "org.apache.cassandra.db.marshal.DurationType".
func ClassName(k cqltype.Kind) string { return marshalPackage + classNames[k] }

// AppendType appends t as an [option] of version v.
func AppendType(dst []byte, t *cqltype.Type, v Version) ([]byte, error) {
	e := encoder{b: dst}
	e.typ(t, v)
	return e.b, e.err
}

func (e *encoder) typ(t *cqltype.Type, v Version) {
	if t == nil {
		e.failf("nil type")
		return
	}
	if n, ok := nativeIDs[t.Kind]; ok {
		if v >= n.since {
			e.short(n.id)
		} else {
			e.short(typeCustom)
			e.string(ClassName(t.Kind))
		}
		return
	}
	switch t.Kind {
	case cqltype.List, cqltype.Set:
		id := uint16(typeList)
		if t.Kind == cqltype.Set {
			id = typeSet
		}
		if len(t.Elems) != 1 {
			e.failf("%v with %d element types", t.Kind, len(t.Elems))
			return
		}
		e.short(id)
		e.typ(t.Elems[0], v)
	case cqltype.Map:
		if len(t.Elems) != 2 {
			e.failf("map with %d element types", len(t.Elems))
			return
		}
		e.short(typeMap)
		e.typ(t.Elems[0], v)
		e.typ(t.Elems[1], v)
	case cqltype.UDT:
		if len(t.Fields) != len(t.Elems) {
			e.failf("UDT %s with %d fields and %d types", t.Name, len(t.Fields), len(t.Elems))
			return
		}
		e.short(typeUDT)
		e.string(t.Keyspace)
		e.string(t.Name)
		e.shortLen(len(t.Fields), "UDT fields")
		for i, f := range t.Fields {
			e.string(f)
			e.typ(t.Elems[i], v)
		}
	case cqltype.Tuple:
		e.short(typeTuple)
		e.shortLen(len(t.Elems), "tuple components")
		for _, c := range t.Elems {
			e.typ(c, v)
		}
	default:
		e.failf("cannot encode type kind %v", t.Kind)
	}
}

// DecodeType decodes one [option] type from b, returning the rest.
func DecodeType(b []byte) (*cqltype.Type, []byte, error) {
	d := &decoder{b: b}
	t := d.typ(0)
	if d.err != nil {
		return nil, nil, d.err
	}
	return t, d.b, nil
}

// maxTypeDepth bounds the nesting of decoded types, so that a small body
// cannot make the decoder recurse without end.
const maxTypeDepth = 64

var idKinds = map[uint16]cqltype.Kind{
	typeAscii: cqltype.Ascii, typeBigint: cqltype.Bigint, typeBlob: cqltype.Blob,
	typeBoolean: cqltype.Boolean, typeCounter: cqltype.Counter, typeDecimal: cqltype.Decimal,
	typeDouble: cqltype.Double, typeFloat: cqltype.Float, typeInt: cqltype.Int,
	typeText: cqltype.Text, typeTimestamp: cqltype.Timestamp, typeUUID: cqltype.UUID,
	typeVarchar: cqltype.Text, typeVarint: cqltype.Varint, typeTimeuuid: cqltype.Timeuuid,
	typeInet: cqltype.Inet, typeDate: cqltype.Date, typeTime: cqltype.Time,
	typeSmallint: cqltype.Smallint, typeTinyint: cqltype.Tinyint, typeDuration: cqltype.Duration,
}

var kindTypes = map[cqltype.Kind]*cqltype.Type{
	cqltype.Ascii: cqltype.AsciiType, cqltype.Bigint: cqltype.BigintType, cqltype.Blob: cqltype.BlobType,
	cqltype.Boolean: cqltype.BooleanType, cqltype.Counter: cqltype.CounterType, cqltype.Date: cqltype.DateType,
	cqltype.Decimal: cqltype.DecimalType, cqltype.Double: cqltype.DoubleType, cqltype.Duration: cqltype.DurationType,
	cqltype.Float: cqltype.FloatType, cqltype.Inet: cqltype.InetType, cqltype.Int: cqltype.IntType,
	cqltype.Smallint: cqltype.SmallintType, cqltype.Text: cqltype.TextType, cqltype.Time: cqltype.TimeType,
	cqltype.Timestamp: cqltype.TimestampType, cqltype.Timeuuid: cqltype.TimeuuidType,
	cqltype.Tinyint: cqltype.TinyintType, cqltype.UUID: cqltype.UUIDType, cqltype.Varint: cqltype.VarintType,
}

func (d *decoder) typ(depth int) *cqltype.Type {
	if depth > maxTypeDepth {
		d.fail("Type nested more than %d levels deep", maxTypeDepth)
		return nil
	}
	id := d.short("a type")
	if d.err != nil {
		return nil
	}
	if k, ok := idKinds[id]; ok {
		return kindTypes[k]
	}
	switch id {
	case typeCustom:
		name := d.string("a custom type")
		k, ok := classKinds[strings.TrimPrefix(name, marshalPackage)]
		if d.err == nil && !ok {
			d.fail("Unsupported custom type %q", name)
		}
		return kindTypes[k]
	case typeList, typeSet:
		elem := d.typ(depth + 1)
		if d.err != nil {
			return nil
		}
		if id == typeList {
			return cqltype.ListOf(elem, false)
		}
		return cqltype.SetOf(elem, false)
	case typeMap:
		k := d.typ(depth + 1)
		v := d.typ(depth + 1)
		if d.err != nil {
			return nil
		}
		return cqltype.MapOf(k, v, false)
	case typeUDT:
		ks := d.string("a UDT keyspace")
		name := d.string("a UDT name")
		n := d.count(4, "UDT fields")
		fields := make([]string, 0, n)
		types := make([]*cqltype.Type, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			fields = append(fields, d.string("a UDT field"))
			types = append(types, d.typ(depth+1))
		}
		if d.err != nil {
			return nil
		}
		return cqltype.UDTOf(ks, name, fields, types)
	case typeTuple:
		n := d.count(2, "tuple components")
		types := make([]*cqltype.Type, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			types = append(types, d.typ(depth+1))
		}
		if d.err != nil {
			return nil
		}
		return cqltype.TupleOf(types...)
	}
	d.fail("Unknown type ID 0x%04X", id)
	return nil
}
