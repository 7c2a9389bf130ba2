package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"
)

// TestSegmentBytes checks segments against bytes the DataStax Python
// driver 3.25 (cassandra/segment.py) encodes: an independent
// implementation of the same spec.
func TestSegmentBytes(t *testing.T) {
	tests := []struct {
		payload       []byte
		selfContained bool
		header        string
		trailer       string
	}{
		{[]byte("hello"), true, "05000219999a", "74800eb6"},
		{make([]byte, 70000), false, "701101fe4e3d", "e1146362"},
	}
	for _, tt := range tests {
		got := AppendSegment(nil, tt.payload, tt.selfContained, false)
		if h := hex.EncodeToString(got[:6]); h != tt.header {
			t.Errorf("%d bytes: header %s, want %s", len(tt.payload), h, tt.header)
		}
		if tr := hex.EncodeToString(got[len(got)-4:]); tr != tt.trailer {
			t.Errorf("%d bytes: trailer %s, want %s", len(tt.payload), tr, tt.trailer)
		}
		if !bytes.Equal(got[6:len(got)-4], tt.payload) {
			t.Errorf("%d bytes: payload changed", len(tt.payload))
		}
		p, h, n, err := DecodeSegment(nil, got, false)
		if err != nil || n != len(got) || h.SelfContained != tt.selfContained || !bytes.Equal(p, tt.payload) {
			t.Errorf("%d bytes: decoded %d bytes, %+v, %d, %v", len(tt.payload), len(p), h, n, err)
		}
	}
}

// TestSegmentRoundTrip encodes and decodes segments of every size class,
// compressible or not, with and without lz4.
func TestSegmentRoundTrip(t *testing.T) {
	payloads := map[string][]byte{
		"empty":        {},
		"one":          {7},
		"text":         bytes.Repeat([]byte("sediment "), 100),
		"random":       randomBytes(5000),
		"max":          bytes.Repeat([]byte{1, 2, 3}, MaxSegmentPayload/3),
		"max random":   randomBytes(MaxSegmentPayload),
		"full":         bytes.Repeat([]byte("x"), MaxSegmentPayload),
		"almost empty": {0, 0},
	}
	for name, p := range payloads {
		for _, lz4 := range []bool{false, true} {
			for _, sc := range []bool{false, true} {
				seg := AppendSegment([]byte("prefix"), p, sc, lz4)
				if !bytes.HasPrefix(seg, []byte("prefix")) {
					t.Fatalf("%s: prefix lost", name)
				}
				seg = seg[len("prefix"):]
				got, h, n, err := DecodeSegment([]byte("x"), seg, lz4)
				if err != nil || n != len(seg) || h.SelfContained != sc || !bytes.Equal(got[1:], p) || got[0] != 'x' {
					t.Fatalf("%s lz4=%v sc=%v: %+v, %d of %d bytes, %v", name, lz4, sc, h, n, len(seg), err)
				}
				if lz4 && name == "text" && h.Uncompressed != len(p) {
					t.Errorf("%s: not compressed (%+v)", name, h)
				}
				if lz4 && name == "max random" && h.Uncompressed != 0 {
					t.Errorf("%s: random bytes sent compressed (%+v)", name, h)
				}
				if len(seg) > 0 {
					if _, _, _, err := DecodeSegment(nil, seg[:len(seg)-1], lz4); err != io.ErrUnexpectedEOF {
						t.Errorf("%s: short segment: %v", name, err)
					}
				}
			}
		}
	}
}

// TestSegmentCorruption flips every bit of a segment: each flip is
// caught by a CRC, never decoded as another segment.
func TestSegmentCorruption(t *testing.T) {
	for _, lz4 := range []bool{false, true} {
		seg := AppendSegment(nil, bytes.Repeat([]byte("abc"), 50), true, lz4)
		for i := range seg {
			for bit := range 8 {
				bad := bytes.Clone(seg)
				bad[i] ^= 1 << bit
				_, _, _, err := DecodeSegment(nil, bad, lz4)
				if err == io.ErrUnexpectedEOF {
					continue // a length made longer: more bytes would be read
				}
				if !errors.Is(err, ErrCorruptSegment) {
					t.Fatalf("lz4=%v: bit %d of byte %d flipped: %v", lz4, bit, i, err)
				}
			}
		}
	}
}

