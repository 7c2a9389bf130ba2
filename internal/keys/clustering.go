package keys

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// Clustering markers; see the package comment.
const (
	boundBefore = 0x00
	endOfRow    = 0x01
	ascEmpty    = 0x10
	ascValue    = 0x11
	descValue   = 0x20
	descEmpty   = 0x21
	boundAfter  = 0xff
)

// Markers of elements nested in collections and tuples.
const (
	nestEnd   = 0x00
	nestNull  = 0x01
	nestEmpty = 0x02
	nestValue = 0x03
)

// ErrDuration is returned for duration values, which CQL keeps out of keys.
var ErrDuration = errors.New("keys: duration values cannot be part of a key")

// invalid reports a serialized value that cannot be encoded.
func invalid(t *cqltype.Type, format string, args ...any) error {
	return fmt.Errorf("keys: %w: %s: %s", cqltype.ErrInvalid, t, fmt.Sprintf(format, args...))
}

func appendComponents(dst []byte, comps [][]byte, types []*cqltype.Type, desc []bool) ([]byte, error) {
	if len(comps) > len(types) || len(comps) > len(desc) {
		return dst, fmt.Errorf("keys: %d clustering values for %d types and %d orders", len(comps), len(types), len(desc))
	}
	for i, v := range comps {
		d := desc[i]
		if types[i].Kind == cqltype.Duration {
			return dst, ErrDuration
		}
		if len(v) == 0 {
			dst = append(dst, marker(d, true))
			continue
		}
		dst = append(dst, marker(d, false))
		start := len(dst)
		var err error
		if dst, err = appendValue(dst, types[i], v); err != nil {
			return dst, err
		}
		if d {
			complement(dst[start:])
		}
	}
	return dst, nil
}

func marker(desc, empty bool) byte {
	switch {
	case desc && empty:
		return descEmpty
	case desc:
		return descValue
	case empty:
		return ascEmpty
	}
	return ascValue
}

