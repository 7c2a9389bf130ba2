package cqltype

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
)

// Compare orders two serialized values of type t as Cassandra's
// AbstractType.compare does: -1, 0 or +1. The empty value sorts first for
// every type. Compare never panics: a malformed value (Validate rejects it)
// still gets a deterministic, if meaningless, place in the order.
//
// Per type:
//   - ascii, text, blob, inet, date, time, duration: unsigned bytes.
//   - boolean: false (zero first byte) before true (anything else).
//   - integers, counter, timestamp, varint: numeric (a varint with redundant
//     sign bytes equals its minimal form).
//   - decimal: numeric, so 1.0 equals 1.00.
//   - float, double: Java's Float.compare/Double.compare: -0 before +0,
//     every NaN equal to every other and after +Inf.
//   - uuid: version first; version 1 by timestamp, then the low 8 bytes
//     unsigned; other versions by unsigned bytes.
//   - timeuuid: by timestamp, then the low 8 bytes as signed bytes.
//   - list, set: element-wise, then the shorter first; map: entry-wise
//     (key, then value), then the smaller first.
//   - tuple, UDT: component-wise with null before any value (even the empty
//     one); missing trailing components are null. This is the rule of
//     Cassandra 4.1 and later; 4.0 also equated trailing empty components
//     with missing ones, which is not a total order ((1, null) < (1, ”)
//     yet both equal (1)).
func Compare(t *Type, a, b []byte) int {
	if len(a) == 0 || len(b) == 0 {
		return cmp.Compare(len(a), len(b)) // only emptiness matters here
	}
	switch t.Kind {
	case Boolean:
		return cmpBool(a[0] != 0, b[0] != 0)
	case Tinyint, Smallint, Int, Bigint, Counter, Timestamp:
		if len(a) == len(b) && len(a) <= 8 {
			return cmp.Compare(beInt(a), beInt(b))
		}
		return compareVarint(a, b)
	case Varint:
		return compareVarint(a, b)
	case Decimal:
		return compareDecimal(a, b)
	case Float:
		if len(a) == 4 && len(b) == 4 {
			return cmp.Compare(uint64(FloatKey(binary.BigEndian.Uint32(a))), uint64(FloatKey(binary.BigEndian.Uint32(b))))
		}
	case Double:
		if len(a) == 8 && len(b) == 8 {
			return cmp.Compare(DoubleKey(binary.BigEndian.Uint64(a)), DoubleKey(binary.BigEndian.Uint64(b)))
		}
	case UUID:
		if len(a) == 16 && len(b) == 16 {
			return compareUUID(a, b)
		}
	case Timeuuid:
		if len(a) == 16 && len(b) == 16 {
			return compareTimeuuid(a, b)
		}
	case List, Set:
		if len(t.Elems) == 1 {
			return compareSeq(t.Elems[0], nil, a, b)
		}
	case Map:
		if len(t.Elems) == 2 {
			return compareSeq(t.Elems[0], t.Elems[1], a, b)
		}
	case Tuple, UDT:
		return compareTuple(t.Elems, a, b)
	}
	return bytes.Compare(a, b)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// beInt decodes 1 to 8 bytes of big-endian two's complement.
func beInt(b []byte) int64 {
	var v int64
	if b[0]&0x80 != 0 {
		v = -1
	}
	for _, c := range b {
		v = v<<8 | int64(c)
	}
	return v
}

// FloatKey maps float32 bits to a uint32 whose unsigned order is Java's
// Float.compare order: every NaN becomes the canonical NaN, which sorts last,
// and -0 sorts before +0.
func FloatKey(bits uint32) uint32 {
	if f := math.Float32frombits(bits); f != f {
		bits = 0x7fc00000
	}
	if bits&(1<<31) != 0 {
		return ^bits
	}
	return bits | 1<<31
}

// DoubleKey is FloatKey for float64 bits and Double.compare.
func DoubleKey(bits uint64) uint64 {
	if f := math.Float64frombits(bits); f != f {
		bits = 0x7ff8000000000000
	}
	if bits&(1<<63) != 0 {
		return ^bits
	}
	return bits | 1<<63
}

// MinimalVarint strips redundant leading sign bytes from a two's complement
// big-endian integer, so that numerically equal varints become equal bytes.
func MinimalVarint(v []byte) []byte {
	for len(v) > 1 && (v[0] == 0 && v[1]&0x80 == 0 || v[0] == 0xff && v[1]&0x80 != 0) {
		v = v[1:]
	}
	return v
}

// compareVarint compares non-empty two's complement integers numerically.
func compareVarint(a, b []byte) int {
	na, nb := a[0]&0x80 != 0, b[0]&0x80 != 0
	if na != nb {
		return cmpBool(nb, na)
	}
	a, b = MinimalVarint(a), MinimalVarint(b)
	if len(a) != len(b) {
		// Same sign: a longer positive is larger, a longer negative smaller.
		if na {
			return cmp.Compare(len(b), len(a))
		}
		return cmp.Compare(len(a), len(b))
	}
	return bytes.Compare(a, b)
}

func compareDecimal(a, b []byte) int {
	da, erra := SplitDecimal(a)
	db, errb := SplitDecimal(b)
	if erra != nil || errb != nil {
		return bytes.Compare(a, b)
	}
	return da.Compare(db)
}

// ReorderTimestamp moves the fields of a version 1 UUID's high 8 bytes so
// that, read as an integer, they order by timestamp: time_hi (with the
// version nibble), time_mid, time_low.
func ReorderTimestamp(msb uint64) uint64 {
	return msb<<48 | (msb<<16)&0xffff00000000 | msb>>32
}

// RestoreTimestamp inverts ReorderTimestamp.
func RestoreTimestamp(r uint64) uint64 {
	return r<<32 | (r>>16)&0xffff0000 | r>>48
}

func compareUUID(a, b []byte) int {
	msbA, msbB := binary.BigEndian.Uint64(a), binary.BigEndian.Uint64(b)
	va, vb := (msbA>>12)&0xf, (msbB>>12)&0xf
	if va != vb {
		return cmp.Compare(va, vb)
	}
	if va == 1 {
		if c := cmp.Compare(ReorderTimestamp(msbA), ReorderTimestamp(msbB)); c != 0 {
			return c
		}
	} else if c := cmp.Compare(msbA, msbB); c != 0 {
		return c
	}
	return cmp.Compare(binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:]))
}

