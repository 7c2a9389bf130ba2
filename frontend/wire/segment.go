package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// Segments: the v5 outer framing.
//
// From protocol v5, once STARTUP is answered (READY or AUTHENTICATE),
// every byte of a connection travels in segments ("frames" in the v5
// spec, whose v4 frames it calls envelopes). A segment's integers are
// little-endian, unlike the rest of the protocol:
//
//	uncompressed: 6-byte header, payload, 4-byte CRC32 of the payload
//	  bits 0-16   payload length (at most MaxSegmentPayload)
//	  bit  17     self-contained
//	  bits 18-23  padding (0)
//	  bits 24-47  CRC24 of the 3 bytes above
//
//	lz4: 8-byte header, payload, 4-byte CRC32 of the payload as sent
//	  bits 0-16   payload length as sent
//	  bits 17-33  uncompressed length; 0: the payload is not compressed
//	  bit  34     self-contained
//	  bits 35-39  padding (0)
//	  bits 40-63  CRC24 of the 5 bytes above
//
// The payload of a self-contained segment is one or more whole envelopes.
// An envelope longer than a segment travels alone, split over segments
// that are not self-contained, in order. A compressed payload is one raw
// LZ4 block (without the 4-byte length prefix of v4 bodies).
//
// The CRC24 is Cassandra's: polynomial 0x1974F0B, initial value
// 0x875060, fed the header bytes in order. The CRC32 is the IEEE one
// primed with the four bytes FA 2D 55 CA before the payload.

// MaxSegmentPayload is the most bytes a segment's payload holds, before
// and after compression.
const MaxSegmentPayload = 1<<17 - 1

// Segment header lengths and the trailer's.
const (
	segmentHeaderSize    = 6
	lz4SegmentHeaderSize = 8
	segmentTrailerSize   = 4
)

// ErrCorruptSegment matches a segment whose header or payload does not
// match its CRC, or whose lengths are out of bounds: the stream can no
// longer be trusted.
var ErrCorruptSegment = errors.New("wire: corrupt segment")

// crc24 is Cassandra's CRC24 of the first n bytes of v, least
// significant first.
func crc24(v uint64, n int) uint32 {
	crc := uint32(0x875060)
	for ; n > 0; n-- {
		crc ^= uint32(v&0xff) << 16
		v >>= 8
		for range 8 {
			crc <<= 1
			if crc&0x1000000 != 0 {
				crc ^= 0x1974F0B
			}
		}
	}
	return crc
}

// crcPrime is what Cassandra's CRC32 of a payload starts from: the IEEE
// CRC32 of FA 2D 55 CA.
var crcPrime = crc32.ChecksumIEEE([]byte{0xFA, 0x2D, 0x55, 0xCA})

func payloadCRC(p []byte) uint32 { return crc32.Update(crcPrime, crc32.IEEETable, p) }

// SegmentHeader is a decoded segment header.
type SegmentHeader struct {
	// Length is the payload's length as sent.
	Length int
	// Uncompressed is, for an lz4 segment whose payload is compressed,
	// the payload's length once decompressed; 0 otherwise.
	Uncompressed  int
	SelfContained bool
}

// SegmentHeaderSize is the header length of segments with or without lz4.
func SegmentHeaderSize(lz4 bool) int {
	if lz4 {
		return lz4SegmentHeaderSize
	}
	return segmentHeaderSize
}

func putUint24(b []byte, v uint32) { b[0], b[1], b[2] = byte(v), byte(v>>8), byte(v>>16) }

func uint24(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 }

// DecodeSegmentHeader decodes the SegmentHeaderSize(lz4) bytes of b.
func DecodeSegmentHeader(b []byte, lz4 bool) (SegmentHeader, error) {
	var v uint64
	n := 3
	if lz4 {
		n = 5
	}
	if len(b) < n+3 {
		return SegmentHeader{}, fmt.Errorf("%w: header of %d bytes", ErrCorruptSegment, len(b))
	}
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	if got, want := uint24(b[n:]), crc24(v, n); got != want {
		return SegmentHeader{}, fmt.Errorf("%w: header CRC24 %06x, computed %06x", ErrCorruptSegment, got, want)
	}
	h := SegmentHeader{Length: int(v & MaxSegmentPayload)}
	if lz4 {
		h.Uncompressed = int(v >> 17 & MaxSegmentPayload)
		h.SelfContained = v&(1<<34) != 0
	} else {
		h.SelfContained = v&(1<<17) != 0
	}
	return h, nil
}