// envelope returns a v5 response envelope with a body of n bytes.
func envelope(stream int16, n int) []byte {
	b := AppendHeader(nil, Header{Version: V5, Response: true, Stream: stream, Opcode: OpResult})
	b = append(b, bytes.Repeat([]byte{byte(stream)}, n)...)
	PatchLength(b)
	return b
}

// TestAppendSegments checks how envelopes are packed and split, and
// that a SegmentReader gives them back whole.
func TestAppendSegments(t *testing.T) {
	type seg struct {
		n             int
		selfContained bool
	}
	tests := []struct {
		name      string
		envelopes []int // body lengths
		want      []seg // payload lengths
	}{
		{"one", []int{10}, []seg{{19, true}}},
		{"packed", []int{10, 0, 100}, []seg{{19 + 9 + 109, true}}},
		{"exactly full", []int{MaxSegmentPayload - 9}, []seg{{MaxSegmentPayload, true}}},
		{"one byte over", []int{MaxSegmentPayload - 8}, []seg{{MaxSegmentPayload, false}, {1, false}}},
		{"next does not fit", []int{100000, 40000}, []seg{{100009, true}, {40009, true}}},
		{"large between small", []int{5, 300000, 6}, []seg{
			{14, true}, {MaxSegmentPayload, false}, {MaxSegmentPayload, false}, {300009 - 2*MaxSegmentPayload, false}, {15, true}}},
	}
	for _, tt := range tests {
		var in []byte
		for i, n := range tt.envelopes {
			in = append(in, envelope(int16(i), n)...)
		}
		for _, lz4 := range []bool{false, true} {
			out, err := AppendSegments(nil, in, lz4)
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			var got []seg
			var payloads []byte
			for rest := out; len(rest) > 0; {
				p, h, n, err := DecodeSegment(nil, rest, lz4)
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				got = append(got, seg{len(p), h.SelfContained})
				payloads = append(payloads, p...)
				rest = rest[n:]
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%s lz4=%v: segments %v, want %v", tt.name, lz4, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("%s lz4=%v: segments %v, want %v", tt.name, lz4, got, tt.want)
				}
			}
			if !bytes.Equal(payloads, in) {
				t.Errorf("%s: payloads differ from the envelopes", tt.name)
			}
			// A SegmentReader gives back each envelope as a frame.
			r := NewSegmentReader(bytes.NewReader(out), lz4)
			for i, n := range tt.envelopes {
				f, err := ReadFrame(r, 1<<20)
				if err != nil || f.Stream != int16(i) || len(f.Body) != n || f.Version != V5 {
					t.Fatalf("%s: envelope %d: %+v, %v", tt.name, i, f, err)
				}
			}
			if _, err := ReadFrame(r, 1<<20); err != io.EOF {
				t.Errorf("%s: after the last envelope: %v", tt.name, err)
			}
		}
	}
	if _, err := AppendSegments(nil, envelope(1, 10)[:15], false); err == nil {
		t.Error("a cut envelope was framed")
	}
}

func TestSegmentReaderCorrupt(t *testing.T) {
	seg := AppendSegment(nil, envelope(1, 20), true, false)
	seg[8] ^= 1
	r := NewSegmentReader(bytes.NewReader(seg), false)
	if _, err := ReadFrame(r, 1<<20); !errors.Is(err, ErrCorruptSegment) {
		t.Errorf("corrupt payload: %v", err)
	}
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, ErrCorruptSegment) {
		t.Errorf("the error does not stick: %v", err)
	}
}
