package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/sedimentdb/sediment/internal/storage"
)

// ErrProtocol marks bytes from a peer that are not a valid frame or body.
var ErrProtocol = errors.New("rpc: protocol error")

// DefaultMaxFrame bounds a frame's length field unless Options say
// otherwise: twice the default commitlog segment (32 MiB), the bound of a
// mutation's record, so that at default settings the frame limit never
// refuses a write the node would take. Raise it with the segment size.
const DefaultMaxFrame = 64 << 20

// headerLen is the length field, the stream ID and the op.
const headerLen = 4 + 4 + 1

// Ops. Requests have the high bit clear, responses set.
const (
	opApply    byte = 0x01
	opScan     byte = 0x02
	opApplyIf  byte = 0x03
	opTruncate byte = 0x04
	opFlush    byte = 0x05

	opAck     byte = 0x81 // Apply, Truncate or Flush succeeded; empty body
	opPage    byte = 0x82 // Scan's page
	opApplied byte = 0x83 // ApplyIf's outcome
	opError   byte = 0xff // any request failed
)

// frame is one decoded frame; body aliases the buffer it was read into.
type frame struct {
	stream uint32
	op     byte
	body   []byte
}

// startFrame appends a frame header whose length is patched by endFrame
// once the body is appended after it.
func startFrame(dst []byte, stream uint32, op byte) ([]byte, int) {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, stream)
	return append(dst, op), start
}

func endFrame(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// readFrame reads one frame from r into buf (grown if needed) and returns
// it with the buffer. The length field is checked against max before
// anything is allocated for the body.
func readFrame(r io.Reader, buf []byte, max int) (frame, []byte, error) {
	var hdr [headerLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, buf, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < headerLen-4 {
		return frame{}, buf, fmt.Errorf("%w: frame length %d shorter than its header", ErrProtocol, n)
	}
	if uint64(n) > uint64(max) {
		return frame{}, buf, fmt.Errorf("%w: frame of %d bytes, at most %d", ErrProtocol, n, max)
	}
	size := int(n) - (headerLen - 4)
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return frame{}, buf, err
	}
	return frame{stream: binary.BigEndian.Uint32(hdr[4:8]), op: hdr[8], body: buf}, buf, nil
}

// decoder reads a body; the first failure sticks, so callers check once.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrProtocol, what)
	}
	d.b = nil
}

