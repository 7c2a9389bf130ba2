package transport

import (
	"bytes"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/wire"
)

// dialV5 connects a v5 client and starts it with opts.
func dialV5(t *testing.T, addr string, opts map[string]string) *client {
	c := dial(t, addr)
	c.v = wire.V5
	c.startup(opts)
	return c
}

// TestV5Handshake checks that OPTIONS, STARTUP and their answers travel
// as plain envelopes, and everything after READY in segments.
func TestV5Handshake(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c := dial(t, addr)
	c.v = wire.V5
	if _, ok := c.roundTrip(1, &wire.Options{}).(*wire.Supported); !ok {
		t.Fatal("OPTIONS before STARTUP")
	}
	c.startup(nil)
	// After READY: framed both ways, OPTIONS included.
	if _, ok := c.roundTrip(2, &wire.Options{}).(*wire.Supported); !ok {
		t.Fatal("OPTIONS after STARTUP")
	}
	if r, ok := c.roundTrip(3, query("USE ks1")).(*wire.SetKeyspace); !ok || r.Keyspace != "ks1" {
		t.Fatalf("USE answered %+v", r)
	}
	rows := c.roundTrip(4, query("WHO")).(*wire.Rows)
	if string(rows.Rows[0][0]) != "ks1" {
		t.Fatalf("WHO: %q", rows.Rows[0])
	}
	if c.seg.Buffered() != 0 {
		t.Errorf("%d bytes after the answers", c.seg.Buffered())
	}
	// The compression and beta flags of an envelope mean nothing in v5:
	// segments carry compression, and v5 is not a beta.
	b, _ := wire.AppendFrame(nil, wire.Header{Version: wire.V5, Stream: 6, Flags: wire.FlagCompression | 0x10}, nil, query("ECHO", []byte("plain")), nil)
	c.raw(wire.AppendSegment(nil, b, true, false))
	if _, _, m := c.recv(); string(m.(*wire.Rows).Rows[0][0]) != "plain" {
		t.Fatalf("flagged envelope answered %+v", m)
	}
	// A v4 envelope inside v5 segments is refused, framed.
	c.v = wire.V4
	wantError(t, c.roundTrip(5, query("WHO")), wire.CodeProtocol, "Invalid message version")
}

// TestV5KeyspacePerQuery checks that the keyspace flag reaches the handler.
func TestV5KeyspacePerQuery(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c := dialV5(t, addr, nil)
	q := query("KEYSPACE")
	q.Params.Keyspace = "other"
	if r := c.roundTrip(1, q).(*wire.Rows); string(r.Rows[0][0]) != "other" {
		t.Fatalf("keyspace %q", r.Rows[0][0])
	}
	if r := c.roundTrip(2, query("KEYSPACE")).(*wire.Rows); string(r.Rows[0][0]) != "" {
		t.Fatalf("keyspace %q without the flag", r.Rows[0][0])
	}
}

// segmentsOf reads the raw segments of one answer whose envelope is n
// bytes long, returning their headers.
func segmentsOf(t *testing.T, c *client, n int, lz4 bool) ([]wire.SegmentHeader, []byte) {
	t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hs []wire.SegmentHeader
	var payload []byte
	hdr := make([]byte, wire.SegmentHeaderSize(lz4))
	for len(payload) < n {
		if _, err := io.ReadFull(c.nc, hdr); err != nil {
			t.Fatal(err)
		}
		h, err := wire.DecodeSegmentHeader(hdr, lz4)
		if err != nil {
			t.Fatal(err)
		}
		rest := make([]byte, h.Length+4)
		if _, err := io.ReadFull(c.nc, rest); err != nil {
			t.Fatal(err)
		}
		p, _, _, err := wire.DecodeSegment(nil, append(bytes.Clone(hdr), rest...), lz4)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		payload = append(payload, p...)
	}
	return hs, payload
}

