// Package keys builds Sediment's storage keys: byte strings whose
// bytes.Compare order is the order in which CQL stores partitions and rows.
//
// A key is the partition's token, its partition key and one kind byte; row
// keys then carry the clustering values:
//
//	+----------+---------------------------+------+----------------------------+
//	| token    | partition key             | kind | clustering (rows only)     |
//	| 8 bytes  | escaped, 00 01 terminated | 1 B  | marker+value ... 01        |
//	+----------+---------------------------+------+----------------------------+
//	|<------- partition prefix ----------->|
//
// The parts:
//   - token: the signed Murmur3 token, big-endian with its sign bit flipped,
//     so keys sort by token as Cassandra's ring does.
//   - partition key: the serialized key (a single column's value, or the
//     CompositeType form of ComposePartitionKey), with each 00 byte written
//     as 00 FF and 00 01 appended. Within a token, keys sort by raw key
//     bytes, as Cassandra orders colliding tokens, and the escaping keeps any
//     key from being a prefix of another.
//   - kind: 01 for the partition header (partition deletion, static row,
//     range tombstones), 02 for rows, so a partition's header sorts first.
//
// Each clustering value is one marker byte and the value's encoding, and a
// row ends with 01:
//
//	marker  meaning
//	------  ---------------------------------------------------------------
//	00      bound: before every row with the preceding components (bounds only)
//	01      end of the row's clustering
//	10 11   ascending column: empty value, value
//	20 21   descending column: value, empty value (empty sorts last)
//	FF      bound: after every row with the preceding components (bounds only)
//
// Because the end byte 01 and every marker lie strictly between 00 and FF,
// the rows whose clustering starts with a prefix p are exactly the keys
// between AppendBound(p, Before) and AppendBound(p, After), which are never
// row keys themselves: slices and range tombstones over clustering prefixes
// are plain byte ranges.
//
// Value encodings are self-delimiting and order-preserving. They are given
// for ascending columns; a descending column stores the bitwise complement
// of the same bytes, which reverses the order of a prefix-free code.
//
//	type                        encoding
//	--------------------------  -----------------------------------------------
//	tinyint..bigint, timestamp  big-endian, sign bit flipped
//	date, time                  the serialized bytes
//	boolean                     00 or 01
//	float, double               IEEE bits; negative: all bits flipped, else the
//	                            sign bit; every NaN made the canonical NaN
//	uuid                        version nibble first, then for version 1 the
//	                            timestamp reordered to time_hi, time_mid,
//	                            time_low; the low 8 bytes as they are
//	timeuuid                    reordered timestamp with the sign bit flipped,
//	                            low 8 bytes with each byte's sign bit flipped
//	                            (Cassandra compares them as signed bytes)
//	text, ascii, blob, inet     bytes with 00 escaped as 00 FF, then 00 01
//	varint                      01 (negative) or 02, 4-byte length (negative:
//	                            complemented), minimal two's complement
//	decimal                     01 negative, 02 zero, 03 positive; then the
//	                            8-byte exponent (sign bit flipped) and digit
//	                            pairs as bytes 01..64 ended by 00; negative
//	                            numbers complement everything after the 01
//	list, set                   per element 03 + value, or 02 if empty; then 00
//	map                         per entry the key, then the value, as elements;
//	                            then 00
//	tuple, UDT                  per component 01 (null), 02 (empty) or 03 +
//	                            value; trailing nulls dropped; then 00
//
// Every encoding decodes back to a serialized value that Cassandra's
// comparator finds equal to the original. The bytes are identical too,
// except where Cassandra itself treats different bytes as one value: NaN
// payloads, decimal scales (1.0 and 1.00), redundant varint sign bytes,
// boolean true bytes other than 01, and trailing null tuple components.
// Those decode to one canonical form, just as one clustering in Cassandra
// holds one row.
//
// Durations cannot be part of a key, as in CQL.
package keys

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// Errors returned for keys that were not built by this package.
var (
	ErrCorrupt = errors.New("keys: malformed key")
)

// Kind tells what a key addresses in a partition.
type Kind byte

