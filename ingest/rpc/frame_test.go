package rpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/sedimentdb/sediment/internal/storage"
)

func TestApplyRoundTrip(t *testing.T) {
	m := &storage.Mutation{Table: 1<<32 - 1, Entries: []storage.Entry{
		{Key: []byte("k1"), Value: []byte("v1")},
		{Key: []byte("k2"), Value: bytes.Repeat([]byte{7}, 300)},
	}}
	timeout, got, err := decodeApply(appendApply(nil, 1234, m))
	if err != nil {
		t.Fatal(err)
	}
	if timeout != 1234 || !reflect.DeepEqual(got, m) {
		t.Fatalf("decoded %d %+v, want 1234 %+v", timeout, got, m)
	}
}

func TestApplyIfRoundTrip(t *testing.T) {
	m := &storage.Mutation{Table: 9, Entries: []storage.Entry{{Key: []byte("k"), Value: []byte("v")}}}
	want := Digest{1, 2, 3, DigestSize - 1: 0xee}
	timeout, got, d, err := decodeApplyIf(appendApplyIf(nil, 77, m, &want))
	if err != nil || timeout != 77 || d != want || !reflect.DeepEqual(got, m) {
		t.Fatalf("decoded %d %+v %x, %v", timeout, got, d, err)
	}
	for _, applied := range []bool{false, true} {
		if got, err := decodeApplied(appendApplied(nil, applied)); err != nil || got != applied {
			t.Fatalf("applied %v decoded as %v, %v", applied, got, err)
		}
	}
}

func TestTruncateRoundTrip(t *testing.T) {
	timeout, table, err := decodeTruncate(appendTruncate(nil, 5, 1<<32-1))
	if err != nil || timeout != 5 || table != 1<<32-1 {
		t.Fatalf("decoded %d %d, %v", timeout, table, err)
	}
}

func TestFlushRoundTrip(t *testing.T) {
	for _, want := range []uint64{0, 1, 1 << 40} {
		if timeout, err := decodeFlush(appendFlush(nil, want)); err != nil || timeout != want {
			t.Fatalf("decoded %d, %v, want %d", timeout, err, want)
		}
	}
}

func TestScanRoundTrip(t *testing.T) {
	for _, r := range []ScanRequest{
		{Table: 3},
		{Table: 3, Lower: []byte{}, Upper: []byte("z"), Reverse: true, Limit: 10},
		{Table: 9, Lower: []byte("a"), Limit: maxLimit},
	} {
		timeout, got, err := decodeScan(appendScan(nil, 0, &r))
		if err != nil {
			t.Fatal(err)
		}
		// nil and empty bounds differ: nil is open, empty is the smallest key.
		if timeout != 0 || !reflect.DeepEqual(got, r) || (got.Lower == nil) != (r.Lower == nil) {
			t.Fatalf("decoded %+v, want %+v", got, r)
		}
	}
}

func TestPageRoundTrip(t *testing.T) {
	for _, p := range []*Page{
		{Entries: []storage.Entry{}},
		{Entries: []storage.Entry{{Key: []byte("a"), Value: []byte("1")}}, Next: []byte("b"), Mark: 1 << 40},
		{Entries: []storage.Entry{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}}, Next: []byte{}},
	} {
		got, err := decodePage(appendPage(nil, p))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("decoded %+v, want %+v", got, p)
		}
	}
}

func TestErrorRoundTrip(t *testing.T) {
	for _, c := range []struct {
		err  error
		want error
		code Code
	}{
		{storage.ErrOverloaded, storage.ErrOverloaded, CodeOverloaded},
		{errors.Join(errors.New("shard 3"), storage.ErrFenced), storage.ErrFenced, CodeFenced},
		{storage.ErrInvalidMutation, storage.ErrInvalidMutation, CodeInvalidMutation},
		{errors.New("disk on fire"), nil, CodeInternal},
	} {
		err := decodeError(appendError(nil, c.err))
		var re *Error
		if !errors.As(err, &re) || re.Code != c.code || re.Message != c.err.Error() {
			t.Fatalf("decoded %v, want code %d and message %q", err, c.code, c.err)
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Fatalf("%v does not match %v", err, c.want)
		}
		if c.want == nil && errors.Is(err, storage.ErrOverloaded) {
			t.Fatalf("internal error %v matches a sentinel", err)
		}
	}
	// A code from a newer server is an error without a sentinel.
	body := appendBytes(binary.AppendUvarint(nil, 200), []byte("new"))
	if err := decodeError(body); errors.Unwrap(err) != nil {
		t.Fatalf("unknown code unwraps to %v", errors.Unwrap(err))
	}
}