func complement(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

// fixedWidth returns the serialized width of fixed-width key types and
// whether their encoding flips the sign bit.
func fixedWidth(k cqltype.Kind) (width int, signed bool) {
	switch k {
	case cqltype.Tinyint:
		return 1, true
	case cqltype.Smallint:
		return 2, true
	case cqltype.Int:
		return 4, true
	case cqltype.Bigint, cqltype.Counter, cqltype.Timestamp:
		return 8, true
	case cqltype.Date:
		return 4, false
	case cqltype.Time:
		return 8, false
	}
	return 0, false
}

// appendValue appends the ascending encoding of a non-empty value v.
func appendValue(dst []byte, t *cqltype.Type, v []byte) ([]byte, error) {
	be := binary.BigEndian
	switch t.Kind {
	case cqltype.Tinyint, cqltype.Smallint, cqltype.Int, cqltype.Bigint, cqltype.Counter,
		cqltype.Timestamp, cqltype.Date, cqltype.Time:
		w, signed := fixedWidth(t.Kind)
		if len(v) != w {
			return dst, invalid(t, "%d bytes, want %d", len(v), w)
		}
		start := len(dst)
		dst = append(dst, v...)
		if signed {
			dst[start] ^= 0x80
		}
		return dst, nil
	case cqltype.Boolean:
		if len(v) != 1 {
			return dst, invalid(t, "%d bytes, want 1", len(v))
		}
		if v[0] != 0 {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case cqltype.Float:
		if len(v) != 4 {
			return dst, invalid(t, "%d bytes, want 4", len(v))
		}
		return be.AppendUint32(dst, cqltype.FloatKey(be.Uint32(v))), nil
	case cqltype.Double:
		if len(v) != 8 {
			return dst, invalid(t, "%d bytes, want 8", len(v))
		}
		return be.AppendUint64(dst, cqltype.DoubleKey(be.Uint64(v))), nil
	case cqltype.UUID:
		if len(v) != 16 {
			return dst, invalid(t, "%d bytes, want 16", len(v))
		}
		msb := be.Uint64(v)
		version := msb >> 12 & 0xf
		if version == 1 {
			msb = cqltype.ReorderTimestamp(msb)
		} else {
			msb = version<<60 | msb>>4&0x0ffffffffffff000 | msb&0xfff
		}
		return append(be.AppendUint64(dst, msb), v[8:]...), nil
	case cqltype.Timeuuid:
		if len(v) != 16 {
			return dst, invalid(t, "%d bytes, want 16", len(v))
		}
		dst = be.AppendUint64(dst, cqltype.ReorderTimestamp(be.Uint64(v))^1<<63)
		return be.AppendUint64(dst, be.Uint64(v[8:])^0x8080808080808080), nil
	case cqltype.Ascii, cqltype.Text, cqltype.Blob, cqltype.Inet:
		return appendEscaped(dst, v), nil
	case cqltype.Varint:
		return appendVarint(dst, v), nil
	case cqltype.Decimal:
		return appendDecimal(dst, t, v)
	case cqltype.Duration:
		return dst, ErrDuration
	case cqltype.List, cqltype.Set, cqltype.Map:
		return appendCollection(dst, t, v)
	case cqltype.Tuple, cqltype.UDT:
		return appendTuple(dst, t, v)
	}
	return dst, fmt.Errorf("keys: cannot encode values of %s", t)
}

func appendVarint(dst, v []byte) []byte {
	v = cqltype.MinimalVarint(v)
	n := uint32(len(v))
	if v[0]&0x80 != 0 {
		dst = append(dst, 0x01)
		n = ^n // a longer negative number is smaller
	} else {
		dst = append(dst, 0x02)
	}
	dst = binary.BigEndian.AppendUint32(dst, n)
	return append(dst, v...)
}

func appendDecimal(dst []byte, t *cqltype.Type, v []byte) ([]byte, error) {
	d, err := cqltype.SplitDecimal(v)
	if err != nil {
		return dst, invalid(t, "%v", err)
	}
	switch {
	case len(d.Digits) == 0:
		return append(dst, 0x02), nil
	case d.Neg:
		dst = append(dst, 0x01)
	default:
		dst = append(dst, 0x03)
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(d.Exp)^1<<63)
	for i := 0; i < len(d.Digits); i += 2 {
		pair := (d.Digits[i] - '0') * 10
		if i+1 < len(d.Digits) {
			pair += d.Digits[i+1] - '0'
		}
		dst = append(dst, pair+1)
	}
	dst = append(dst, 0)
	if d.Neg {
		complement(dst[start:])
	}
	return dst, nil
}

// appendNested appends one element of a collection or tuple.
func appendNested(dst []byte, t *cqltype.Type, v []byte) ([]byte, error) {
	if len(v) == 0 {
		return append(dst, nestEmpty), nil
	}
	return appendValue(append(dst, nestValue), t, v)
}

func readValue(t *cqltype.Type, b []byte) (v, rest []byte, null bool, err error) {
	if len(b) < 4 {
		return nil, nil, false, invalid(t, "truncated element length")
	}
	n := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	if n < 0 {
		return nil, b, true, nil
	}
	if int64(n) > int64(len(b)) {
		return nil, nil, false, invalid(t, "element of %d bytes overruns value", n)
	}
	return b[:n], b[n:], false, nil
}

func appendCollection(dst []byte, t *cqltype.Type, v []byte) ([]byte, error) {
	if len(v) < 4 {
		return dst, invalid(t, "truncated count")
	}
	count := int32(binary.BigEndian.Uint32(v))
	if count < 0 {
		return dst, invalid(t, "negative count")
	}
	v = v[4:]
	for range count {
		for _, et := range t.Elems {
			e, rest, null, err := readValue(t, v)
			if err != nil {
				return dst, err
			}
			if null {
				return dst, invalid(t, "null element")
			}
			if dst, err = appendNested(dst, et, e); err != nil {
				return dst, err
			}
			v = rest
		}
	}
	if len(v) != 0 {
		return dst, invalid(t, "%d bytes after the last element", len(v))
	}
	return append(dst, nestEnd), nil
}

func appendTuple(dst []byte, t *cqltype.Type, v []byte) ([]byte, error) {
	nulls := 0 // pending nulls, written only if a value follows
	for i := 0; len(v) > 0; i++ {
		if i >= len(t.Elems) {
			return dst, invalid(t, "more components than the type has")
		}
		e, rest, null, err := readValue(t, v)
		if err != nil {
			return dst, err
		}
		v = rest
		if null {
			nulls++
			continue
		}
		for ; nulls > 0; nulls-- {
			dst = append(dst, nestNull)
		}
		if dst, err = appendNested(dst, t.Elems[i], e); err != nil {
			return dst, err
		}
	}
	return append(dst, nestEnd), nil
}

// DecodeClustering returns the serialized clustering values of a row key,
// given the clustering columns' types and orders. The values share one new
// buffer.
func DecodeClustering(key []byte, types []*cqltype.Type, desc []bool) ([][]byte, error) {
	vals, _, err := AppendClustering(make([][]byte, 0, len(types)), make([]byte, 0, len(key)), key, types, desc)
	return vals, err
}

// AppendClustering is DecodeClustering into caller buffers: it appends the
// values to vals and their bytes to buf and returns both, so that a reader
// decoding many keys can reuse them. The values alias the returned buf.
func AppendClustering(vals [][]byte, buf, key []byte, types []*cqltype.Type, desc []bool) ([][]byte, []byte, error) {
	n, err := PartitionPrefixLen(key)
	if err != nil {
		return vals, buf, err
	}
	if n >= len(key) || Kind(key[n]) != KindRow {
		return vals, buf, fmt.Errorf("%w: not a row key", ErrCorrupt)
	}
	r := reader{b: key[n+1:]}
	var offsetsArr [16]int
	offsets := offsetsArr[:0]
	for i := 0; ; i++ {
		m, ok := r.byte()
		if !ok {
			return vals, buf, fmt.Errorf("%w: clustering not terminated", ErrCorrupt)
		}
		if m == endOfRow {
			break
		}
		if i >= len(types) || i >= len(desc) {
			return vals, buf, fmt.Errorf("%w: more clustering values than types", ErrCorrupt)
		}
		offsets = append(offsets, len(buf))
		if m != marker(desc[i], false) {
			if m != marker(desc[i], true) {
				return vals, buf, fmt.Errorf("%w: clustering marker %02x", ErrCorrupt, m)
			}
			continue
		}
		if desc[i] {
			r.mask = 0xff
		}
		if buf, err = decodeValue(buf, &r, types[i]); err != nil {
			return vals, buf, err
		}
		if len(buf) == offsets[i] {
			return vals, buf, fmt.Errorf("%w: empty value with a value marker", ErrCorrupt)
		}
		r.mask = 0
	}
	if len(r.b) != 0 {
		return vals, buf, fmt.Errorf("%w: %d bytes after clustering", ErrCorrupt, len(r.b))
	}
	// Slice only now: buf may have moved while it grew.
	for i, off := range offsets {
		end := len(buf)
		if i+1 < len(offsets) {
			end = offsets[i+1]
		}
		vals = append(vals, buf[off:end:end])
	}
	return vals, buf, nil
}

// reader reads encoded bytes, complemented when mask is FF (DESC columns).
type reader struct {
	b    []byte
	mask byte
}

func (r *reader) byte() (byte, bool) {
	if len(r.b) == 0 {
		return 0, false
	}
	c := r.b[0] ^ r.mask
	r.b = r.b[1:]
	return c, true
}

// appendN appends the next n bytes to dst.
func (r *reader) appendN(dst []byte, n int) ([]byte, bool) {
	if len(r.b) < n {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, r.b[:n]...)
	r.b = r.b[n:]
	if r.mask != 0 {
		complement(dst[start:])
	}
	return dst, true
}

func (r *reader) uint64() (uint64, bool) {
	var a [8]byte
	if _, ok := r.appendN(a[:0], 8); !ok {
		return 0, false
	}
	return binary.BigEndian.Uint64(a[:]), true
}

func corrupt(t *cqltype.Type, what string) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, t, what)
}

