package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"unicode/utf8"
)

// decoder reads the protocol's primitive types from a body. The first
// failure sticks: later reads return zero values, and err tells what went
// wrong first, so a message decoder checks once at its end.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = &Error{Code: CodeProtocol, Message: fmt.Sprintf(format, args...)}
	}
	d.b = nil
}

func (d *decoder) need(n int, what string) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || len(d.b) < n {
		d.fail("Not enough bytes to read %s", what)
		return false
	}
	return true
}

func (d *decoder) byte(what string) byte {
	if !d.need(1, what) {
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) short(what string) uint16 {
	if !d.need(2, what) {
		return 0
	}
	v := binary.BigEndian.Uint16(d.b)
	d.b = d.b[2:]
	return v
}

func (d *decoder) int(what string) int32 {
	if !d.need(4, what) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(d.b))
	d.b = d.b[4:]
	return v
}

func (d *decoder) long(what string) int64 {
	if !d.need(8, what) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *decoder) raw(n int, what string) []byte {
	if !d.need(n, what) {
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// text checks that a string is UTF-8, as Cassandra's decoder does.
func (d *decoder) text(b []byte, what string) string {
	if !utf8.Valid(b) {
		d.fail("Invalid UTF-8 in %s", what)
		return ""
	}
	return string(b)
}

// string reads a [string]: a [short] n, then n bytes of UTF-8.
func (d *decoder) string(what string) string {
	n := d.short(what)
	return d.text(d.raw(int(n), what), what)
}

// longString reads a [long string]: an [int] n, then n bytes of UTF-8.
func (d *decoder) longString(what string) string {
	n := d.int(what)
	if n < 0 {
		d.fail("Invalid negative length %d of %s", n, what)
		return ""
	}
	return d.text(d.raw(int(n), what), what)
}

// bytes reads [bytes]: an [int] n, then n bytes; n < 0 is null (nil).
func (d *decoder) bytes(what string) []byte {
	n := d.int(what)
	if n < 0 {
		return nil
	}
	if b := d.raw(int(n), what); b != nil || d.err != nil {
		return b
	}
	return []byte{}
}

// shortBytes reads [short bytes]: a [short] n, then n bytes.
func (d *decoder) shortBytes(what string) []byte {
	n := d.short(what)
	b := d.raw(int(n), what)
	if b == nil && d.err == nil {
		return []byte{}
	}
	return b
}

// value reads a [value]: [bytes] where -1 is null and, from v4, -2 is
// unset. Before v4 every negative length is null, as in Cassandra.
func (d *decoder) value(v Version) Value {
	n := d.int("a value")
	switch {
	case n >= 0:
		b := d.raw(int(n), "a value")
		if b == nil {
			b = []byte{}
		}
		return Value{Bytes: b}
	case v < V4 || n == -1:
		return Value{Kind: Null}
	case n == -2:
		return Value{Kind: Unset}
	default:
		d.fail("Invalid value length %d", n)
		return Value{}
	}
}

// count reads a [short] count of items each at least min bytes long and
// fails when the body cannot hold that many, so that no decoder allocates
// for items a short body cannot contain.
func (d *decoder) count(min int, what string) int {
	n := int(d.short(what))
	if d.err == nil && n*min > len(d.b) {
		d.fail("Not enough bytes to read %d %s", n, what)
		return 0
	}
	return n
}

// intCount is count for an [int] count.
func (d *decoder) intCount(min int, what string) int {
	n := d.int(what)
	if d.err == nil && (n < 0 || int64(n)*int64(min) > int64(len(d.b))) {
		d.fail("Invalid count %d of %s", n, what)
		return 0
	}
	return int(n)
}

func (d *decoder) stringList(what string) []string {
	n := d.count(2, what)
	l := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		l = append(l, d.string(what))
	}
	return l
}

func (d *decoder) stringMap(what string) map[string]string {
	n := d.count(4, what)
	m := make(map[string]string, n)
	for i := 0; i < n && d.err == nil; i++ {
		k := d.string(what)
		m[k] = d.string(what)
	}
	return m
}

func (d *decoder) stringMultimap(what string) map[string][]string {
	n := d.count(4, what)
	m := make(map[string][]string, n)
	for i := 0; i < n && d.err == nil; i++ {
		k := d.string(what)
		m[k] = d.stringList(what)
	}
	return m
}

func (d *decoder) bytesMap(what string) map[string][]byte {
	n := d.count(6, what)
	m := make(map[string][]byte, n)
	for i := 0; i < n && d.err == nil; i++ {
		k := d.string(what)
		m[k] = d.bytes(what)
	}
	return m
}

func (d *decoder) consistency(what string) Consistency {
	c := Consistency(d.short(what))
	if d.err == nil && c > LocalOne {
		d.fail("Unknown code %d for a consistency level", c)
	}
	return c
}

// inet reads an [inet]: a byte n (4 or 16), n address bytes, an [int] port.
func (d *decoder) inet(what string) netip.AddrPort {
	n := d.byte(what)
	if d.err == nil && n != 4 && n != 16 {
		d.fail("Invalid address length %d in %s", n, what)
		return netip.AddrPort{}
	}
	a, _ := netip.AddrFromSlice(d.raw(int(n), what))
	p := d.int(what)
	if d.err == nil && (p < 0 || p > math.MaxUint16) {
		d.fail("Invalid port %d in %s", p, what)
	}
	return netip.AddrPortFrom(a, uint16(p))
}

// end fails when bytes are left over: a body longer than its message is
// as malformed as a shorter one.
func (d *decoder) end(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d unexpected bytes after %s", len(d.b), what)
	}
	return d.err
}