// TestV5LargeMessages sends a request over 128 KiB, which the client
// splits over segments that are not self-contained, and reads back an
// answer the server splits the same way.
func TestV5LargeMessages(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	for _, lz4 := range []bool{false, true} {
		opts := map[string]string{}
		if lz4 {
			opts["COMPRESSION"] = "lz4"
		}
		c := dialV5(t, addr, opts)
		big := make([]byte, 300<<10)
		for i := range big {
			big[i] = byte(i / 7)
		}
		c.send(1, query("ECHO", big))
		hs, env := segmentsOf(t, c, 300<<10, lz4)
		if len(hs) != 3 {
			t.Fatalf("lz4=%v: answer in %d segments: %+v", lz4, len(hs), hs)
		}
		for _, h := range hs {
			if h.SelfContained {
				t.Fatalf("lz4=%v: a large answer in a self-contained segment: %+v", lz4, hs)
			}
			if lz4 && h.Uncompressed == 0 {
				t.Errorf("compressible segment sent uncompressed: %+v", h)
			}
		}
		f, err := wire.ReadFrame(bytes.NewReader(env), 1<<24)
		if err != nil {
			t.Fatal(err)
		}
		m, err := wire.DecodeResponse(f.Opcode, f.Version, f.Body)
		if err != nil {
			t.Fatal(err)
		}
		if r := m.(*wire.Rows); !bytes.Equal(r.Rows[0][0], big) {
			t.Fatalf("lz4=%v: echo mismatch", lz4)
		}
		// Small answers after it come in one self-contained segment.
		c.send(2, query("ECHO", []byte{1}))
		if hs, _ := segmentsOf(t, c, 1, lz4); len(hs) != 1 || !hs[0].SelfContained {
			t.Fatalf("small answer in %+v", hs)
		}
	}
}

// TestV5SnappyRefused: v5 segments know only lz4.
func TestV5SnappyRefused(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c := dial(t, addr)
	c.v = wire.V5
	wantError(t, c.roundTrip(0, &wire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0", "COMPRESSION": "snappy"}}),
		wire.CodeProtocol, "not supported in protocol V5")
	// The connection is not started: a retry without it works.
	c.startup(nil)
	if _, ok := c.roundTrip(1, query("ECHO")).(*wire.Rows); !ok {
		t.Fatal("ECHO after the retry")
	}
}

// TestV5CorruptSegment: a bad CRC ends the connection.
func TestV5CorruptSegment(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	for _, corrupt := range []int{0, 7} { // a header byte, a payload byte
		c := dialV5(t, addr, nil)
		b, _ := wire.AppendFrame(nil, wire.Header{Version: wire.V5, Stream: 1}, nil, query("ECHO"), nil)
		seg := wire.AppendSegment(nil, b, true, false)
		seg[corrupt] ^= 0x10
		c.raw(seg)
		c.expectClosed()
	}
}

// TestV5ResultMetadataID checks PREPARED's result metadata ID and the
// METADATA_CHANGED answer to an EXECUTE that names another.
func TestV5ResultMetadataID(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, testConfig(), h, nil)
	c := dialV5(t, addr, nil)
	p := c.roundTrip(1, &wire.Prepare{Query: "SELECT ?"}).(*wire.Prepared)
	want := wire.MetadataID(nil, p.Result.Columns)
	if !bytes.Equal(p.ResultMetadataID, want) {
		t.Fatalf("result metadata ID %x, want %x", p.ResultMetadataID, want)
	}
	x := &wire.Execute{ID: p.ID, ResultMetadataID: p.ResultMetadataID, Params: wire.QueryParams{Consistency: wire.One, SkipMetadata: true,
		Values: []wire.Value{wire.BytesValue([]byte{0, 0, 0, 5})}}}
	r := c.roundTrip(2, x).(*wire.Rows)
	if !r.Metadata.NoMetadata || r.Metadata.NewMetadataID != nil || len(r.Rows) != 1 {
		t.Fatalf("same ID: %+v", r.Metadata)
	}
	// An ID the client got for other columns: the rows say what changed.
	x.ResultMetadataID = []byte{1, 2, 3}
	r = c.roundTrip(3, x).(*wire.Rows)
	if r.Metadata.NoMetadata || !bytes.Equal(r.Metadata.NewMetadataID, want) || len(r.Metadata.Columns) != 1 {
		t.Fatalf("other ID: %+v", r.Metadata)
	}
	// An unknown prepared ID is Unprepared, naming it, as in v4.
	h.forget.Store(true)
	if e := wantError(t, c.roundTrip(4, x), wire.CodeUnprepared, "not found"); !bytes.Equal(e.ID, p.ID) {
		t.Fatalf("Unprepared ID %x, want %x", e.ID, p.ID)
	}
}