// decodeValue appends the serialized value whose encoding starts r.
func decodeValue(dst []byte, r *reader, t *cqltype.Type) ([]byte, error) {
	be := binary.BigEndian
	switch t.Kind {
	case cqltype.Tinyint, cqltype.Smallint, cqltype.Int, cqltype.Bigint, cqltype.Counter,
		cqltype.Timestamp, cqltype.Date, cqltype.Time:
		w, signed := fixedWidth(t.Kind)
		start := len(dst)
		dst, ok := r.appendN(dst, w)
		if !ok {
			return dst, corrupt(t, "truncated")
		}
		if signed {
			dst[start] ^= 0x80
		}
		return dst, nil
	case cqltype.Boolean:
		c, ok := r.byte()
		if !ok || c > 1 {
			return dst, corrupt(t, "bad boolean")
		}
		return append(dst, c), nil
	case cqltype.Float:
		var a [4]byte
		if _, ok := r.appendN(a[:0], 4); !ok {
			return dst, corrupt(t, "truncated")
		}
		k := be.Uint32(a[:])
		bits := ^k
		if k&(1<<31) != 0 {
			bits = k &^ (1 << 31)
		}
		if cqltype.FloatKey(bits) != k {
			return dst, corrupt(t, "NaN not canonical")
		}
		return be.AppendUint32(dst, bits), nil
	case cqltype.Double:
		k, ok := r.uint64()
		if !ok {
			return dst, corrupt(t, "truncated")
		}
		bits := ^k
		if k&(1<<63) != 0 {
			bits = k &^ (1 << 63)
		}
		if cqltype.DoubleKey(bits) != k {
			return dst, corrupt(t, "NaN not canonical")
		}
		return be.AppendUint64(dst, bits), nil
	case cqltype.UUID:
		msb, ok1 := r.uint64()
		lsb, ok2 := r.uint64()
		if !ok1 || !ok2 {
			return dst, corrupt(t, "truncated")
		}
		version := msb >> 60
		if version == 1 {
			msb = cqltype.RestoreTimestamp(msb)
		} else {
			msb = msb<<4&0xffffffffffff0000 | version<<12 | msb&0xfff
		}
		return be.AppendUint64(be.AppendUint64(dst, msb), lsb), nil
	case cqltype.Timeuuid:
		msb, ok1 := r.uint64()
		lsb, ok2 := r.uint64()
		if !ok1 || !ok2 {
			return dst, corrupt(t, "truncated")
		}
		dst = be.AppendUint64(dst, cqltype.RestoreTimestamp(msb^1<<63))
		return be.AppendUint64(dst, lsb^0x8080808080808080), nil
	case cqltype.Ascii, cqltype.Text, cqltype.Blob, cqltype.Inet:
		return r.unescape(dst, t)
	case cqltype.Varint:
		return decodeVarint(dst, r, t)
	case cqltype.Decimal:
		return decodeDecimal(dst, r, t)
	case cqltype.List, cqltype.Set, cqltype.Map:
		return decodeCollection(dst, r, t)
	case cqltype.Tuple, cqltype.UDT:
		return decodeTuple(dst, r, t)
	}
	return dst, fmt.Errorf("keys: cannot decode values of %s", t)
}