const (
	// KindHeader is the partition header: partition deletion, static row and
	// range tombstones. It sorts before every row of its partition.
	KindHeader Kind = 0x01
	// KindRow is a row, followed by its clustering.
	KindRow Kind = 0x02
)

// TokenLen is the size of the encoded token that starts every key.
const TokenLen = 8

// AppendToken appends the 8-byte order-preserving encoding of a token. It is
// a lower bound for every key with that token and a greater one.
func AppendToken(dst []byte, tok int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(tok)^1<<63)
}

// AppendPartitionPrefix appends the key prefix shared by every entry of the
// partition with serialized key pk and token tok (token.Murmur3(pk)).
func AppendPartitionPrefix(dst []byte, tok int64, pk []byte) []byte {
	dst = AppendToken(dst, tok)
	return appendEscaped(dst, pk)
}

// AppendPartitionEnd appends a key that sorts after every entry of the
// partition with the given prefix and before every following partition.
// The prefix itself sorts before every entry, so [prefix, end) spans the
// partition.
func AppendPartitionEnd(dst, partitionPrefix []byte) []byte {
	return append(append(dst, partitionPrefix...), boundAfter)
}

// HeaderKey appends the key of a partition's header entry.
func HeaderKey(dst []byte, tok int64, pk []byte) []byte {
	return append(AppendPartitionPrefix(dst, tok, pk), byte(KindHeader))
}

// RowKey appends the key of a row: the partition prefix, the row kind and
// the row's clustering values (serialized, one per clustering column, with
// the column's type and whether it is ordered DESC).
func RowKey(dst []byte, tok int64, pk []byte, clustering [][]byte, types []*cqltype.Type, desc []bool) ([]byte, error) {
	dst = append(AppendPartitionPrefix(dst, tok, pk), byte(KindRow))
	dst, err := appendComponents(dst, clustering, types, desc)
	if err != nil {
		return dst, err
	}
	return append(dst, endOfRow), nil
}

// BoundKind says on which side of the rows with a clustering prefix a bound
// lies.
type BoundKind uint8

const (
	// Before sorts before every row whose clustering starts with the prefix.
	Before BoundKind = iota
	// After sorts after every row whose clustering starts with the prefix.
	After
)

// AppendBound appends a bound key for the clustering prefix components
// within a partition (partitionPrefix from AppendPartitionPrefix). With no
// components it bounds all rows of the partition. An inclusive slice start
// at p is Before p, an exclusive one After p; an inclusive end is After p,
// an exclusive one Before p.
func AppendBound(dst, partitionPrefix []byte, components [][]byte, types []*cqltype.Type, desc []bool, kind BoundKind) ([]byte, error) {
	dst = append(append(dst, partitionPrefix...), byte(KindRow))
	dst, err := appendComponents(dst, components, types, desc)
	if err != nil {
		return dst, err
	}
	if kind == After {
		return append(dst, boundAfter), nil
	}
	return append(dst, boundBefore), nil
}

// PartitionPrefixLen returns the length of key's partition prefix: the
// token and the escaped partition key with its terminator.
func PartitionPrefixLen(key []byte) (int, error) {
	if len(key) < TokenLen {
		return 0, fmt.Errorf("%w: %d bytes, shorter than a token", ErrCorrupt, len(key))
	}
	// A plain loop: partition keys are short and often hold zeros (ints,
	// composites), where a search per zero costs more.
	for i := TokenLen; i+1 < len(key); i++ {
		if key[i] != 0 {
			continue
		}
		i++
		switch key[i] {
		case escFF:
		case escEnd:
			return i + 1, nil
		default:
			return 0, fmt.Errorf("%w: bad escape 00 %02x in partition key", ErrCorrupt, key[i])
		}
	}
	return 0, fmt.Errorf("%w: unterminated partition key", ErrCorrupt)
}

// Token returns the token of a key.
func Token(key []byte) (int64, error) {
	if len(key) < TokenLen {
		return 0, fmt.Errorf("%w: %d bytes, shorter than a token", ErrCorrupt, len(key))
	}
	return int64(binary.BigEndian.Uint64(key) ^ 1<<63), nil
}