// appendSegmentHeader appends h's header.
func appendSegmentHeader(dst []byte, h SegmentHeader, lz4 bool) []byte {
	v := uint64(h.Length)
	n := 3
	if lz4 {
		n = 5
		v |= uint64(h.Uncompressed) << 17
		if h.SelfContained {
			v |= 1 << 34
		}
	} else if h.SelfContained {
		v |= 1 << 17
	}
	for i := range n {
		dst = append(dst, byte(v>>(8*i)))
	}
	var c [3]byte
	putUint24(c[:], crc24(v, n))
	return append(dst, c[:]...)
}

// AppendSegment appends one segment carrying payload, which must hold at
// most MaxSegmentPayload bytes. With lz4 the payload is compressed
// unless compression does not make it shorter.
func AppendSegment(dst, payload []byte, selfContained, lz4 bool) []byte {
	if len(payload) > MaxSegmentPayload {
		panic(fmt.Sprintf("wire: segment payload of %d bytes", len(payload)))
	}
	start := len(dst)
	h := SegmentHeader{Length: len(payload), SelfContained: selfContained}
	dst = appendSegmentHeader(dst, h, lz4)
	body := len(dst)
	if lz4 && len(payload) > 0 {
		if n := compressLZ4Block(&dst, payload); n > 0 && n < len(payload) {
			h.Length, h.Uncompressed = n, len(payload)
			dst = appendSegmentHeader(dst[:start], h, true)[:body+n]
			return binary.LittleEndian.AppendUint32(dst, payloadCRC(dst[body:]))
		}
		dst = dst[:body]
	}
	dst = append(dst, payload...)
	return binary.LittleEndian.AppendUint32(dst, payloadCRC(payload))
}

// compressLZ4Block compresses src into one LZ4 block after *dst's
// length, returning the block's length, or 0 when it does not fit in a
// segment.
func compressLZ4Block(dst *[]byte, src []byte) int {
	start := len(*dst)
	bound := lz4.CompressBlockBound(len(src))
	*dst = slices.Grow(*dst, bound)
	n, err := lz4.CompressBlock(src, (*dst)[start:start+bound], nil)
	if err != nil || n > MaxSegmentPayload {
		return 0
	}
	*dst = (*dst)[:start+n]
	return n
}

// AppendSegments appends envelopes, a sequence of whole envelopes (as
// AppendFrame appends them), in segments: envelopes that fit are packed
// together in self-contained segments, and each longer one is split over
// segments of its own that are not self-contained.
func AppendSegments(dst, envelopes []byte, lz4 bool) ([]byte, error) {
	packed := 0 // start of the envelopes not yet in a segment
	for off := 0; off < len(envelopes); {
		if len(envelopes)-off < HeaderSize {
			return dst, fmt.Errorf("wire: %d bytes after the last envelope", len(envelopes)-off)
		}
		n := HeaderSize + int(binary.BigEndian.Uint32(envelopes[off+5:]))
		if n > len(envelopes)-off {
			return dst, fmt.Errorf("wire: envelope of %d bytes with %d left", n, len(envelopes)-off)
		}
		if n > MaxSegmentPayload {
			if packed < off {
				dst = AppendSegment(dst, envelopes[packed:off], true, lz4)
			}
			for big := envelopes[off : off+n]; len(big) > 0; {
				k := min(len(big), MaxSegmentPayload)
				dst = AppendSegment(dst, big[:k], false, lz4)
				big = big[k:]
			}
			off += n
			packed = off
			continue
		}
		if off+n-packed > MaxSegmentPayload {
			dst = AppendSegment(dst, envelopes[packed:off], true, lz4)
			packed = off
		}
		off += n
	}
	if packed < len(envelopes) {
		dst = AppendSegment(dst, envelopes[packed:], true, lz4)
	}
	return dst, nil
}

// DecodeSegment decodes the segment at the start of b, appending its
// payload, decompressed, to dst. It returns the payload appended, the
// header and the bytes the segment took; io.ErrUnexpectedEOF when b is
// shorter than the segment, an error matching ErrCorruptSegment when it
// is malformed.
func DecodeSegment(dst, b []byte, lz4 bool) ([]byte, SegmentHeader, int, error) {
	hs := SegmentHeaderSize(lz4)
	if len(b) < hs {
		return dst, SegmentHeader{}, 0, io.ErrUnexpectedEOF
	}
	h, err := DecodeSegmentHeader(b[:hs], lz4)
	if err != nil {
		return dst, h, 0, err
	}
	n := hs + h.Length + segmentTrailerSize
	if len(b) < n {
		return dst, h, 0, io.ErrUnexpectedEOF
	}
	dst, err = h.decodePayload(dst, b[hs:hs+h.Length], b[hs+h.Length:n])
	return dst, h, n, err
}

// checkPayload checks payload against trailer, its CRC32.
func (h SegmentHeader) checkPayload(payload, trailer []byte) error {
	if got, want := binary.LittleEndian.Uint32(trailer), payloadCRC(payload); got != want {
		return fmt.Errorf("%w: payload CRC32 %08x, computed %08x", ErrCorruptSegment, got, want)
	}
	return nil
}

