package cqltype

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// ErrInvalid matches every error Validate returns.
var ErrInvalid = errors.New("cqltype: invalid value")

// MarshalError reports a malformed serialized value. Msg is worded like
// Cassandra's MarshalException so it can be returned to clients as is.
type MarshalError struct {
	Msg string
}

func (e *MarshalError) Error() string { return "cqltype: invalid value: " + e.Msg }

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *MarshalError) Is(target error) bool { return target == ErrInvalid }

func marshalErrorf(format string, args ...any) error {
	return &MarshalError{Msg: fmt.Sprintf(format, args...)}
}

// Validate checks that v is a well-formed serialized value of type t.
func Validate(t *Type, v []byte) error {
	n := len(v)
	switch t.Kind {
	case Ascii:
		for _, c := range v {
			if c >= 0x80 {
				return marshalErrorf("Invalid byte for ascii: %d", int8(c))
			}
		}
	case Text:
		if !utf8.Valid(v) {
			return marshalErrorf("String didn't validate.")
		}
	case Blob, Varint:
	case Boolean:
		if n > 1 {
			return marshalErrorf("Expected 1 or 0 byte value (%d)", n)
		}
	case Tinyint:
		if n != 1 {
			return marshalErrorf("Expected 1 byte for a tinyint (%d)", n)
		}
	case Smallint:
		if n != 2 {
			return marshalErrorf("Expected 2 bytes for a smallint (%d)", n)
		}
	case Int:
		if n != 4 && n != 0 {
			return marshalErrorf("Expected 4 or 0 byte int (%d)", n)
		}
	case Bigint, Counter:
		if n != 8 && n != 0 {
			return marshalErrorf("Expected 8 or 0 byte long (%d)", n)
		}
	case Timestamp:
		if n != 8 && n != 0 {
			return marshalErrorf("Expected 8 or 0 byte long for date (%d)", n)
		}
	case Date:
		if n != 4 {
			return marshalErrorf("Expected 4 byte long for date (%d)", n)
		}
	case Time:
		if n != 8 {
			return marshalErrorf("Expected 8 byte long for time (%d)", n)
		}
	case Float:
		if n != 4 && n != 0 {
			return marshalErrorf("Expected 4 or 0 byte value for a float (%d)", n)
		}
	case Double:
		if n != 8 && n != 0 {
			return marshalErrorf("Expected 8 or 0 byte value for a double (%d)", n)
		}
	case Decimal:
		if n != 0 && n < 4 {
			return marshalErrorf("Expected 0 or at least 4 bytes (%d)", n)
		}
	case UUID:
		if n != 16 && n != 0 {
			return marshalErrorf("UUID should be 16 or 0 bytes (%d)", n)
		}
	case Timeuuid:
		// TimeUUIDSerializer checks the length as UUIDSerializer does,
		// in its words, before the version.
		if n != 16 && n != 0 {
			return marshalErrorf("UUID should be 16 or 0 bytes (%d)", n)
		}
		if n == 16 && v[6]&0xf0 != 0x10 {
			return marshalErrorf("Invalid version for TimeUUID type.")
		}
	case Inet:
		if n != 0 && n != 4 && n != 16 {
			return marshalErrorf("Expected 4 or 16 byte inetaddress; got %x", v)
		}
	case Duration:
		return validateDuration(v)
	case List, Set, Map:
		return validateCollection(t, v)
	case Tuple, UDT:
		return validateTuple(t, v)
	default:
		return fmt.Errorf("cqltype: cannot validate values of %s", t.Kind)
	}
	return nil
}

func validateCollection(t *Type, v []byte) error {
	name := t.Kind.String()
	want := 1
	if t.Kind == Map {
		want = 2
	}
	if len(t.Elems) != want {
		return fmt.Errorf("cqltype: malformed %s type", name)
	}
	if len(v) < 4 || int32(binary.BigEndian.Uint32(v)) < 0 {
		return marshalErrorf("Not enough bytes to read a %s", name)
	}
	count := int(binary.BigEndian.Uint32(v))
	rest := v[4:]
	for i := 0; i < count; i++ {
		for _, et := range t.Elems {
			e, r, null, ok := readValue(rest)
			if !ok {
				return marshalErrorf("Not enough bytes to read a %s", name)
			}
			if null {
				return marshalErrorf("null is not supported inside collections")
			}
			if err := Validate(et, e); err != nil {
				return err
			}
			rest = r
		}
	}
	if len(rest) != 0 {
		return marshalErrorf("Unexpected extraneous bytes after %s value", name)
	}
	return nil
}

func validateTuple(t *Type, v []byte) error {
	for i := 0; len(v) > 0; i++ {
		if i >= len(t.Elems) {
			if t.Kind == UDT {
				return marshalErrorf("Invalid remaining data after end of UDT value")
			}
			return marshalErrorf("Invalid remaining data after end of tuple value")
		}
		what := fmt.Sprintf("%dth component", i)
		if t.Kind == UDT && i < len(t.Fields) {
			what = fmt.Sprintf("%dth field %s", i, t.Fields[i])
		}
		if len(v) < 4 {
			return marshalErrorf("Not enough bytes to read size of %s", what)
		}
		e, rest, null, ok := readValue(v)
		if !ok {
			return marshalErrorf("Not enough bytes to read %s", what)
		}
		if !null {
			if err := Validate(t.Elems[i], e); err != nil {
				return err
			}
		}
		v = rest
	}
	return nil
}

func validateDuration(v []byte) error {
	if len(v) < 3 {
		return marshalErrorf("Expected at least 3 bytes for a duration (%d)", len(v))
	}
	months, days, nanos, err := SplitDuration(v)
	if err != nil {
		return err
	}
	if !(months >= 0 && days >= 0 && nanos >= 0 || months <= 0 && days <= 0 && nanos <= 0) {
		return marshalErrorf("The duration months, days and nanoseconds must be all of the same sign (%d, %d, %d)", months, days, nanos)
	}
	return nil
}

// SplitDuration decodes a serialized duration: three zigzag-encoded vints
// in Cassandra's VIntCoding (the count of leading one bits of the first byte
// is the count of extra bytes).
func SplitDuration(v []byte) (months, days int32, nanos int64, err error) {
	var vals [3]int64
	for i := range vals {
		u, n, ok := readUvarint(v)
		if !ok {
			return 0, 0, 0, marshalErrorf("Not enough bytes to read a duration")
		}
		vals[i] = int64(u>>1) ^ -int64(u&1)
		v = v[n:]
	}
	if len(v) != 0 {
		return 0, 0, 0, marshalErrorf("Unexpected extraneous bytes after duration value")
	}
	if vals[0] < math.MinInt32 || vals[0] > math.MaxInt32 {
		return 0, 0, 0, marshalErrorf("The duration months must be a 32 bits integer but was: %d", vals[0])
	}
	if vals[1] < math.MinInt32 || vals[1] > math.MaxInt32 {
		return 0, 0, 0, marshalErrorf("The duration days must be a 32 bits integer but was: %d", vals[1])
	}
	return int32(vals[0]), int32(vals[1]), vals[2], nil
}

// readUvarint reads one of Cassandra's unsigned vints.
func readUvarint(b []byte) (uint64, int, bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	first := b[0]
	extra := 0
	for extra < 8 && first&(0x80>>extra) != 0 {
		extra++
	}
	if len(b) < 1+extra {
		return 0, 0, false
	}
	u := uint64(first & (0xff >> extra))
	for _, c := range b[1 : 1+extra] {
		u = u<<8 | uint64(c)
	}
	return u, 1 + extra, true
}