// TestV5SplitRequestHeader sends an envelope whose segments split its
// header: the server reassembles it.
func TestV5SplitRequestHeader(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c := dialV5(t, addr, nil)
	b, _ := wire.AppendFrame(nil, wire.Header{Version: wire.V5, Stream: 4}, nil, query("ECHO", []byte("abc")), nil)
	var segs []byte
	segs = wire.AppendSegment(segs, b[:4], false, false)
	segs = wire.AppendSegment(segs, b[4:], false, false)
	c.raw(segs)
	_, _, m := c.recv()
	if r, ok := m.(*wire.Rows); !ok || string(r.Rows[0][0]) != "abc" {
		t.Fatalf("answer %+v", m)
	}
}

// TestV5PasswordAuthentication: AUTHENTICATE ends the handshake, so the
// SASL exchange after it travels in segments.
func TestV5PasswordAuthentication(t *testing.T) {
	cfg := testConfig()
	cfg.Authenticator = "password"
	_, addr := startServer(t, cfg, newTestHandler(), passwords{"alice": "secret"})
	c := dial(t, addr)
	c.v = wire.V5
	if _, ok := c.roundTrip(0, &wire.Startup{Options: map[string]string{"CQL_VERSION": "3.4.5"}}).(*wire.Authenticate); !ok {
		t.Fatal("STARTUP not answered with AUTHENTICATE")
	}
	c.segmented(false)
	wantError(t, c.roundTrip(1, &wire.AuthResponse{Token: []byte("\x00alice\x00wrong")}), wire.CodeBadCredentials, "incorrect")
	if _, ok := c.roundTrip(2, &wire.AuthResponse{Token: []byte("\x00alice\x00secret")}).(*wire.AuthSuccess); !ok {
		t.Fatal("good password refused")
	}
	if rows := c.roundTrip(3, query("WHO")).(*wire.Rows); string(rows.Rows[0][1]) != "alice" {
		t.Fatalf("user %q", rows.Rows[0][1])
	}
}

// TestV5Events: events pushed to a v5 connection come in segments too,
// between the answers.
func TestV5Events(t *testing.T) {
	s, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c := dialV5(t, addr, map[string]string{"COMPRESSION": "lz4"})
	c.roundTrip(1, &wire.Register{Events: []string{wire.SchemaChanged}})
	ev := &wire.Event{Type: wire.SchemaChanged, Schema: wire.SchemaChange{Change: "CREATED", Target: "TABLE", Keyspace: "ks", Name: "t"}}
	s.Publish(ev)
	h, _, m := c.recv()
	if h.Stream != wire.EventStream || !reflect.DeepEqual(m, ev) {
		t.Fatalf("event %+v %+v", h, m)
	}
	if h, _, _ := c.recv2(2, query("ECHO")); h.Stream != 2 {
		t.Fatalf("stream %d", h.Stream)
	}
}

// TestV5Errors: CAS_WRITE_UNKNOWN is v5's; older clients get the CAS
// write timeout Cassandra sends them.
func TestV5Errors(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c5 := dialV5(t, addr, nil)
	e := wantError(t, c5.roundTrip(1, query("CASUNKNOWN")), wire.CodeCASWriteUnknown, "unknown")
	if e.Consistency != wire.Serial || e.BlockFor != 1 {
		t.Errorf("v5: %+v", e)
	}
	c4 := dial(t, addr)
	c4.startup(nil)
	e = wantError(t, c4.roundTrip(1, query("CASUNKNOWN")), wire.CodeWriteTimeout, "unknown")
	if e.WriteType != "CAS" || e.Consistency != wire.Serial || e.BlockFor != 1 {
		t.Errorf("v4: %+v", e)
	}
}

// TestV5TooLarge: an envelope over the maximum frame size, split over
// segments, is skipped and answered with Invalid; the connection goes on.
func TestV5TooLarge(t *testing.T) {
	cfg := testConfig()
	cfg.MaxFrameSize = 200 << 10
	_, addr := startServer(t, cfg, newTestHandler(), nil)
	c := dialV5(t, addr, nil)
	c.send(1, query("ECHO", make([]byte, 300<<10)))
	_, _, m := c.recv()
	wantError(t, m, wire.CodeInvalid, "Request is too big")
	if r, ok := c.roundTrip(2, query("ECHO", []byte("next"))).(*wire.Rows); !ok || string(r.Rows[0][0]) != "next" {
		t.Fatalf("after the large envelope: %+v", r)
	}
}