func (r *reader) unescape(dst []byte, t *cqltype.Type) ([]byte, error) {
	for {
		i := bytes.IndexByte(r.b, r.mask) // a 00 byte once complemented
		if i < 0 || i+1 >= len(r.b) {
			return dst, corrupt(t, "unterminated string")
		}
		start := len(dst)
		dst = append(dst, r.b[:i]...)
		if r.mask != 0 {
			complement(dst[start:])
		}
		esc := r.b[i+1] ^ r.mask
		r.b = r.b[i+2:]
		switch esc {
		case escFF:
			dst = append(dst, 0)
		case escEnd:
			return dst, nil
		default:
			return dst, corrupt(t, "bad escape")
		}
	}
}

func decodeVarint(dst []byte, r *reader, t *cqltype.Type) ([]byte, error) {
	sign, ok := r.byte()
	var a [4]byte
	if _, ok2 := r.appendN(a[:0], 4); !ok || !ok2 || sign != 0x01 && sign != 0x02 {
		return dst, corrupt(t, "bad varint header")
	}
	n := binary.BigEndian.Uint32(a[:])
	if sign == 0x01 {
		n = ^n
	}
	if n == 0 || uint64(n) > uint64(len(r.b)) {
		return dst, corrupt(t, "bad varint length")
	}
	start := len(dst)
	dst, _ = r.appendN(dst, int(n))
	v := dst[start:]
	if (v[0]&0x80 != 0) != (sign == 0x01) || len(cqltype.MinimalVarint(v)) != len(v) {
		return dst, corrupt(t, "varint not canonical")
	}
	return dst, nil
}