// decodePayload checks payload against trailer and appends it
// decompressed to dst.
func (h SegmentHeader) decodePayload(dst, payload, trailer []byte) ([]byte, error) {
	if err := h.checkPayload(payload, trailer); err != nil {
		return dst, err
	}
	if h.Uncompressed == 0 {
		return append(dst, payload...), nil
	}
	start := len(dst)
	dst = slices.Grow(dst, h.Uncompressed)[:start+h.Uncompressed]
	got, err := lz4.UncompressBlock(payload, dst[start:])
	if err != nil || got != h.Uncompressed {
		return dst[:start], fmt.Errorf("%w: malformed LZ4 payload", ErrCorruptSegment)
	}
	return dst, nil
}

// SegmentReader reads the envelopes a stream of segments carries, as
// one stream of bytes: ReadFrame reads envelopes from it as it reads v4
// frames from a connection. It checks every segment's CRCs. Envelopes
// are read across segment boundaries wherever they fall, so a sender
// that splits them otherwise than AppendSegments does is still
// understood; CRCs, not boundaries, guard the stream.
//
// Small segments are read into buffers of the reader's own; a segment
// over keptSegmentBuffer borrows a buffer of a pool shared by all
// readers until its payload is read, so that an idle connection holds
// little and a busy one allocates nothing.
type SegmentReader struct {
	r   io.Reader
	lz4 bool
	hdr [lz4SegmentHeaderSize]byte
	// raw holds the current segment's payload and trailer, buf the
	// payload to read: in raw, or decompressed.
	raw, buf []byte
	off      int // bytes of buf already read
	// small are the reader's own buffers for raw and decompressed
	// payloads; borrowed are the pool's, given back by next.
	small    [2][]byte
	borrowed [2]*[]byte
	err      error
}

// keptSegmentBuffer is the largest segment a SegmentReader reads into
// buffers of its own.
const keptSegmentBuffer = 16 << 10

// segmentPool holds buffers for the largest segments, with their trailer.
var segmentPool = sync.Pool{New: func() any {
	b := make([]byte, MaxSegmentPayload+segmentTrailerSize)
	return &b
}}

// NewSegmentReader returns a reader of the segments r carries, with
// lz4 when that compression was agreed in STARTUP.
func NewSegmentReader(r io.Reader, lz4 bool) *SegmentReader {
	return &SegmentReader{r: r, lz4: lz4}
}

// Read reads payload bytes, reading the next segment when the current
// one is consumed. An error matching ErrCorruptSegment ends the stream.
func (s *SegmentReader) Read(p []byte) (int, error) {
	for s.off == len(s.buf) {
		if s.err != nil {
			return 0, s.err
		}
		if s.err = s.next(); s.err != nil && s.off == len(s.buf) {
			return 0, s.err
		}
	}
	n := copy(p, s.buf[s.off:])
	s.off += n
	return n, nil
}

// buffer returns n bytes of buffer i (0 raw, 1 decompressed).
func (s *SegmentReader) buffer(i, n int) []byte {
	if n > keptSegmentBuffer {
		b := segmentPool.Get().(*[]byte)
		s.borrowed[i] = b
		return (*b)[:n]
	}
	if cap(s.small[i]) < n {
		s.small[i] = make([]byte, keptSegmentBuffer+segmentTrailerSize)
	}
	return s.small[i][:n]
}

// next reads one segment, once the previous one is consumed.
func (s *SegmentReader) next() error {
	for i, b := range s.borrowed {
		if b != nil {
			segmentPool.Put(b)
			s.borrowed[i] = nil
		}
	}
	s.raw, s.buf, s.off = nil, nil, 0
	hs := SegmentHeaderSize(s.lz4)
	if _, err := io.ReadFull(s.r, s.hdr[:hs]); err != nil {
		return err
	}
	h, err := DecodeSegmentHeader(s.hdr[:hs], s.lz4)
	if err != nil {
		return err
	}
	s.raw = s.buffer(0, h.Length+segmentTrailerSize)
	if _, err := io.ReadFull(s.r, s.raw); err != nil {
		return unexpectedEOF(err)
	}
	payload, trailer := s.raw[:h.Length], s.raw[h.Length:]
	if h.Uncompressed == 0 {
		// Read in place.
		if err := h.checkPayload(payload, trailer); err != nil {
			return err
		}
		s.buf = payload
		return nil
	}
	buf, err := h.decodePayload(s.buffer(1, h.Uncompressed)[:0], payload, trailer)
	if err != nil {
		return err
	}
	s.buf = buf
	return nil
}

// Buffered returns the payload bytes read from segments and not yet
// from s.
func (s *SegmentReader) Buffered() int { return len(s.buf) - s.off }
