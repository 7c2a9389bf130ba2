package wire

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// checkError fails unless err is nil or a Protocol *Error: every decoding
// failure must be one the server can send as it is.
func checkError(t *testing.T, err error) {
	t.Helper()
	var we *Error
	if err != nil && (!errors.As(err, &we) || we.Code != CodeProtocol) {
		t.Fatalf("error %v (%T) is not a Protocol error", err, err)
	}
}

func FuzzReadFrame(f *testing.F) {
	for _, m := range sampleRequests() {
		b, _ := AppendFrame(nil, Header{Version: V4, Stream: 1}, nil, m, nil)
		f.Add(b)
	}
	f.Add([]byte{0x01, 0, 0, 5, 0, 0, 0, 0})
	f.Add([]byte{0x05, 0, 0, 0, 5, 0, 0, 0, 0})
	f.Add([]byte{0x04, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ReadFrame(bytes.NewReader(b), 1<<16)
		if err != nil {
			return
		}
		if len(fr.Body) != int(fr.Length) || !fr.Version.Supported() {
			t.Fatalf("frame %+v with %d body bytes", fr.Header, len(fr.Body))
		}
		out := AppendHeader(nil, fr.Header)
		if !bytes.Equal(out, b[:HeaderSize]) {
			t.Fatalf("header %x re-encoded as %x", b[:HeaderSize], out)
		}
	})
}

// fuzzRoundTrip decodes a body, and when that succeeds checks that the
// message encodes and decodes back to itself.
func fuzzRoundTrip(t *testing.T, v Version, body []byte, decode func(Version, []byte) (Message, error)) {
	m, err := decode(v, body)
	checkError(t, err)
	if err != nil {
		return
	}
	again, err := m.AppendBody(nil, v)
	if err != nil {
		t.Fatalf("%+v does not encode: %v", m, err)
	}
	m2, err := decode(v, again)
	if err != nil {
		t.Fatalf("%+v re-encoded as %x does not decode: %v", m, again, err)
	}
	if !reflect.DeepEqual(m, m2) {
		t.Fatalf("round trip changed %+v to %+v", m, m2)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, v := range []Version{V3, V4, V5} {
		for _, m := range append(sampleRequests(), sampleV5Requests()...) {
			if b, err := m.AppendBody(nil, v); err == nil {
				f.Add(byte(m.Opcode()), byte(v), b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, op, v byte, body []byte) {
		ver := V3 + Version(v%3)
		fuzzRoundTrip(t, ver, body, func(v Version, b []byte) (Message, error) {
			return DecodeRequest(Opcode(op), v, b)
		})
	})
}

func FuzzDecodeResponse(f *testing.F) {
	for _, v := range []Version{V3, V4, V5} {
		for _, m := range append(sampleResponses(), sampleV5Responses()...) {
			if b, err := m.AppendBody(nil, v); err == nil {
				f.Add(byte(m.Opcode()), byte(v), b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, op, v byte, body []byte) {
		ver := V3 + Version(v%3)
		fuzzRoundTrip(t, ver, body, func(v Version, b []byte) (Message, error) {
			return DecodeResponse(Opcode(op), v, b)
		})
	})
}

func FuzzDecodeType(f *testing.F) {
	for _, m := range sampleResponses() {
		if r, ok := m.(*Rows); ok {
			for _, c := range r.Metadata.Columns {
				b, _ := AppendType(nil, c.Type, V4)
				f.Add(b)
			}
		}
	}
	f.Add([]byte{0, 0x31, 0, 2, 0, 9, 0, 0x20, 0, 0x11})
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, rest, err := DecodeType(b)
		checkError(t, err)
		if err != nil {
			return
		}
		again, err := AppendType(nil, typ, V4)
		if err != nil {
			t.Fatalf("%v does not encode: %v", typ, err)
		}
		typ2, rest2, err := DecodeType(again)
		if err != nil || !typ2.Equal(typ) || len(rest2) != 0 || len(rest) > len(b) {
			t.Fatalf("%v re-encoded as %x decodes as %v, %v", typ, again, typ2, err)
		}
	})
}

func FuzzSplitBody(f *testing.F) {
	env := &Envelope{Warnings: []string{"w"}, Payload: map[string][]byte{"k": {1}}}
	b, _ := AppendFrame(nil, Header{Version: V4, Response: true}, env, &Void{}, nil)
	f.Add(byte(FlagWarning|FlagCustomPayload|FlagTracing), true, b[HeaderSize:])
	f.Fuzz(func(t *testing.T, flags byte, response bool, body []byte) {
		_, rest, err := SplitBody(Header{Version: V4, Flags: Flags(flags), Response: response}, body)
		checkError(t, err)
		if err == nil && len(rest) > len(body) {
			t.Fatal("rest longer than the body")
		}
	})
}

func FuzzDecompress(f *testing.F) {
	f.Add(true, LZ4.Compress(nil, []byte("hello hello hello")))
	f.Add(false, Snappy.Compress(nil, []byte("hello hello hello")))
	f.Fuzz(func(t *testing.T, lz4 bool, b []byte) {
		c := Snappy
		if lz4 {
			c = LZ4
		}
		out, err := c.Decompress(nil, b, 1<<16)
		checkError(t, err)
		if err == nil && len(out) > 1<<16 {
			t.Fatalf("%d bytes out past the limit", len(out))
		}
	})
}

// FuzzDecodeSegment decodes segments, with and without lz4: a segment
// that decodes must encode back to one that decodes to the same payload,
// and a SegmentReader over the bytes must never panic.
func FuzzDecodeSegment(f *testing.F) {
	for _, lz4 := range []bool{false, true} {
		for _, p := range [][]byte{{}, []byte("hello"), bytes.Repeat([]byte("abc"), 1000), envelopeFor(f)} {
			f.Add(lz4, AppendSegment(nil, p, true, lz4))
			f.Add(lz4, AppendSegment(nil, p, false, lz4))
		}
	}
	f.Add(false, []byte{0x05, 0x00, 0x02, 0x19, 0x99, 0x9a, 'h', 'e', 'l', 'l', 'o', 0x74, 0x80, 0x0e, 0xb6})
	f.Fuzz(func(t *testing.T, lz4 bool, b []byte) {
		p, h, n, err := DecodeSegment(nil, b, lz4)
		if err == nil {
			if n > len(b) || n != SegmentHeaderSize(lz4)+h.Length+4 || h.Length > MaxSegmentPayload || len(p) > MaxSegmentPayload {
				t.Fatalf("segment %+v of %d bytes from %d, payload %d", h, n, len(b), len(p))
			}
			again := AppendSegment(nil, p, h.SelfContained, lz4)
			q, h2, _, err := DecodeSegment(nil, again, lz4)
			if err != nil || !bytes.Equal(p, q) || h2.SelfContained != h.SelfContained {
				t.Fatalf("payload %x re-encoded: %v", p, err)
			}
		} else if err != io.ErrUnexpectedEOF && !errors.Is(err, ErrCorruptSegment) {
			t.Fatalf("error %v", err)
		}
		r := NewSegmentReader(bytes.NewReader(b), lz4)
		for range 4 {
			if _, err := ReadFrame(r, 1<<16); err != nil {
				break
			}
		}
	})
}

// envelopeFor returns a v5 envelope of a sample QUERY.
func envelopeFor(f *testing.F) []byte {
	b, err := AppendFrame(nil, Header{Version: V5, Stream: 3}, nil, sampleV5Requests()[0], nil)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