func decodeDecimal(dst []byte, r *reader, t *cqltype.Type) ([]byte, error) {
	class, ok := r.byte()
	if !ok || class < 0x01 || class > 0x03 {
		return dst, corrupt(t, "bad decimal sign")
	}
	if class == 0x02 {
		return append(dst, 0, 0, 0, 0, 0), nil
	}
	neg := class == 0x01
	if neg {
		r.mask ^= 0xff
		defer func() { r.mask ^= 0xff }()
	}
	exp, ok := r.uint64()
	if !ok {
		return dst, corrupt(t, "truncated decimal")
	}
	d := cqltype.DecimalParts{Neg: neg, Exp: int64(exp ^ 1<<63)}
	var digits [64]byte
	d.Digits = digits[:0]
	for {
		c, ok := r.byte()
		if !ok {
			return dst, corrupt(t, "unterminated decimal")
		}
		if c == 0 {
			break
		}
		if c > 100 {
			return dst, corrupt(t, "bad decimal digits")
		}
		d.Digits = append(d.Digits, '0'+(c-1)/10, '0'+(c-1)%10)
	}
	if len(d.Digits) == 0 {
		return dst, corrupt(t, "nonzero decimal without digits")
	}
	if n := len(d.Digits); n >= 2 && d.Digits[n-1] == '0' {
		d.Digits = d.Digits[:n-1] // the pad of an odd digit count
	}
	dst, err := cqltype.JoinDecimal(dst, d)
	if err != nil {
		return dst, fmt.Errorf("%w: %s: %v", ErrCorrupt, t, err)
	}
	return dst, nil
}

// decodeNested decodes one marked element; null reports a null marker and
// end the end marker.
func decodeNested(dst []byte, r *reader, t, elem *cqltype.Type) (out []byte, null, end bool, err error) {
	m, ok := r.byte()
	if !ok {
		return dst, false, false, corrupt(t, "truncated")
	}
	switch m {
	case nestEnd:
		return dst, false, true, nil
	case nestNull:
		return binary.BigEndian.AppendUint32(dst, math.MaxUint32), true, false, nil
	case nestEmpty:
		return binary.BigEndian.AppendUint32(dst, 0), false, false, nil
	case nestValue:
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		if dst, err = decodeValue(dst, r, elem); err != nil {
			return dst, false, false, err
		}
		n := len(dst) - lenAt - 4
		if n == 0 || n > math.MaxInt32 {
			return dst, false, false, corrupt(t, "bad element")
		}
		binary.BigEndian.PutUint32(dst[lenAt:], uint32(n))
		return dst, false, false, nil
	}
	return dst, false, false, corrupt(t, "bad element marker")
}

func decodeCollection(dst []byte, r *reader, t *cqltype.Type) ([]byte, error) {
	countAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	count := 0
	for ; ; count++ {
		for i, et := range t.Elems {
			var null, end bool
			var err error
			dst, null, end, err = decodeNested(dst, r, t, et)
			switch {
			case err != nil:
				return dst, err
			case end && i == 0:
				binary.BigEndian.PutUint32(dst[countAt:], uint32(count))
				return dst, nil
			case end || null:
				return dst, corrupt(t, "bad element")
			}
		}
		if count == math.MaxInt32 {
			return dst, corrupt(t, "too many elements")
		}
	}
}

func decodeTuple(dst []byte, r *reader, t *cqltype.Type) ([]byte, error) {
	start := len(dst)
	lastNull := false
	for i := 0; ; i++ {
		var elem *cqltype.Type
		if i < len(t.Elems) {
			elem = t.Elems[i]
		}
		var null, end bool
		var err error
		if elem == nil {
			// Only the end may follow the last component.
			if m, ok := r.byte(); !ok || m != nestEnd {
				return dst, corrupt(t, "more components than the type has")
			}
			end = true
		} else if dst, null, end, err = decodeNested(dst, r, t, elem); err != nil {
			return dst, err
		}
		if end {
			if lastNull {
				return dst, corrupt(t, "trailing null not dropped")
			}
			if len(dst) == start {
				// A tuple of nulls only: zero components would be the empty
				// value, which sorts before it, so keep one null.
				dst = binary.BigEndian.AppendUint32(dst, math.MaxUint32)
			}
			return dst, nil
		}
		lastNull = null
	}
}
