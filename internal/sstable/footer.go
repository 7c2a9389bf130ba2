package sstable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// ErrCorrupt marks every error caused by bytes that do not form a valid
// table: bad checksums, impossible lengths, undecodable blocks.
var ErrCorrupt = errors.New("sstable: corrupt table")

// FormatVersion is the version this package writes. Readers accept it only.
const FormatVersion = 1

const (
	magic     = "sediment"
	footerLen = 64
)

// blockHandle locates a physical block (payload and trailer) in the table.
type blockHandle struct {
	offset, length uint64
}

func (h blockHandle) end() uint64 { return h.offset + h.length }

func appendHandle(dst []byte, h blockHandle) []byte {
	dst = binary.AppendUvarint(dst, h.offset)
	return binary.AppendUvarint(dst, h.length)
}

func decodeHandle(b []byte) (blockHandle, bool) {
	off, n := binary.Uvarint(b)
	if n <= 0 {
		return blockHandle{}, false
	}
	l, m := binary.Uvarint(b[n:])
	return blockHandle{off, l}, m > 0 && n+m == len(b)
}

// footer is the fixed-size end of a table.
type footer struct {
	index, filter, props blockHandle
	version              uint32
}

func (f *footer) encode() []byte {
	b := make([]byte, 0, footerLen)
	for _, h := range []blockHandle{f.index, f.filter, f.props} {
		b = binary.LittleEndian.AppendUint64(b, h.offset)
		b = binary.LittleEndian.AppendUint64(b, h.length)
	}
	b = binary.LittleEndian.AppendUint32(b, f.version)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	return append(b, magic...)
}

// decodeFooter parses the last footerLen bytes of a table of the given size
// and checks that the handles lie inside it.
func decodeFooter(b []byte, size int64) (footer, error) {
	var f footer
	if len(b) != footerLen || string(b[56:]) != magic {
		return f, fmt.Errorf("%w: bad magic (not an sstable)", ErrCorrupt)
	}
	if got, want := crc32.Checksum(b[:52], crcTable), binary.LittleEndian.Uint32(b[52:]); got != want {
		return f, fmt.Errorf("%w: footer checksum mismatch", ErrCorrupt)
	}
	hs := []*blockHandle{&f.index, &f.filter, &f.props}
	for i, h := range hs {
		h.offset = binary.LittleEndian.Uint64(b[16*i:])
		h.length = binary.LittleEndian.Uint64(b[16*i+8:])
	}
	f.version = binary.LittleEndian.Uint32(b[48:])
	if f.version != FormatVersion {
		return f, fmt.Errorf("%w: unsupported format version %d", ErrCorrupt, f.version)
	}
	// The metadata blocks are written back to back before the footer. Each
	// handle is checked on its own first, so no sum below can overflow.
	limit := uint64(size - footerLen)
	for _, h := range hs {
		if h.length > limit || h.offset > limit-h.length {
			return f, fmt.Errorf("%w: footer handle beyond the table", ErrCorrupt)
		}
	}
	if f.filter.offset != f.index.end() || f.props.offset != f.filter.end() || f.props.end() != limit {
		return f, fmt.Errorf("%w: footer handles do not tile the metadata", ErrCorrupt)
	}
	return f, nil
}