func TestReadFrame(t *testing.T) {
	body := appendPage(nil, &Page{Entries: []storage.Entry{{Key: []byte("k"), Value: []byte("v")}}})
	out, start := startFrame(nil, 42, opPage)
	out = endFrame(append(out, body...), start)
	out2, start := startFrame(out, 43, opAck)
	out = endFrame(out2, start)

	r := bytes.NewReader(out)
	f, buf, err := readFrame(r, nil, 1<<10)
	if err != nil || f.stream != 42 || f.op != opPage || !bytes.Equal(f.body, body) {
		t.Fatalf("first frame: %+v, %v", f, err)
	}
	f, _, err = readFrame(r, buf, 1<<10)
	if err != nil || f.stream != 43 || f.op != opAck || len(f.body) != 0 {
		t.Fatalf("second frame: %+v, %v", f, err)
	}
	if _, _, err := readFrame(r, nil, 1<<10); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}

	// Every cut of the stream short of a frame's end fails.
	for i := 1; i < len(out); i++ {
		r := bytes.NewReader(out[:i])
		var err error
		for err == nil {
			_, _, err = readFrame(r, nil, 1<<10)
		}
		if i != len(body)+headerLen && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut at %d: %v", i, err)
		}
	}
}

func TestReadFrameLimits(t *testing.T) {
	// A length past the limit is refused from the header alone: nothing
	// of the claimed 4 GiB is allocated or read.
	hdr := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, opApply}
	if _, buf, err := readFrame(bytes.NewReader(hdr), nil, 1<<20); !errors.Is(err, ErrProtocol) || cap(buf) != 0 {
		t.Fatalf("oversized frame: %v (buffer of %d)", err, cap(buf))
	}
	// A length shorter than the stream and op fields.
	hdr = []byte{0, 0, 0, 4, 0, 0, 0, 1, opApply}
	if _, _, err := readFrame(bytes.NewReader(hdr), nil, 1<<20); !errors.Is(err, ErrProtocol) {
		t.Fatalf("short frame: %v", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	valid := appendApply(nil, 0, &storage.Mutation{Table: 1, Entries: []storage.Entry{{Key: []byte("k"), Value: []byte("v")}}})
	for name, body := range map[string][]byte{
		"empty":           {},
		"truncated":       valid[:len(valid)-1],
		"trailing":        append(bytes.Clone(valid), 0),
		"table too big":   append(binary.AppendUvarint([]byte{0}, 1<<32), 0),
		"lying count":     binary.AppendUvarint([]byte{0, 1}, 1<<40),
		"long key":        append(binary.AppendUvarint([]byte{0, 1, 1}, 1<<20), 'k'),
		"overlong varint": bytes.Repeat([]byte{0xff}, 11),
	} {
		if _, _, err := decodeApply(body); !errors.Is(err, ErrProtocol) {
			t.Errorf("apply %s: %v, want ErrProtocol", name, err)
		}
	}
	for name, body := range map[string][]byte{
		"unknown flag": {0, 1, 0x80, 0},
		"huge limit":   binary.AppendUvarint([]byte{0, 1, 0}, 1<<40),
		"no limit":     {0, 1, 0},
	} {
		if _, _, err := decodeScan(body); !errors.Is(err, ErrProtocol) {
			t.Errorf("scan %s: %v, want ErrProtocol", name, err)
		}
	}
	for name, body := range map[string][]byte{
		"no resume flag":  {0},
		"bad resume flag": {0, 2, 0},
		"no commit mark":  {0, 0},
		"lying count":     binary.AppendUvarint(nil, 1<<30),
	} {
		if _, err := decodePage(body); !errors.Is(err, ErrProtocol) {
			t.Errorf("page %s: %v, want ErrProtocol", name, err)
		}
	}
	if err := decodeError([]byte{1}); !errors.Is(err, ErrProtocol) {
		t.Errorf("error without message: %v, want ErrProtocol", err)
	}
	m := &storage.Mutation{Table: 1, Entries: []storage.Entry{{Key: []byte("k"), Value: []byte("v")}}}
	validIf := appendApplyIf(nil, 0, m, &Digest{})
	for name, body := range map[string][]byte{
		"short digest": append(appendBytes([]byte{0, 1}, make([]byte, DigestSize-1)), 0),
		"long digest":  append(appendBytes([]byte{0, 1}, make([]byte, DigestSize+1)), 0),
		"no entries":   appendBytes([]byte{0, 1}, make([]byte, DigestSize)),
		"truncated":    validIf[:len(validIf)-1],
		"trailing":     append(bytes.Clone(validIf), 0),
	} {
		if _, _, _, err := decodeApplyIf(body); !errors.Is(err, ErrProtocol) {
			t.Errorf("applyif %s: %v, want ErrProtocol", name, err)
		}
	}
	for name, body := range map[string][]byte{
		"no table":      {0},
		"table too big": binary.AppendUvarint([]byte{0}, 1<<32),
		"trailing":      {0, 1, 0},
	} {
		if _, _, err := decodeTruncate(body); !errors.Is(err, ErrProtocol) {
			t.Errorf("truncate %s: %v, want ErrProtocol", name, err)
		}
	}
	for name, body := range map[string][]byte{"empty": {}, "trailing": {1, 0}, "overlong varint": bytes.Repeat([]byte{0xff}, 11)} {
		if _, err := decodeFlush(body); !errors.Is(err, ErrProtocol) {
			t.Errorf("flush %s: %v, want ErrProtocol", name, err)
		}
	}
	for name, body := range map[string][]byte{"empty": {}, "bad outcome": {2}, "trailing": {1, 0}} {
		if _, err := decodeApplied(body); !errors.Is(err, ErrProtocol) {
			t.Errorf("applied %s: %v, want ErrProtocol", name, err)
		}
	}
}

// FuzzFrames decodes arbitrary bytes as a stream of frames and each body as
// every message. Decoding never panics or over-allocates, and whatever
// decodes encodes back to the same bytes.
func FuzzFrames(f *testing.F) {
	m := &storage.Mutation{Table: 5, Entries: []storage.Entry{{Key: []byte("key"), Value: []byte("value")}}}
	for _, seed := range [][]byte{
		appendApply(nil, 10, m),
		appendScan(nil, 0, &ScanRequest{Table: 2, Lower: []byte("a"), Upper: []byte("b"), Reverse: true, Limit: 3}),
		appendPage(nil, &Page{Entries: m.Entries, Next: []byte("n"), Mark: 7}),
		appendPage(nil, &Page{Mark: 300}),
		appendError(nil, storage.ErrFenced),
		appendApplyIf(nil, 3, m, &Digest{4, 5, 6}),
		appendTruncate(nil, 1000, 8),
		appendFlush(nil, 0),
		appendFlush(nil, 1<<33),
		appendApplied(nil, true),
		appendApplied(nil, false),
	} {
		out, start := startFrame(nil, 1, opApply)
		f.Add(endFrame(append(out, seed...), start))
		f.Add(seed)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		var buf []byte
		for {
			var fr frame
			var err error
			fr, buf, err = readFrame(r, buf, 1<<16)
			if err != nil {
				break
			}
			if fr.body != nil && len(fr.body) > 1<<16 {
				t.Fatalf("body of %d bytes past the limit", len(fr.body))
			}
		}
		if timeout, m, err := decodeApply(data); err == nil {
			if got := appendApply(nil, timeout, m); !bytes.Equal(got, data) {
				// Varints have several encodings; the decoded value must
				// at least survive a second round.
				_, m2, err := decodeApply(got)
				if err != nil || !reflect.DeepEqual(m, m2) {
					t.Fatalf("apply does not round-trip: %v", err)
				}
			}
		}
		if timeout, s, err := decodeScan(data); err == nil {
			t2, s2, err := decodeScan(appendScan(nil, timeout, &s))
			if err != nil || t2 != timeout || !reflect.DeepEqual(s, s2) {
				t.Fatalf("scan does not round-trip: %v", err)
			}
		}
		if timeout, m, d, err := decodeApplyIf(data); err == nil {
			t2, m2, d2, err := decodeApplyIf(appendApplyIf(nil, timeout, m, &d))
			if err != nil || t2 != timeout || d2 != d || !reflect.DeepEqual(m, m2) {
				t.Fatalf("applyif does not round-trip: %v", err)
			}
		}
		if timeout, table, err := decodeTruncate(data); err == nil {
			t2, table2, err := decodeTruncate(appendTruncate(nil, timeout, table))
			if err != nil || t2 != timeout || table2 != table {
				t.Fatalf("truncate does not round-trip: %v", err)
			}
		}
		if timeout, err := decodeFlush(data); err == nil {
			if t2, err := decodeFlush(appendFlush(nil, timeout)); err != nil || t2 != timeout {
				t.Fatalf("flush does not round-trip: %v", err)
			}
		}
		if applied, err := decodeApplied(data); err == nil && !bytes.Equal(appendApplied(nil, applied), data) {
			t.Fatalf("applied %v does not round-trip", applied)
		}
		if p, err := decodePage(data); err == nil {
			p2, err := decodePage(appendPage(nil, p))
			if err != nil || !reflect.DeepEqual(p, p2) {
				t.Fatalf("page does not round-trip: %v", err)
			}
		}
		if err := decodeError(data); !errors.Is(err, ErrProtocol) {
			var re *Error
			if !errors.As(err, &re) {
				t.Fatalf("error body decoded to %T", err)
			}
		}
	})
}
