package model

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrCorrupt marks a value that cannot be decoded. Errors that wrap it say
// what is wrong.
var ErrCorrupt = errors.New("model: corrupt value")

// Kind tells a header value from a row value.
type Kind uint8

// Kinds of value, as stored in the high nibble of the tag byte.
const (
	KindHeader Kind = 1
	KindRow    Kind = 2
)

func (k Kind) String() string {
	switch k {
	case KindHeader:
		return "header"
	case KindRow:
		return "row"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Version is the format version written in the low nibble of the tag byte.
const Version = 1

const (
	tagHeader = byte(KindHeader)<<4 | Version
	tagRow    = byte(KindRow)<<4 | Version
)

// KindOf returns the kind of an encoded value, checking its tag byte.
func KindOf(value []byte) (Kind, error) {
	if len(value) == 0 {
		return 0, fmt.Errorf("%w: empty value", ErrCorrupt)
	}
	switch tag := value[0]; tag {
	case tagHeader:
		return KindHeader, nil
	case tagRow:
		return KindRow, nil
	default:
		if k := Kind(tag >> 4); k == KindHeader || k == KindRow {
			return 0, fmt.Errorf("%w: unsupported format version %d", ErrCorrupt, tag&0x0f)
		}
		return 0, fmt.Errorf("%w: unknown tag %#02x", ErrCorrupt, tag)
	}
}

// Row flags.
const (
	rowLiveness         = 1 << 0
	rowLivenessExpiring = 1 << 1
	rowDeletion         = 1 << 2
	rowColumnDeletions  = 1 << 3
	rowCells            = 1 << 4
	rowLocalTimes       = 1 << 5
	rowFlags            = 1<<6 - 1

	rowTimestamps = rowLiveness | rowDeletion | rowColumnDeletions | rowCells
)

// Cell flags.
const (
	cellTombstone = 1 << 0
	cellExpiring  = 1 << 1
	cellPath      = 1 << 2
	cellNewColumn = 1 << 3
	cellFlags     = 1<<4 - 1
)

// Header flags.
const (
	headerDeletion        = 1 << 0
	headerRangeTombstones = 1 << 1
	headerStatic          = 1 << 2
	headerFlags           = 1<<3 - 1
)

// AppendRow appends the encoding of r to dst. A row not in normal form is
// encoded as the normal form of a copy; r itself is not changed.
func AppendRow(dst []byte, r *Row) []byte {
	if checkRow(r, Live) != "" {
		n := Row{
			Liveness:        r.Liveness,
			Deletion:        r.Deletion,
			ColumnDeletions: slices.Clone(r.ColumnDeletions),
			Cells:           slices.Clone(r.Cells),
		}
		n.Normalize()
		r = &n
	}
	return appendRow(dst, r)
}

func appendRow(dst []byte, r *Row) []byte {
	return appendRowBody(append(dst, tagRow), r)
}

// AppendHeader appends the encoding of h to dst. A header not in normal form
// is encoded as the normal form of a copy; h itself is not changed.
func AppendHeader(dst []byte, h *Header) []byte {
	if checkHeader(h) != "" {
		n := Header{
			Deletion: h.Deletion,
			Static: Row{
				Liveness:        h.Static.Liveness,
				Deletion:        h.Static.Deletion,
				ColumnDeletions: slices.Clone(h.Static.ColumnDeletions),
				Cells:           slices.Clone(h.Static.Cells),
			},
			RangeTombstones: slices.Clone(h.RangeTombstones),
		}
		n.Normalize()
		h = &n
	}
	return appendHeader(dst, h)
}

func appendHeader(dst []byte, h *Header) []byte {
	var flags byte
	var tsBase, ltBase int64 = math.MaxInt64, math.MaxInt64
	if !h.Deletion.IsLive() {
		flags |= headerDeletion
		tsBase, ltBase = h.Deletion.MarkedForDeleteAt, h.Deletion.LocalDeletionTime
	}
	if len(h.RangeTombstones) > 0 {
		flags |= headerRangeTombstones
		for i := range h.RangeTombstones {
			d := h.RangeTombstones[i].Deletion
			tsBase, ltBase = min(tsBase, d.MarkedForDeleteAt), min(ltBase, d.LocalDeletionTime)
		}
	}
	if !h.Static.IsEmpty() {
		flags |= headerStatic
	}
	dst = append(dst, tagHeader, flags)
	if flags&(headerDeletion|headerRangeTombstones) != 0 {
		dst = appendVarint(dst, tsBase)
		dst = appendVarint(dst, ltBase)
	}
	if flags&headerDeletion != 0 {
		dst = appendDeletion(dst, h.Deletion, tsBase, ltBase)
	}
	if flags&headerRangeTombstones != 0 {
		dst = appendUvarint(dst, uint64(len(h.RangeTombstones)))
		for i := range h.RangeTombstones {
			t := &h.RangeTombstones[i]
			dst = appendUvarint(dst, uint64(len(t.Start)))
			dst = append(dst, t.Start...)
			// 0 means unbounded, so a bounded end's length is stored plus one.
			if len(t.End) == 0 {
				dst = append(dst, 0)
			} else {
				dst = appendUvarint(dst, uint64(len(t.End))+1)
				dst = append(dst, t.End...)
			}
			dst = appendDeletion(dst, t.Deletion, tsBase, ltBase)
		}
	}
	if flags&headerStatic != 0 {
		dst = appendRowBody(dst, &h.Static)
	}
	return dst
}

// appendRowBody encodes the normal row r without a tag.
func appendRowBody(dst []byte, r *Row) []byte {
	var flags byte
	var tsBase, ltBase int64 = math.MaxInt64, math.MaxInt64
	ts := func(t int64) { tsBase = min(tsBase, t) }
	lt := func(t int64) {
		flags |= rowLocalTimes
		ltBase = min(ltBase, t)
	}
	if r.Liveness.Present {
		flags |= rowLiveness
		ts(r.Liveness.Timestamp)
		if r.Liveness.expiring() {
			flags |= rowLivenessExpiring
			lt(r.Liveness.Expires)
		}
	}
	if !r.Deletion.IsLive() {
		flags |= rowDeletion
		ts(r.Deletion.MarkedForDeleteAt)
		lt(r.Deletion.LocalDeletionTime)
	}
	if len(r.ColumnDeletions) > 0 {
		flags |= rowColumnDeletions
		for _, cd := range r.ColumnDeletions {
			ts(cd.Deletion.MarkedForDeleteAt)
			lt(cd.Deletion.LocalDeletionTime)
		}
	}
	if len(r.Cells) > 0 {
		flags |= rowCells
		for i := range r.Cells {
			c := &r.Cells[i]
			ts(c.Timestamp)
			if c.kind() != kindRegular {
				lt(c.LocalDeletionTime)
			}
		}
	}

	dst = append(dst, flags)
	if flags&rowTimestamps != 0 {
		dst = appendVarint(dst, tsBase)
	}
	if flags&rowLocalTimes != 0 {
		dst = appendVarint(dst, ltBase)
	}
	if flags&rowLiveness != 0 {
		dst = appendUvarint(dst, delta(r.Liveness.Timestamp, tsBase))
		if flags&rowLivenessExpiring != 0 {
			dst = appendUvarint(dst, uint64(r.Liveness.TTL))
			dst = appendUvarint(dst, delta(r.Liveness.Expires, ltBase))
		}
	}
	if flags&rowDeletion != 0 {
		dst = appendDeletion(dst, r.Deletion, tsBase, ltBase)
	}
	if flags&rowColumnDeletions != 0 {
		dst = appendUvarint(dst, uint64(len(r.ColumnDeletions)))
		for i, cd := range r.ColumnDeletions {
			col := uint64(cd.Column)
			if i > 0 {
				col -= uint64(r.ColumnDeletions[i-1].Column) + 1
			}
			dst = appendUvarint(dst, col)
			dst = appendDeletion(dst, cd.Deletion, tsBase, ltBase)
		}
	}
	if flags&rowCells != 0 {
		dst = appendUvarint(dst, uint64(len(r.Cells)))
		for i := range r.Cells {
			dst = appendCell(dst, r.Cells, i, tsBase, ltBase)
		}
	}
	return dst
}

func appendCell(dst []byte, cells []Cell, i int, tsBase, ltBase int64) []byte {
	c := &cells[i]
	var flags byte
	kind := c.kind()
	switch kind {
	case kindTombstone:
		flags |= cellTombstone
	case kindExpiring:
		flags |= cellExpiring
	}
	if len(c.Path) > 0 {
		flags |= cellPath
	}
	newColumn := i == 0 || cells[i-1].Column != c.Column
	if newColumn {
		flags |= cellNewColumn
	}
	dst = append(dst, flags)
	if newColumn {
		col := uint64(c.Column)
		if i > 0 {
			col -= uint64(cells[i-1].Column) + 1
		}
		dst = appendUvarint(dst, col)
	}
	if len(c.Path) > 0 {
		dst = appendUvarint(dst, uint64(len(c.Path)))
		dst = append(dst, c.Path...)
	}
	dst = appendUvarint(dst, delta(c.Timestamp, tsBase))
	switch kind {
	case kindTombstone:
		return appendUvarint(dst, delta(c.LocalDeletionTime, ltBase))
	case kindExpiring:
		dst = appendUvarint(dst, uint64(c.TTL))
		dst = appendUvarint(dst, delta(c.LocalDeletionTime, ltBase))
	}
	dst = appendUvarint(dst, uint64(len(c.Value)))
	return append(dst, c.Value...)
}

func appendDeletion(dst []byte, d Deletion, tsBase, ltBase int64) []byte {
	dst = appendUvarint(dst, delta(d.MarkedForDeleteAt, tsBase))
	return appendUvarint(dst, delta(d.LocalDeletionTime, ltBase))
}

// delta returns t - base for t >= base; it cannot overflow in uint64.
func delta(t, base int64) uint64 { return uint64(t) - uint64(base) }

func appendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// appendVarint writes v zigzag-encoded, so small negative bases stay short.
func appendVarint(dst []byte, v int64) []byte {
	return appendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

// DecodeRow decodes an encoded row into r, reusing r's slices. r's cell
// paths and values alias b, so b must not change while r is in use.
func DecodeRow(b []byte, r *Row) error {
	r.Reset()
	if k, err := KindOf(b); err != nil {
		return err
	} else if k != KindRow {
		return fmt.Errorf("%w: %s where a row was expected", ErrCorrupt, k)
	}
	d := decoder{b: b[1:]}
	d.row(r)
	if d.err == nil && len(d.b) > 0 {
		d.fail("trailing bytes")
	}
	if d.err == nil {
		if msg := checkRow(r, Live); msg != "" {
			d.fail(msg)
		}
	}
	return d.err
}

// DecodeHeader decodes an encoded header into h, reusing h's slices. h's
// bounds and static cells alias b, so b must not change while h is in use.
func DecodeHeader(b []byte, h *Header) error {
	h.Reset()
	if k, err := KindOf(b); err != nil {
		return err
	} else if k != KindHeader {
		return fmt.Errorf("%w: %s where a header was expected", ErrCorrupt, k)
	}
	d := decoder{b: b[1:]}
	d.header(h)
	if d.err == nil && len(d.b) > 0 {
		d.fail("trailing bytes")
	}
	if d.err == nil {
		if msg := checkHeader(h); msg != "" {
			d.fail(msg)
		}
	}
	return d.err
}

// decoder reads the encoding. Its first error sticks: later reads return
// zero values, so callers check err once per structure.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, msg)
		d.b = nil
	}
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// uvarint reads a varint written by appendUvarint, rejecting overlong and
// non-minimal encodings so that every value has exactly one encoding.
func (d *decoder) uvarint() uint64 {
	if len(d.b) > 0 && d.b[0] < 0x80 {
		// Most varints here are deltas and lengths that fit one byte.
		v := uint64(d.b[0])
		d.b = d.b[1:]
		return v
	}
	return d.uvarintSlow()
}

func (d *decoder) uvarintSlow() uint64 {
	var v uint64
	for i := 0; i < len(d.b); i++ {
		c := d.b[i]
		if i == 9 && c > 1 {
			d.fail("varint overflows 64 bits")
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				d.fail("non-minimal varint")
				return 0
			}
			d.b = d.b[i+1:]
			return v
		}
	}
	d.fail("truncated varint")
	return 0
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) bytes(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.fail("length exceeds value")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// count reads a count of items that each take at least one byte, so that a
// corrupt count cannot make the caller allocate beyond the value's size.
func (d *decoder) count() int {
	n := d.uvarint()
	if d.err == nil && (n == 0 || n > uint64(len(d.b))) {
		d.fail("bad count")
		return 0
	}
	return int(n)
}

// base is a delta-encoding base together with the smallest delta read
// against it, which must be 0: the encoder always picks the minimum.
type base struct {
	v        int64
	present  bool
	minDelta uint64
}

func (d *decoder) base() base { return base{v: d.varint(), present: true, minDelta: math.MaxUint64} }

func (d *decoder) delta(b *base) int64 {
	if !b.present {
		d.fail("time without a base")
		return 0
	}
	u := d.uvarint()
	if u > uint64(math.MaxInt64)-uint64(b.v) {
		d.fail("time overflows")
		return 0
	}
	b.minDelta = min(b.minDelta, u)
	return int64(uint64(b.v) + u)
}

func (d *decoder) checkBase(b *base) {
	if b.present && b.minDelta != 0 {
		d.fail("base is not the minimum")
	}
}

func (d *decoder) deletion(ts, lt *base) Deletion {
	del := Deletion{MarkedForDeleteAt: d.delta(ts), LocalDeletionTime: d.delta(lt)}
	if d.err == nil && del.IsLive() {
		d.fail("encoded deletion is live")
	}
	return del
}

func (d *decoder) ttl() int32 {
	v := d.uvarint()
	if d.err == nil && (v == 0 || v > math.MaxInt32) {
		d.fail("bad ttl")
	}
	return int32(v)
}

func (d *decoder) row(r *Row) {
	flags := d.byte()
	if flags&^rowFlags != 0 || flags&rowLivenessExpiring != 0 && flags&rowLiveness == 0 {
		d.fail("bad row flags")
		return
	}
	var ts, lt base
	if flags&rowTimestamps != 0 {
		ts = d.base()
	}
	if flags&rowLocalTimes != 0 {
		lt = d.base()
	}
	if flags&rowLiveness != 0 {
		r.Liveness = Liveness{Present: true, Timestamp: d.delta(&ts)}
		if flags&rowLivenessExpiring != 0 {
			r.Liveness.TTL = d.ttl()
			r.Liveness.Expires = d.delta(&lt)
		}
	}
	if flags&rowDeletion != 0 {
		r.Deletion = d.deletion(&ts, &lt)
	}
	if flags&rowColumnDeletions != 0 {
		n := d.count()
		r.ColumnDeletions = slices.Grow(r.ColumnDeletions[:0], n)
		var col uint64
		for i := 0; i < n && d.err == nil; i++ {
			v := d.uvarint()
			if i > 0 {
				v += col + 1
			}
			if v > math.MaxUint32 || (i > 0 && v <= col) {
				d.fail("bad column id")
				return
			}
			col = v
			r.ColumnDeletions = append(r.ColumnDeletions, ColumnDeletion{Column: uint32(col), Deletion: d.deletion(&ts, &lt)})
		}
	}
	if flags&rowCells != 0 {
		n := d.count()
		r.Cells = slices.Grow(r.Cells[:0], n)
		for i := 0; i < n && d.err == nil; i++ {
			r.Cells = append(r.Cells, Cell{})
			d.cell(r.Cells, i, &ts, &lt)
		}
	}
	if d.err == nil && flags&rowLocalTimes != 0 && lt.minDelta == math.MaxUint64 {
		d.fail("unused local time base")
	}
	d.checkBase(&ts)
	d.checkBase(&lt)
}

func (d *decoder) cell(cells []Cell, i int, ts, lt *base) {
	c := &cells[i]
	flags := d.byte()
	if flags&^cellFlags != 0 || flags&cellTombstone != 0 && flags&cellExpiring != 0 {
		d.fail("bad cell flags")
		return
	}
	switch {
	case flags&cellNewColumn != 0:
		v := d.uvarint()
		if i > 0 {
			v += uint64(cells[i-1].Column) + 1
			if v <= uint64(cells[i-1].Column) {
				d.fail("bad column id")
				return
			}
		}
		if v > math.MaxUint32 {
			d.fail("bad column id")
			return
		}
		c.Column = uint32(v)
	case i == 0:
		d.fail("first cell without a column")
		return
	default:
		c.Column = cells[i-1].Column
	}
	if flags&cellPath != 0 {
		n := d.uvarint()
		if d.err == nil && n == 0 {
			d.fail("empty cell path")
			return
		}
		c.Path = d.bytes(n)
	}
	c.Timestamp = d.delta(ts)
	switch {
	case flags&cellTombstone != 0:
		c.Tombstone = true
		c.LocalDeletionTime = d.delta(lt)
		return
	case flags&cellExpiring != 0:
		c.TTL = d.ttl()
		c.LocalDeletionTime = d.delta(lt)
	}
	c.Value = d.bytes(d.uvarint())
}

func (d *decoder) header(h *Header) {
	flags := d.byte()
	if flags&^headerFlags != 0 {
		d.fail("bad header flags")
		return
	}
	var ts, lt base
	if flags&(headerDeletion|headerRangeTombstones) != 0 {
		ts, lt = d.base(), d.base()
	}
	if flags&headerDeletion != 0 {
		h.Deletion = d.deletion(&ts, &lt)
	}
	if flags&headerRangeTombstones != 0 {
		n := d.count()
		h.RangeTombstones = slices.Grow(h.RangeTombstones[:0], n)
		for i := 0; i < n && d.err == nil; i++ {
			var t RangeTombstone
			t.Start = d.bytes(d.uvarint())
			if n := d.uvarint(); n > 0 {
				t.End = d.bytes(n - 1)
				if d.err == nil && len(t.End) == 0 {
					d.fail("empty range tombstone end")
				}
			}
			t.Deletion = d.deletion(&ts, &lt)
			h.RangeTombstones = append(h.RangeTombstones, t)
		}
	}
	d.checkBase(&ts)
	d.checkBase(&lt)
	if flags&headerStatic != 0 {
		d.row(&h.Static)
		if d.err == nil && h.Static.IsEmpty() {
			d.fail("empty static row")
		}
	}
}

// checkRow returns why the row r, covered by outer, is not in normal form,
// or "" if it is.
func checkRow(r *Row, outer Deletion) string {
	if !r.Deletion.IsLive() && !r.Deletion.Supersedes(outer) {
		return "row deletion shadowed"
	}
	active := maxDeletion(outer, r.Deletion)
	if r.Liveness.Present && active.Deletes(r.Liveness.Timestamp) {
		return "liveness shadowed by a deletion"
	}
	cds := r.ColumnDeletions
	for i := range cds {
		if i > 0 && cds[i].Column <= cds[i-1].Column {
			return "column deletions out of order"
		}
		if !cds[i].Deletion.Supersedes(active) {
			return "column deletion shadowed"
		}
	}
	for i := range r.Cells {
		c := &r.Cells[i]
		if i > 0 && compareCellKeys(&r.Cells[i-1], c) >= 0 {
			return "cells out of order"
		}
		for len(cds) > 0 && cds[0].Column < c.Column {
			cds = cds[1:]
		}
		if active.Deletes(c.Timestamp) || len(cds) > 0 && cds[0].Column == c.Column && cds[0].Deletion.Deletes(c.Timestamp) {
			return "cell shadowed by a deletion"
		}
	}
	return ""
}

// checkHeader returns why h is not in normal form, or "" if it is.
func checkHeader(h *Header) string {
	if msg := checkRow(&h.Static, h.Deletion); msg != "" {
		return "static row: " + msg
	}
	ts := h.RangeTombstones
	for i := range ts {
		t := &ts[i]
		if len(t.End) > 0 && bytes.Compare(t.Start, t.End) >= 0 {
			return "empty range tombstone"
		}
		if !t.Deletion.Supersedes(h.Deletion) {
			return "range tombstone shadowed"
		}
		if i == 0 {
			continue
		}
		p := &ts[i-1]
		switch c := bytes.Compare(p.End, t.Start); {
		case len(p.End) == 0 || c > 0:
			return "range tombstones overlap"
		case c == 0 && p.Deletion == t.Deletion:
			return "range tombstones not coalesced"
		}
	}
	return ""
}