func compareTimeuuid(a, b []byte) int {
	// Cassandra compares the reordered high half as a signed long and the
	// low half as eight signed bytes; flipping the sign bits makes both
	// unsigned comparisons.
	ra := ReorderTimestamp(binary.BigEndian.Uint64(a)) ^ 1<<63
	rb := ReorderTimestamp(binary.BigEndian.Uint64(b)) ^ 1<<63
	if c := cmp.Compare(ra, rb); c != 0 {
		return c
	}
	const signs = 0x8080808080808080
	return cmp.Compare(binary.BigEndian.Uint64(a[8:])^signs, binary.BigEndian.Uint64(b[8:])^signs)
}

// readValue reads an int32 length and that many bytes. A negative length is
// null. ok is false if b is too short.
func readValue(b []byte) (v, rest []byte, null, ok bool) {
	if len(b) < 4 {
		return nil, nil, false, false
	}
	n := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	if n < 0 {
		return nil, b, true, true
	}
	if int64(n) > int64(len(b)) {
		return nil, nil, false, false
	}
	return b[:n], b[n:], false, true
}

// compareValues compares two length-prefixed elements, null first.
func compareValues(t *Type, a, b []byte, nullA, nullB bool) int {
	if nullA || nullB {
		return cmpBool(!nullA, !nullB)
	}
	return Compare(t, a, b)
}

// compareSeq compares lists and sets (val == nil) and maps element-wise,
// then by count.
func compareSeq(key, val *Type, a, b []byte) int {
	if len(a) < 4 || len(b) < 4 {
		return bytes.Compare(a, b)
	}
	na, nb := int32(binary.BigEndian.Uint32(a)), int32(binary.BigEndian.Uint32(b))
	ra, rb := a[4:], b[4:]
	for i := int32(0); i < min(na, nb); i++ {
		for _, t := range [2]*Type{key, val} {
			if t == nil {
				continue
			}
			va, resta, nullA, okA := readValue(ra)
			vb, restb, nullB, okB := readValue(rb)
			if !okA || !okB {
				return bytes.Compare(ra, rb)
			}
			if c := compareValues(t, va, vb, nullA, nullB); c != 0 {
				return c
			}
			ra, rb = resta, restb
		}
	}
	return cmp.Compare(int64(na), int64(nb))
}

func compareTuple(types []*Type, a, b []byte) int {
	for i := 0; len(a) > 0 && len(b) > 0; i++ {
		va, resta, nullA, okA := readValue(a)
		vb, restb, nullB, okB := readValue(b)
		if !okA || !okB {
			return bytes.Compare(a, b)
		}
		t := BlobType
		if i < len(types) {
			t = types[i]
		}
		if c := compareValues(t, va, vb, nullA, nullB); c != 0 {
			return c
		}
		a, b = resta, restb
	}
	// Missing trailing components are null.
	if !allNull(a) {
		return 1
	}
	if !allNull(b) {
		return -1
	}
	return 0
}

// allNull reports whether every remaining component of a tuple is null.
func allNull(b []byte) bool {
	for len(b) > 0 {
		_, rest, null, ok := readValue(b)
		if !ok || !null {
			return false
		}
		b = rest
	}
	return true
}
