package sstable

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression names the codec of a stored block.
type Compression uint8

// The codecs. The numbers are part of the format: they are stored in every
// block trailer and in the properties.
const (
	NoCompression Compression = 0
	S2            Compression = 1
	LZ4           Compression = 2
	Zstd          Compression = 3
)

func (c Compression) String() string {
	switch c {
	case NoCompression:
		return "none"
	case S2:
		return "s2"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

func (c Compression) valid() bool { return c <= Zstd }

// ParseCompression maps a name printed by Compression.String back to its codec.
func ParseCompression(s string) (Compression, error) {
	for c := NoCompression; c <= Zstd; c++ {
		if c.String() == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("sstable: unknown compression %q", s)
}

const (
	trailerLen = 5 // compression type (1) + CRC32C (4)

	// maxDecodedLen bounds the allocation a block's declared decoded length
	// may cause, so a forged length cannot exhaust memory.
	maxDecodedLen = 256 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// The zstd codec objects are costly to build and safe for concurrent use
// through EncodeAll/DecodeAll, so one of each serves the process.
var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // only invalid options fail
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxDecodedLen))
		if err != nil {
			panic(err)
		}
		return d
	})
)

// compressor turns raw block contents into stored payloads. It reuses its
// buffers, so a payload is valid until the next call.
type compressor struct {
	kind Compression
	buf  []byte
	lz4  lz4.Compressor
}

// compress returns the stored payload of raw and the codec actually used:
// a block that does not shrink by at least 1/8 is stored uncompressed, since
// decompressing it would cost CPU for little saving.
func (c *compressor) compress(raw []byte) ([]byte, Compression) {
	if c.kind == NoCompression || len(raw) == 0 {
		return raw, NoCompression
	}
	hdr := binary.PutUvarint(c.grow(binary.MaxVarintLen64), uint64(len(raw)))
	var out []byte
	switch c.kind {
	case S2:
		dst := c.grow(hdr + s2.MaxEncodedLen(len(raw)))
		out = dst[:hdr+len(s2.Encode(dst[hdr:], raw))]
	case LZ4:
		dst := c.grow(hdr + lz4.CompressBlockBound(len(raw)))
		n, err := c.lz4.CompressBlock(raw, dst[hdr:])
		if err != nil || n == 0 { // incompressible
			return raw, NoCompression
		}
		out = dst[:hdr+n]
	case Zstd:
		dst := c.grow(hdr)
		out = zstdEncoder().EncodeAll(raw, dst[:hdr])
		c.buf = out[:0]
	}
	if len(out) >= len(raw)-len(raw)/8 {
		return raw, NoCompression
	}
	return out, c.kind
}

// grow returns c.buf resized to n bytes, keeping its first bytes.
func (c *compressor) grow(n int) []byte {
	if cap(c.buf) < n {
		nb := make([]byte, n, max(n, 2*cap(c.buf)))
		copy(nb, c.buf[:cap(c.buf)])
		c.buf = nb
	}
	return c.buf[:n]
}

// appendTrailer appends the trailer of a stored payload to dst.
func appendTrailer(dst, payload []byte, kind Compression) []byte {
	dst = append(dst, byte(kind))
	return binary.LittleEndian.AppendUint32(dst, blockCRC(payload, byte(kind)))
}

// blockCRC is the CRC-32C of payload followed by the type byte. It folds
// the byte in by hand, as crc32.Update would need a slice that escapes.
func blockCRC(payload []byte, kind byte) uint32 {
	crc := ^crc32.Checksum(payload, crcTable)
	crc = crcTable[byte(crc)^kind] ^ crc>>8
	return ^crc
}

// decodeBlock checks the trailer of a physical block (payload + trailer) and
// returns its raw contents. The result aliases phys when the block is stored
// uncompressed and otherwise reuses buf. limit bounds the decoded length.
func decodeBlock(phys, buf []byte, limit int) ([]byte, error) {
	if len(phys) < trailerLen {
		return nil, fmt.Errorf("%w: block of %d bytes is shorter than its trailer", ErrCorrupt, len(phys))
	}
	n := len(phys) - trailerLen
	payload, kind := phys[:n], Compression(phys[n])
	want := binary.LittleEndian.Uint32(phys[n+1:])
	if got := blockCRC(payload, phys[n]); got != want {
		return nil, fmt.Errorf("%w: block checksum mismatch (stored %08x, computed %08x)", ErrCorrupt, want, got)
	}
	return decompress(kind, payload, buf, limit)
}

// decompress decodes a payload stored with codec kind.
func decompress(kind Compression, payload, buf []byte, limit int) ([]byte, error) {
	if kind == NoCompression {
		return payload, nil
	}
	if !kind.valid() {
		return nil, fmt.Errorf("%w: unknown block compression %d", ErrCorrupt, kind)
	}
	size, hdr := binary.Uvarint(payload)
	// Writers store empty blocks uncompressed, and lz4's decoder must not
	// see an empty destination.
	if hdr <= 0 || size == 0 || size > uint64(limit) {
		return nil, fmt.Errorf("%w: bad decoded block length", ErrCorrupt)
	}
	src := payload[hdr:]
	if cap(buf) < int(size) {
		buf = make([]byte, size)
	}
	dst := buf[:size]
	var err error
	switch kind {
	case S2:
		var n int
		if n, err = s2.DecodedLen(src); err == nil && n != len(dst) {
			err = fmt.Errorf("decoded length %d, want %d", n, len(dst))
		}
		if err == nil {
			dst, err = s2.Decode(dst, src)
		}
	case LZ4:
		var n int
		n, err = lz4.UncompressBlock(src, dst)
		if err == nil && n != len(dst) {
			err = fmt.Errorf("decoded length %d, want %d", n, len(dst))
		}
	case Zstd:
		var out []byte
		out, err = zstdDecoder().DecodeAll(src, dst[:0])
		if err == nil && (len(out) != len(dst) || (len(out) > 0 && &out[0] != &dst[0])) {
			err = fmt.Errorf("decoded length %d, want %d", len(out), len(dst))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s block: %v", ErrCorrupt, kind, err)
	}
	return dst, nil
}