// PartitionKey returns the serialized partition key of a key, in a new
// slice.
func PartitionKey(key []byte) ([]byte, error) {
	n, err := PartitionPrefixLen(key)
	if err != nil {
		return nil, err
	}
	return unescape(make([]byte, 0, n-TokenLen-2), key[TokenLen:n]), nil
}

// EntryKind returns whether key is a partition header or a row key.
func EntryKind(key []byte) (Kind, error) {
	n, err := PartitionPrefixLen(key)
	if err != nil {
		return 0, err
	}
	if n >= len(key) {
		return 0, fmt.Errorf("%w: no kind byte", ErrCorrupt)
	}
	switch k := Kind(key[n]); k {
	case KindHeader:
		if n+1 != len(key) {
			return 0, fmt.Errorf("%w: bytes after header kind", ErrCorrupt)
		}
		return k, nil
	case KindRow:
		return k, nil
	default:
		return 0, fmt.Errorf("%w: unknown kind %02x", ErrCorrupt, byte(k))
	}
}

const (
	escFF  = 0xff // 00 FF stands for a 00 byte
	escEnd = 0x01 // 00 01 ends an escaped byte string
)

// appendEscaped appends b with every 00 written as 00 FF, then 00 01.
func appendEscaped(dst, b []byte) []byte {
	if len(b) < 32 {
		// Short keys (ints, UUIDs, names) often hold zeros: one pass is
		// cheaper than a search per zero.
		dst = slices.Grow(dst, len(b)+4)
		for _, c := range b {
			dst = append(dst, c)
			if c == 0 {
				dst = append(dst, escFF)
			}
		}
		return append(dst, 0, escEnd)
	}
	for {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			dst = append(dst, b...)
			return append(dst, 0, escEnd)
		}
		dst = append(dst, b[:i+1]...)
		dst = append(dst, escFF)
		b = b[i+1:]
	}
}

// unescape appends the bytes of a well-formed escaped string (as checked by
// PartitionPrefixLen), terminator included in esc.
func unescape(dst, esc []byte) []byte {
	esc = esc[:len(esc)-2]
	for {
		i := bytes.IndexByte(esc, 0)
		if i < 0 {
			return append(dst, esc...)
		}
		dst = append(dst, esc[:i+1]...)
		esc = esc[i+2:]
	}
}

// ComposePartitionKey serializes a compound partition key as Cassandra's
// CompositeType does: for each component a 2-byte big-endian length, the
// bytes and a 00 end-of-component byte. Components are limited to 65535
// bytes.
func ComposePartitionKey(components [][]byte) ([]byte, error) {
	n := 0
	for _, c := range components {
		if len(c) > 0xffff {
			return nil, fmt.Errorf("keys: partition key component of %d bytes exceeds 65535", len(c))
		}
		n += 3 + len(c)
	}
	b := make([]byte, 0, n)
	for _, c := range components {
		b = binary.BigEndian.AppendUint16(b, uint16(len(c)))
		b = append(append(b, c...), 0)
	}
	return b, nil
}

// DecomposePartitionKey splits a compound partition key of n components.
// The components alias pk.
func DecomposePartitionKey(pk []byte, n int) ([][]byte, error) {
	out := make([][]byte, 0, n)
	for range n {
		if len(pk) < 2 {
			return nil, fmt.Errorf("%w: compound partition key too short", ErrCorrupt)
		}
		l := int(binary.BigEndian.Uint16(pk))
		if len(pk) < 3+l {
			return nil, fmt.Errorf("%w: compound partition key component overruns", ErrCorrupt)
		}
		if pk[2+l] != 0 {
			return nil, fmt.Errorf("%w: compound partition key end-of-component %02x", ErrCorrupt, pk[2+l])
		}
		out = append(out, pk[2:2+l:2+l])
		pk = pk[3+l:]
	}
	if len(pk) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after compound partition key", ErrCorrupt, len(pk))
	}
	return out, nil
}

// Max returns the later of two keys in storage order (a if they are equal).
func Max(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}

// Min returns the earlier of two keys in storage order (a if they are equal).
func Min(a, b []byte) []byte {
	if bytes.Compare(a, b) <= 0 {
		return a
	}
	return b
}