// The appenders below write primitives. Lengths that do not fit their
// field are reported through an encoder's error rather than truncated.

type encoder struct {
	b   []byte
	err error
}

func (e *encoder) failf(format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf("wire: "+format, args...)
	}
}

func (e *encoder) byte(v byte)    { e.b = append(e.b, v) }
func (e *encoder) short(v uint16) { e.b = binary.BigEndian.AppendUint16(e.b, v) }
func (e *encoder) int(v int32)    { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *encoder) long(v int64)   { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }

func (e *encoder) shortLen(n int, what string) {
	if n > math.MaxUint16 {
		e.failf("%s of %d bytes or items is longer than a [short] allows", what, n)
	}
	e.short(uint16(n))
}

func (e *encoder) intLen(n int, what string) {
	if n > math.MaxInt32 {
		e.failf("%s of %d bytes or items is longer than an [int] allows", what, n)
	}
	e.int(int32(n))
}

func (e *encoder) string(s string) {
	e.shortLen(len(s), "a [string]")
	e.b = append(e.b, s...)
}

func (e *encoder) longString(s string) {
	e.intLen(len(s), "a [long string]")
	e.b = append(e.b, s...)
}

// bytes appends [bytes]; nil is null.
func (e *encoder) bytes(b []byte) {
	if b == nil {
		e.int(-1)
		return
	}
	e.intLen(len(b), "[bytes]")
	e.b = append(e.b, b...)
}

func (e *encoder) shortBytes(b []byte) {
	e.shortLen(len(b), "[short bytes]")
	e.b = append(e.b, b...)
}

func (e *encoder) value(v Value, ver Version) {
	switch v.Kind {
	case Null:
		e.int(-1)
	case Unset:
		if ver < V4 {
			e.failf("unset values need protocol v4")
		}
		e.int(-2)
	default:
		e.intLen(len(v.Bytes), "a [value]")
		e.b = append(e.b, v.Bytes...)
	}
}

func (e *encoder) stringList(l []string) {
	e.shortLen(len(l), "a [string list]")
	for _, s := range l {
		e.string(s)
	}
}

func (e *encoder) stringMap(m map[string]string) {
	e.shortLen(len(m), "a [string map]")
	for _, k := range sortedKeys(m) {
		e.string(k)
		e.string(m[k])
	}
}

func (e *encoder) stringMultimap(m map[string][]string) {
	e.shortLen(len(m), "a [string multimap]")
	for _, k := range sortedKeys(m) {
		e.string(k)
		e.stringList(m[k])
	}
}

func (e *encoder) bytesMap(m map[string][]byte) {
	e.shortLen(len(m), "a [bytes map]")
	for _, k := range sortedKeys(m) {
		e.string(k)
		e.bytes(m[k])
	}
}

func (e *encoder) inet(a netip.AddrPort) {
	ip := a.Addr()
	if !ip.IsValid() {
		e.failf("invalid address %v", a)
		return
	}
	s := ip.AsSlice()
	e.byte(byte(len(s)))
	e.b = append(e.b, s...)
	e.int(int32(a.Port()))
}
