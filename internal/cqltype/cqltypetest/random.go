// Package cqltypetest generates random CQL types and serialized values for
// property tests. Values are drawn from small pools on purpose, so that
// random pairs are often equal, share prefixes or differ only in encoding
// (1.0 and 1.00, varints with redundant sign bytes, NaN payloads, trailing
// null tuple components): the cases where orderings go wrong.
package cqltypetest

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// KeyKinds are the native kinds allowed in primary keys.
var KeyKinds = []cqltype.Kind{
	cqltype.Ascii, cqltype.Bigint, cqltype.Blob, cqltype.Boolean, cqltype.Date,
	cqltype.Decimal, cqltype.Double, cqltype.Float, cqltype.Inet, cqltype.Int,
	cqltype.Smallint, cqltype.Text, cqltype.Time, cqltype.Timestamp,
	cqltype.Timeuuid, cqltype.Tinyint, cqltype.UUID, cqltype.Varint,
}

var nativeByKind = map[cqltype.Kind]*cqltype.Type{}

func init() {
	for _, name := range []string{"ascii", "bigint", "blob", "boolean", "counter", "date",
		"decimal", "double", "duration", "float", "inet", "int", "smallint", "text", "time",
		"timestamp", "timeuuid", "tinyint", "uuid", "varint"} {
		t := cqltype.MustParse(name)
		nativeByKind[t.Kind] = t
	}
}

// Native returns the shared native type of kind k.
func Native(k cqltype.Kind) *cqltype.Type { return nativeByKind[k] }

// KeyType returns a random type allowed in a primary key: a native type, or
// with depth > 0 possibly a tuple, frozen collection or frozen UDT of them.
func KeyType(r *rand.Rand, depth int) *cqltype.Type {
	if depth <= 0 || r.IntN(3) > 0 {
		return Native(KeyKinds[r.IntN(len(KeyKinds))])
	}
	switch r.IntN(5) {
	case 0:
		return cqltype.ListOf(KeyType(r, depth-1), true)
	case 1:
		return cqltype.SetOf(KeyType(r, depth-1), true)
	case 2:
		return cqltype.MapOf(KeyType(r, depth-1), KeyType(r, depth-1), true)
	case 3:
		elems := make([]*cqltype.Type, 1+r.IntN(3))
		for i := range elems {
			elems[i] = KeyType(r, depth-1)
		}
		return cqltype.TupleOf(elems...)
	default:
		n := 1 + r.IntN(3)
		names := []string{"a", "b", "c"}[:n]
		types := make([]*cqltype.Type, n)
		for i := range types {
			types[i] = KeyType(r, depth-1)
		}
		return cqltype.Freeze(cqltype.UDTOf("ks", "u", names, types))
	}
}

// allowsEmpty reports whether Validate accepts the empty value of kind k.
func allowsEmpty(k cqltype.Kind) bool {
	switch k {
	case cqltype.Smallint, cqltype.Tinyint, cqltype.Date, cqltype.Time, cqltype.Duration,
		cqltype.List, cqltype.Set, cqltype.Map:
		return false
	}
	return true
}

