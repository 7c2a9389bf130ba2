package wire

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/klauspost/compress/snappy"
	"github.com/pierrec/lz4/v4"
)

// Compressor compresses frame bodies with an algorithm agreed in STARTUP.
type Compressor interface {
	// Name is the algorithm's name in STARTUP and SUPPORTED.
	Name() string
	// Compress appends src compressed to dst.
	Compress(dst, src []byte) []byte
	// Decompress appends src decompressed to dst, failing on malformed
	// input and on output longer than max bytes.
	Decompress(dst, src []byte, max int) ([]byte, error)
}

// Compressors lists the algorithms Sediment offers, preferred first.
var Compressors = []Compressor{LZ4, Snappy}

// CompressorFor returns the compressor named name, or nil.
func CompressorFor(name string) Compressor {
	for _, c := range Compressors {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// LZ4 is Cassandra's framing of LZ4: a 4-byte big-endian length of the
// uncompressed body, then one LZ4 block.
var LZ4 Compressor = lz4Compressor{}

// Snappy is one Snappy block (not the framed stream format).
var Snappy Compressor = snappyCompressor{}

type lz4Compressor struct{}

func (lz4Compressor) Name() string { return "lz4" }

func (lz4Compressor) Compress(dst, src []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(src)))
	bound := lz4.CompressBlockBound(len(src))
	dst = slices.Grow(dst, bound)[:start+4+bound]
	n, err := lz4.CompressBlock(src, dst[start+4:], nil)
	if err != nil || (n == 0 && len(src) > 0) {
		// Incompressible: an LZ4 block of literals only is still valid.
		return appendLiteralBlock(dst[:start+4], src)
	}
	return dst[:start+4+n]
}

// appendLiteralBlock appends src as one LZ4 sequence of literals.
func appendLiteralBlock(dst, src []byte) []byte {
	n := len(src)
	if n < 15 {
		return append(append(dst, byte(n<<4)), src...)
	}
	dst = append(dst, 0xF0)
	for n -= 15; n >= 255; n -= 255 {
		dst = append(dst, 255)
	}
	return append(append(dst, byte(n)), src...)
}

func (lz4Compressor) Decompress(dst, src []byte, max int) ([]byte, error) {
	if len(src) < 4 {
		return nil, Errorf(CodeProtocol, "LZ4 body shorter than its length prefix")
	}
	n := binary.BigEndian.Uint32(src)
	if int64(n) > int64(max) {
		return nil, Errorf(CodeProtocol, "Decompressed length %d exceeds the maximum frame size %d", n, max)
	}
	start := len(dst)
	dst = slices.Grow(dst, int(n))[:start+int(n)]
	if n == 0 {
		return dst, nil
	}
	got, err := lz4.UncompressBlock(src[4:], dst[start:])
	if err != nil || got != int(n) {
		return nil, Errorf(CodeProtocol, "Malformed LZ4 body")
	}
	return dst, nil
}

type snappyCompressor struct{}

func (snappyCompressor) Name() string { return "snappy" }

func (snappyCompressor) Compress(dst, src []byte) []byte {
	start := len(dst)
	dst = slices.Grow(dst, snappy.MaxEncodedLen(len(src)))
	out := snappy.Encode(dst[start:cap(dst)], src)
	return dst[:start+len(out)]
}

func (snappyCompressor) Decompress(dst, src []byte, max int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, Errorf(CodeProtocol, "Malformed Snappy body")
	}
	if n > max {
		return nil, Errorf(CodeProtocol, "Decompressed length %d exceeds the maximum frame size %d", n, max)
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out, err := snappy.Decode(dst[start:], src)
	if err != nil || len(out) != n {
		return nil, Errorf(CodeProtocol, "Malformed Snappy body")
	}
	return dst, nil
}

// Envelope is what a frame body may carry before its message.
type Envelope struct {
	// TracingID is the 16-byte tracing session (responses only).
	TracingID []byte
	// Warnings are server warnings (responses only).
	Warnings []string
	// Payload is the custom payload.
	Payload map[string][]byte
}

// SplitBody separates the envelope that the header's flags announce from
// the message of a decompressed body. A request carries at most a custom
// payload; the tracing flag of a request asks for tracing and adds no
// bytes.
func SplitBody(h Header, body []byte) (Envelope, []byte, error) {
	d := &decoder{b: body}
	var env Envelope
	if h.Response && h.Flags&FlagTracing != 0 {
		env.TracingID = d.raw(16, "the tracing ID")
	}
	if h.Response && h.Flags&FlagWarning != 0 {
		env.Warnings = d.stringList("the warnings")
	}
	if h.Flags&FlagCustomPayload != 0 {
		env.Payload = d.bytesMap("the custom payload")
		if d.err == nil && h.Version < V4 {
			d.fail("Received frame with CUSTOM_PAYLOAD flag for native protocol version < 4")
		}
	}
	if d.err != nil {
		return Envelope{}, nil, d.err
	}
	return env, d.b, nil
}

// MinCompressed is the smallest body AppendFrame compresses. The flag
// says of each frame whether it is compressed, and a body this small
// gains little and costs an LZ4 hash table reset.
const MinCompressed = 512

// AppendFrame appends a whole frame: h (its opcode and length are set
// here), the envelope's warnings when h is a response and the message m,
// the body compressed by c when c is not nil and the body is at least
// MinCompressed bytes. For a request h.Flags are
// sent as they are, and the envelope's payload with FlagCustomPayload.
func AppendFrame(dst []byte, h Header, env *Envelope, m Message, c Compressor) ([]byte, error) {
	h.Opcode = m.Opcode()
	h.Flags &^= FlagCompression | FlagWarning | FlagCustomPayload
	if env != nil && len(env.Warnings) > 0 && h.Response {
		h.Flags |= FlagWarning
	}
	if env != nil && env.Payload != nil {
		h.Flags |= FlagCustomPayload
	}
	if h.Response {
		h.Flags &^= FlagTracing
		if env != nil && env.TracingID != nil {
			h.Flags |= FlagTracing
		}
	}
	start := len(dst)
	dst = AppendHeader(dst, h)
	bodyStart := len(dst)
	e := encoder{b: dst}
	if h.Response && h.Flags&FlagTracing != 0 {
		if len(env.TracingID) != 16 {
			return dst[:start], fmt.Errorf("wire: a tracing ID of %d bytes", len(env.TracingID))
		}
		e.b = append(e.b, env.TracingID...)
	}
	if h.Flags&FlagWarning != 0 {
		e.stringList(env.Warnings)
	}
	if h.Flags&FlagCustomPayload != 0 {
		e.bytesMap(env.Payload)
	}
	if e.err != nil {
		return dst[:start], e.err
	}
	dst, err := m.AppendBody(e.b, h.Version)
	if err != nil {
		return dst[:start], fmt.Errorf("wire: encoding %v: %w", h.Opcode, err)
	}
	if c != nil && len(dst)-bodyStart >= MinCompressed {
		// Compress past the end, then move the result over the body.
		end := len(dst)
		dst = c.Compress(dst, dst[bodyStart:end])
		n := copy(dst[bodyStart:], dst[end:])
		dst = dst[:bodyStart+n]
		dst[start+1] |= byte(FlagCompression)
	}
	if uint64(len(dst)-bodyStart) > 1<<31-1 {
		return dst[:start], fmt.Errorf("wire: %v body of %d bytes is too long for a frame", h.Opcode, len(dst)-bodyStart)
	}
	PatchLength(dst[start:])
	return dst, nil
}