func (d *decoder) uvarint(what string) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes returns a length-prefixed byte string, aliasing the body.
func (d *decoder) bytes(what string) []byte {
	n := d.uvarint(what)
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte(what string) byte {
	if len(d.b) == 0 {
		d.fail(what)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// count reads an element count, refused if the remaining body cannot hold
// that many elements of at least min bytes each, so a lying count never
// makes the decoder allocate.
func (d *decoder) count(what string, min int) int {
	n := d.uvarint(what)
	if n > uint64(len(d.b)/min) {
		d.fail(what)
		return 0
	}
	return int(n)
}

func (d *decoder) end(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes after %s", ErrProtocol, len(d.b), what)
	}
	return d.err
}

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// table reads a table ID, which must fit its 32 bits.
func (d *decoder) table() storage.TableID {
	t := d.uvarint("table")
	if t > 1<<32-1 {
		d.fail("table")
	}
	return storage.TableID(t)
}

// entries reads an entry count, then each entry's key and value.
func (d *decoder) entries() []storage.Entry {
	es := make([]storage.Entry, d.count("entry count", 2))
	for i := range es {
		es[i] = storage.Entry{Key: d.bytes("key"), Value: d.bytes("value")}
	}
	return es
}

func appendEntries(dst []byte, es []storage.Entry) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	for _, e := range es {
		dst = appendBytes(dst, e.Key)
		dst = appendBytes(dst, e.Value)
	}
	return dst
}

// appendApply appends the body of an Apply request.
func appendApply(dst []byte, timeout uint64, m *storage.Mutation) []byte {
	dst = binary.AppendUvarint(dst, timeout)
	dst = binary.AppendUvarint(dst, uint64(m.Table))
	return appendEntries(dst, m.Entries)
}

// decodeApply decodes an Apply request; the mutation aliases body.
func decodeApply(body []byte) (timeout uint64, m *storage.Mutation, err error) {
	d := decoder{b: body}
	timeout = d.uvarint("timeout")
	m = &storage.Mutation{Table: d.table()}
	m.Entries = d.entries()
	if err := d.end("apply"); err != nil {
		return 0, nil, err
	}
	return timeout, m, nil
}

// appendApplyIf appends the body of an ApplyIf request.
func appendApplyIf(dst []byte, timeout uint64, m *storage.Mutation, want *Digest) []byte {
	dst = binary.AppendUvarint(dst, timeout)
	dst = binary.AppendUvarint(dst, uint64(m.Table))
	dst = appendBytes(dst, want[:])
	return appendEntries(dst, m.Entries)
}

// decodeApplyIf decodes an ApplyIf request; the mutation aliases body.
func decodeApplyIf(body []byte) (timeout uint64, m *storage.Mutation, want Digest, err error) {
	d := decoder{b: body}
	timeout = d.uvarint("timeout")
	m = &storage.Mutation{Table: d.table()}
	if b := d.bytes("digest"); len(b) == DigestSize {
		want = Digest(b)
	} else {
		d.fail("digest")
	}
	m.Entries = d.entries()
	if err := d.end("applyif"); err != nil {
		return 0, nil, Digest{}, err
	}
	return timeout, m, want, nil
}

// appendTruncate appends the body of a Truncate request.
func appendTruncate(dst []byte, timeout uint64, table storage.TableID) []byte {
	dst = binary.AppendUvarint(dst, timeout)
	return binary.AppendUvarint(dst, uint64(table))
}

func decodeTruncate(body []byte) (timeout uint64, table storage.TableID, err error) {
	d := decoder{b: body}
	timeout = d.uvarint("timeout")
	table = d.table()
	if err := d.end("truncate"); err != nil {
		return 0, 0, err
	}
	return timeout, table, nil
}

// appendFlush appends the body of a Flush request: its timeout alone.
func appendFlush(dst []byte, timeout uint64) []byte {
	return binary.AppendUvarint(dst, timeout)
}

func decodeFlush(body []byte) (timeout uint64, err error) {
	d := decoder{b: body}
	timeout = d.uvarint("timeout")
	if err := d.end("flush"); err != nil {
		return 0, err
	}
	return timeout, nil
}

// appendApplied appends the body of ApplyIf's answer.
func appendApplied(dst []byte, applied bool) []byte {
	if applied {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func decodeApplied(body []byte) (bool, error) {
	d := decoder{b: body}
	var applied bool
	switch d.byte("outcome") {
	case 0:
	case 1:
		applied = true
	default:
		d.fail("outcome")
	}
	if err := d.end("applied"); err != nil {
		return false, err
	}
	return applied, nil
}

// Scan flags.
const (
	flagReverse  = 1 << 0
	flagLower    = 1 << 1 // a lower bound follows
	flagUpper    = 1 << 2 // an upper bound follows
	flagsDefined = flagReverse | flagLower | flagUpper
)

func appendScan(dst []byte, timeout uint64, r *ScanRequest) []byte {
	dst = binary.AppendUvarint(dst, timeout)
	dst = binary.AppendUvarint(dst, uint64(r.Table))
	var flags byte
	if r.Reverse {
		flags |= flagReverse
	}
	if r.Lower != nil {
		flags |= flagLower
	}
	if r.Upper != nil {
		flags |= flagUpper
	}
	dst = append(dst, flags)
	if r.Lower != nil {
		dst = appendBytes(dst, r.Lower)
	}
	if r.Upper != nil {
		dst = appendBytes(dst, r.Upper)
	}
	return binary.AppendUvarint(dst, uint64(r.Limit))
}

// decodeScan decodes a Scan request; the bounds alias body.
func decodeScan(body []byte) (timeout uint64, r ScanRequest, err error) {
	d := decoder{b: body}
	timeout = d.uvarint("timeout")
	r.Table = d.table()
	flags := d.byte("flags")
	if flags&^flagsDefined != 0 {
		d.fail("flags")
	}
	r.Reverse = flags&flagReverse != 0
	if flags&flagLower != 0 {
		r.Lower = d.bytes("lower bound")
	}
	if flags&flagUpper != 0 {
		r.Upper = d.bytes("upper bound")
	}
	limit := d.uvarint("limit")
	if limit > maxLimit {
		d.fail("limit")
	}
	r.Limit = int(limit)
	if err := d.end("scan"); err != nil {
		return 0, ScanRequest{}, err
	}
	return timeout, r, nil
}

// maxLimit bounds a scan's entry limit on the wire, keeping it an int on
// every platform.
const maxLimit = 1<<31 - 1

func appendPage(dst []byte, p *Page) []byte {
	dst = appendEntries(dst, p.Entries)
	if p.Next == nil {
		dst = append(dst, 0)
	} else {
		dst = appendBytes(append(dst, 1), p.Next)
	}
	return binary.AppendUvarint(dst, p.Mark)
}

// decodePage decodes a Scan response; the page aliases body.
func decodePage(body []byte) (*Page, error) {
	d := decoder{b: body}
	p := &Page{Entries: d.entries()}
	switch d.byte("resume flag") {
	case 0:
	case 1:
		p.Next = d.bytes("resume key")
	default:
		d.fail("resume flag")
	}
	p.Mark = d.uvarint("commit mark")
	if err := d.end("page"); err != nil {
		return nil, err
	}
	return p, nil
}

func appendError(dst []byte, err error) []byte {
	dst = binary.AppendUvarint(dst, uint64(codeOf(err)))
	return appendBytes(dst, []byte(err.Error()))
}

// decodeError decodes an error response into the *Error it carries.
func decodeError(body []byte) error {
	d := decoder{b: body}
	c := d.uvarint("error code")
	msg := d.bytes("error message")
	if err := d.end("error"); err != nil {
		return err
	}
	if c > 255 {
		c = uint64(CodeInternal)
	}
	return &Error{Code: Code(c), Message: string(msg)}
}