// Value returns a random valid serialized value of t.
func Value(r *rand.Rand, t *cqltype.Type) []byte {
	if allowsEmpty(t.Kind) && r.IntN(12) == 0 {
		return []byte{}
	}
	be := binary.BigEndian
	switch t.Kind {
	case cqltype.Ascii:
		return pick(r, []string{"", "a", "ab", "abc", "b", "\x00", "a\x00", "a\x00b", "\x7f", "zz"})
	case cqltype.Text:
		return pick(r, []string{"", "a", "ab", "b", "\x00", "a\x00", "é", "éa", "日本", "\U0001F600", "zz"})
	case cqltype.Blob:
		b := make([]byte, r.IntN(5))
		for i := range b {
			b[i] = pickByte(r)
		}
		return b
	case cqltype.Boolean:
		return []byte{[]byte{0, 1, 2, 0xff}[r.IntN(4)]}
	case cqltype.Tinyint:
		return []byte{pickByte(r)}
	case cqltype.Smallint:
		return be.AppendUint16(nil, uint16(smallInt(r)))
	case cqltype.Int, cqltype.Date:
		return be.AppendUint32(nil, uint32(smallInt(r)))
	case cqltype.Bigint, cqltype.Counter, cqltype.Timestamp, cqltype.Time:
		return be.AppendUint64(nil, uint64(smallInt(r)))
	case cqltype.Varint:
		return varint(r)
	case cqltype.Decimal:
		return decimal(r)
	case cqltype.Float:
		return be.AppendUint32(nil, pick32(r))
	case cqltype.Double:
		return be.AppendUint64(nil, pick64(r))
	case cqltype.UUID, cqltype.Timeuuid:
		return uuid(r, t.Kind == cqltype.Timeuuid)
	case cqltype.Inet:
		if r.IntN(2) == 0 {
			return []byte{pickByte(r), pickByte(r), pickByte(r), pickByte(r)}
		}
		b := make([]byte, 16)
		b[0], b[15] = pickByte(r), pickByte(r)
		return b
	case cqltype.Duration:
		// months, days, nanos: small non-negative zigzag vints.
		return []byte{byte(2 * r.IntN(4)), byte(2 * r.IntN(4)), byte(2 * r.IntN(4))}
	case cqltype.List, cqltype.Set:
		n := r.IntN(4)
		b := be.AppendUint32(nil, uint32(n))
		for range n {
			b = appendValue(b, Value(r, t.Elems[0]))
		}
		return b
	case cqltype.Map:
		n := r.IntN(3)
		b := be.AppendUint32(nil, uint32(n))
		for range n {
			b = appendValue(b, Value(r, t.Elems[0]))
			b = appendValue(b, Value(r, t.Elems[1]))
		}
		return b
	case cqltype.Tuple, cqltype.UDT:
		var b []byte
		n := r.IntN(len(t.Elems) + 1)
		for i := range n {
			switch r.IntN(6) {
			case 0:
				b = be.AppendUint32(b, math.MaxUint32) // null
			default:
				b = appendValue(b, Value(r, t.Elems[i]))
			}
		}
		return b
	}
	panic("cqltypetest: no generator for " + t.String())
}

func appendValue(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

func pick(r *rand.Rand, s []string) []byte { return []byte(s[r.IntN(len(s))]) }

func pickByte(r *rand.Rand) byte {
	return []byte{0, 1, 2, 0x7f, 0x80, 0x81, 0xfe, 0xff}[r.IntN(8)]
}

func smallInt(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return int64(r.IntN(7)) - 3
	case 1:
		return []int64{math.MinInt64, math.MaxInt64, math.MinInt32, math.MaxInt32, -32768, 32767, 128, -129}[r.IntN(8)]
	}
	return int64(r.Uint64())
}

func varint(r *rand.Rand) []byte {
	x := big.NewInt(int64(r.IntN(600)) - 300)
	if r.IntN(3) == 0 {
		x.Lsh(x, uint(r.IntN(80)))
	}
	b := cqltype.AppendBigInt(nil, new(big.Int).Abs(x), x.Sign() < 0)
	// Sometimes add redundant sign bytes: numerically equal, longer.
	for range r.IntN(3) {
		pad := byte(0)
		if b[0]&0x80 != 0 {
			pad = 0xff
		}
		b = append([]byte{pad}, b...)
	}
	return b
}

func decimal(r *rand.Rand) []byte {
	scale := int32(r.IntN(7)) - 3
	if r.IntN(10) == 0 {
		scale = []int32{math.MinInt32, math.MaxInt32, math.MinInt32 + 1}[r.IntN(3)]
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(scale))
	if r.IntN(10) == 0 {
		return b // empty unscaled value: zero
	}
	return append(b, varint(r)...)
}

func pick32(r *rand.Rand) uint32 {
	switch r.IntN(3) {
	case 0:
		return []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001,
			0x7f800001, 0x3f800000, 0xbf800000, 0x00000001, 0x80000001}[r.IntN(11)]
	case 1:
		return math.Float32bits(float32(r.IntN(9) - 4))
	}
	return r.Uint32()
}

func pick64(r *rand.Rand) uint64 {
	switch r.IntN(3) {
	case 0:
		return []uint64{0, 1 << 63, 0x7ff0000000000000, 0xfff0000000000000, 0x7ff8000000000000,
			0xfff8000000000001, 0x7ff0000000000001, 1, 1<<63 | 1}[r.IntN(9)]
	case 1:
		return math.Float64bits(float64(r.IntN(9) - 4))
	}
	return r.Uint64()
}

func uuid(r *rand.Rand, timeBased bool) []byte {
	b := make([]byte, 16)
	for i := range b {
		if r.IntN(2) == 0 {
			b[i] = pickByte(r)
		}
	}
	version := byte(1)
	if !timeBased {
		version = []byte{0, 1, 1, 2, 4, 7, 15}[r.IntN(7)]
	}
	b[6] = b[6]&0x0f | version<<4
	return b
}
