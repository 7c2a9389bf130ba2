package values

import (
	"encoding/binary"
	"encoding/hex"
	"iter"
	"strings"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// Text returns the text form of a serialized value of type t, for
// CAST(x AS text) and for messages. A native value reads as Cassandra's
// getString writes it (text as is, blobs as 0x..., timestamps as
// 2024-01-02T03:04:05.678Z); collections, tuples and user types read as CQL
// literals ([1, 2], {'a': 1}, (1, 'x'), {f: 1}), with strings quoted inside
// them. Null is "null"; a malformed value is written as hex, never an error.
func Text(t *cqltype.Type, v []byte) string {
	if v == nil {
		return "null"
	}
	if cqltype.Validate(t, v) != nil {
		return "0x" + hex.EncodeToString(v)
	}
	if t.Kind.Native() {
		if len(v) == 0 {
			return ""
		}
		return nativeText(t, v)
	}
	var b strings.Builder
	writeLiteral(&b, t, v)
	return b.String()
}

// writeLiteral writes a valid value as a CQL literal.
func writeLiteral(b *strings.Builder, t *cqltype.Type, v []byte) {
	if v == nil {
		b.WriteString("null")
		return
	}
	switch t.Kind {
	case cqltype.List, cqltype.Set:
		open, end := "[", "]"
		if t.Kind == cqltype.Set {
			open, end = "{", "}"
		}
		b.WriteString(open)
		n, rest := collectionCount(v)
		for i := 0; i < n; i++ {
			var e []byte
			e, rest = nextElem(rest)
			if i > 0 {
				b.WriteString(", ")
			}
			writeLiteral(b, t.Elems[0], e)
		}
		b.WriteString(end)
	case cqltype.Map:
		b.WriteByte('{')
		n, rest := collectionCount(v)
		for i := 0; i < n; i++ {
			var k, e []byte
			k, rest = nextElem(rest)
			e, rest = nextElem(rest)
			if i > 0 {
				b.WriteString(", ")
			}
			writeLiteral(b, t.Elems[0], k)
			b.WriteString(": ")
			writeLiteral(b, t.Elems[1], e)
		}
		b.WriteByte('}')
	case cqltype.Tuple, cqltype.UDT:
		open, end := "(", ")"
		if t.Kind == cqltype.UDT {
			open, end = "{", "}"
		}
		b.WriteString(open)
		for i, e := range tupleElems(t, v) {
			if i > 0 {
				b.WriteString(", ")
			}
			if t.Kind == cqltype.UDT {
				b.WriteString(cqltype.QuoteIdent(t.Fields[i]))
				b.WriteString(": ")
			}
			writeLiteral(b, t.Elems[i], e)
		}
		b.WriteString(end)
	default:
		if len(v) == 0 {
			if t.Kind == cqltype.Blob {
				b.WriteString("0x")
			} else {
				b.WriteString("''")
			}
			return
		}
		s := nativeText(t, v)
		switch t.Kind {
		case cqltype.Ascii, cqltype.Text, cqltype.Inet, cqltype.Date, cqltype.Time, cqltype.Timestamp:
			b.WriteByte('\'')
			b.WriteString(strings.ReplaceAll(s, "'", "''"))
			b.WriteByte('\'')
		default:
			b.WriteString(s)
		}
	}
}

// collectionCount reads the element count of a valid list, set or map.
func collectionCount(v []byte) (int, []byte) {
	return int(int32(binary.BigEndian.Uint32(v))), v[4:]
}

// tupleElems yields the elements of v, a tuple or UDT value of type t, one
// for each of t's element types: nil for a null one, or for one missing at
// the end (a UDT value written before fields were added).
func tupleElems(t *cqltype.Type, v []byte) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		rest := v
		for i := range t.Elems {
			var e []byte
			if len(rest) > 0 {
				e, rest = nextElem(rest)
			}
			if !yield(i, e) {
				return
			}
		}
	}
}

// nextElem reads one length-prefixed element of a valid value; a negative
// length is null.
func nextElem(v []byte) (elem, rest []byte) {
	n := int32(binary.BigEndian.Uint32(v))
	if n < 0 {
		return nil, v[4:]
	}
	return v[4 : 4+n : 4+n], v[4+n:]
}
