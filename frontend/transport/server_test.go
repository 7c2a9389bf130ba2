package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// testHandler answers a few made-up statements, enough to drive the
// server: the executor's statements are tested with the executor.
//
//	ECHO, SELECT  one int column per bound value, echoing them (gocql
//	              prepares only statements that look like DML); prepared
//	              with BLOB in the text, the columns are blobs
//	WAIT name     blocks until the test releases name (or the request is canceled)
//	USE ks        sets the keyspace
//	WHO           the session's keyspace and user
//	FAIL          an Invalid error
//	READFAIL      a Read_failure error
//	GOERR         a plain Go error, which must not reach the client
//	PANIC         a panic
//	WARN          a warning with a Void result
//	system.local / system.peers queries: what gocql reads on connecting
type testHandler struct {
	mu       sync.Mutex
	gates    map[string]chan struct{}
	started  chan string
	prepares atomic.Int32
	batches  atomic.Int32
	forget   atomic.Bool // answer EXECUTE with Unprepared
	running  atomic.Int32
	maxRun   atomic.Int32
}

func newTestHandler() *testHandler {
	return &testHandler{gates: make(map[string]chan struct{}), started: make(chan string, 1024)}
}

func (h *testHandler) gate(name string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.gates[name]
	if !ok {
		g = make(chan struct{})
		h.gates[name] = g
	}
	return g
}

func (h *testHandler) release(name string) { close(h.gate(name)) }

var (
	localColumns = []string{"key", "data_center", "rack", "release_version", "partitioner", "cluster_name", "host_id", "schema_version", "rpc_address", "broadcast_address", "listen_address", "tokens"}
	peerColumns  = []string{"peer", "data_center", "rack", "release_version", "host_id", "schema_version", "rpc_address", "tokens"}
)

func columnType(name string) *cqltype.Type {
	switch name {
	case "host_id", "schema_version":
		return cqltype.UUIDType
	case "rpc_address", "broadcast_address", "listen_address", "peer":
		return cqltype.InetType
	case "tokens":
		return cqltype.SetOf(cqltype.TextType, false)
	}
	return cqltype.TextType
}

func systemRows(table string, names []string) *wire.Rows {
	r := &wire.Rows{}
	for _, n := range names {
		r.Metadata.Columns = append(r.Metadata.Columns, wire.ColumnSpec{Keyspace: "system", Table: table, Name: n, Type: columnType(n)})
	}
	if table == "local" {
		row := make([][]byte, len(names))
		for i, n := range names {
			switch columnType(n).Kind {
			case cqltype.UUID:
				row[i] = bytes.Repeat([]byte{0x11}, 16)
			case cqltype.Inet:
				row[i] = []byte{127, 0, 0, 1}
			case cqltype.Set:
				row[i] = []byte{0, 0, 0, 1, 0, 0, 0, 1, '0'}
			default:
				row[i] = []byte(map[string]string{"key": "local", "data_center": "dc1", "rack": "r1",
					"release_version": "4.0.0", "partitioner": "org.apache.cassandra.dht.Murmur3Partitioner",
					"cluster_name": "test"}[n])
			}
		}
		r.Rows = [][][]byte{row}
	}
	return r
}

func echo(values []wire.Value, noMetadata bool, typ *cqltype.Type) *wire.Rows {
	r := &wire.Rows{Rows: [][][]byte{make([][]byte, len(values))}}
	for i, v := range values {
		r.Metadata.Columns = append(r.Metadata.Columns, wire.ColumnSpec{Keyspace: "ks", Table: "t", Name: fmt.Sprintf("c%d", i), Type: typ})
		if v.Kind == wire.Bytes {
			r.Rows[0][i] = v.Bytes
		}
	}
	r.Metadata.NoMetadata = noMetadata
	if len(values) == 0 {
		r.Rows = nil // a row needs a column
	}
	return r
}

func (h *testHandler) Query(ctx context.Context, s *Session, q *wire.Query) (wire.Result, error) {
	n := h.running.Add(1)
	defer h.running.Add(-1)
	for {
		m := h.maxRun.Load()
		if n <= m || h.maxRun.CompareAndSwap(m, n) {
			break
		}
	}
	word, arg, _ := strings.Cut(q.Query, " ")
	switch {
	case strings.Contains(q.Query, "system.local"):
		return systemRows("local", localColumns), nil
	case strings.Contains(q.Query, "system.peers"):
		return systemRows("peers", peerColumns), nil
	}
	switch word {
	case "ECHO", "SELECT":
		return echo(q.Params.Values, false, cqltype.IntType), nil
	case "WAIT":
		select {
		case h.started <- arg:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case <-h.gate(arg):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &wire.Rows{Metadata: wire.Metadata{Columns: []wire.ColumnSpec{{Keyspace: "ks", Table: "t", Name: "name", Type: cqltype.TextType}}},
			Rows: [][][]byte{{[]byte(arg)}}}, nil
	case "USE":
		return &wire.SetKeyspace{Keyspace: strings.Trim(arg, `"`)}, nil
	case "KEYSPACE":
		// The keyspace a v5 client named for this statement.
		return &wire.Rows{Metadata: wire.Metadata{Columns: []wire.ColumnSpec{
			{Keyspace: "ks", Table: "t", Name: "keyspace", Type: cqltype.TextType},
		}}, Rows: [][][]byte{{[]byte(q.Params.Keyspace)}}}, nil
	case "WHO":
		return &wire.Rows{Metadata: wire.Metadata{Columns: []wire.ColumnSpec{
			{Keyspace: "ks", Table: "t", Name: "keyspace", Type: cqltype.TextType},
			{Keyspace: "ks", Table: "t", Name: "user", Type: cqltype.TextType},
		}}, Rows: [][][]byte{{[]byte(s.Keyspace()), []byte(s.User())}}}, nil
	case "FAIL":
		return nil, wire.Errorf(wire.CodeInvalid, "failed as asked")
	case "READFAIL":
		return nil, fmt.Errorf("wrapped: %w", &wire.Error{Code: wire.CodeReadFailure, Message: "read failed", Consistency: wire.One, BlockFor: 1, NumFailures: 1})
	case "CASUNKNOWN":
		return nil, &wire.Error{Code: wire.CodeCASWriteUnknown, Message: "CAS operation result is unknown", Consistency: wire.Serial, BlockFor: 1}
	case "GOERR":
		return nil, errors.New("secret internal detail")
	case "PANIC":
		panic("handler panic")
	case "WARN":
		AddWarning(ctx, "first warning")
		AddWarning(ctx, "second warning")
		return nil, nil
	}
	return nil, wire.Errorf(wire.CodeSyntax, "line 1:0 no viable alternative at input '%s'", word)
}

func preparedID(q string) []byte {
	s := sha256.Sum256([]byte(q))
	return s[:16]
}

func (h *testHandler) Prepare(ctx context.Context, s *Session, p *wire.Prepare) (*wire.Prepared, error) {
	h.prepares.Add(1)
	n := strings.Count(p.Query, "?")
	vals := make([]wire.Value, n)
	typ := cqltype.IntType
	if strings.Contains(p.Query, "BLOB") {
		typ = cqltype.BlobType
	}
	res := &wire.Prepared{ID: preparedID(p.Query), Bound: echo(vals, false, typ).Metadata, Result: echo(vals, false, typ).Metadata}
	if n > 0 {
		res.Bound.PKIndexes = []uint16{0}
	}
	return res, nil
}

func (h *testHandler) Execute(ctx context.Context, s *Session, e *wire.Execute) (wire.Result, error) {
	if h.forget.CompareAndSwap(true, false) {
		// Without the ID, which the server fills in.
		return nil, wire.Errorf(wire.CodeUnprepared, "Prepared query not found")
	}
	r := echo(e.Params.Values, false, cqltype.IntType)
	if bytes.Equal(e.ID, preparedID("CHANGED ?")) {
		// Rows whose columns are not those PREPARE announced.
		r.Metadata.NewMetadataID = []byte{0xcc}
	}
	return r, nil
}

func (h *testHandler) Batch(ctx context.Context, s *Session, b *wire.Batch) (wire.Result, error) {
	h.batches.Add(int32(len(b.Children)))
	return nil, nil
}

var _ Handler = (*testHandler)(nil)

type passwords map[string]string

func (p passwords) CheckPassword(ctx context.Context, _ net.Addr, role, password string) (bool, error) {
	if role == "broken" {
		return false, errors.New("catalog unreachable")
	}
	want, ok := p[role]
	return ok && want == password, nil
}

func testConfig() Config {
	return Config{
		ListenAddress:      "127.0.0.1:0",
		MaxFrameSize:       1 << 20,
		MaxInFlightPerConn: 256,
		MaxInFlight:        1024,
		Authenticator:      "none",
	}
}

// startServer serves h on a loopback port until the test ends.
func startServer(t testing.TB, cfg Config, h Handler, auth Authenticator) (*Server, string) {
	t.Helper()
	s, err := New(cfg, h, Options{Authenticator: auth, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != ErrServerClosed {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

// client speaks the protocol over a raw socket.
type client struct {
	t    testing.TB
	nc   net.Conn
	v    wire.Version
	comp wire.Compressor
	// in reads frames: nc, then from v5's READY segments (seg).
	in  io.Reader
	seg *wire.SegmentReader
	// segLZ4: the v5 segments are lz4 ones.
	segLZ4 bool
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, v: wire.V4, in: nc}
}

// segmented switches the client to v5 segments both ways, as after
// READY or AUTHENTICATE.
func (c *client) segmented(lz4 bool) {
	c.seg = wire.NewSegmentReader(c.nc, lz4)
	c.in, c.segLZ4, c.comp = c.seg, lz4, nil
}

func (c *client) send(stream int16, m wire.Message) {
	c.t.Helper()
	comp := c.comp
	if m.Opcode() == wire.OpStartup {
		comp = nil
	}
	b, err := wire.AppendFrame(nil, wire.Header{Version: c.v, Stream: stream}, nil, m, comp)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.seg != nil {
		if b, err = wire.AppendSegments(nil, b, c.segLZ4); err != nil {
			c.t.Fatal(err)
		}
	}
	c.raw(b)
}

func (c *client) raw(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) recv() (wire.Header, wire.Envelope, wire.Message) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	in := c.in
	if in == nil {
		in = c.nc
	}
	f, err := wire.ReadFrame(in, 1<<24)
	if err != nil {
		c.t.Fatalf("reading a frame: %v", err)
	}
	if !f.Response {
		c.t.Fatalf("frame without the response bit: %+v", f.Header)
	}
	body := f.Body
	if f.Flags&wire.FlagCompression != 0 {
		if c.comp == nil {
			c.t.Fatal("compressed answer without compression")
		}
		if body, err = c.comp.Decompress(nil, body, 1<<24); err != nil {
			c.t.Fatal(err)
		}
	}
	env, body, err := wire.SplitBody(f.Header, body)
	if err != nil {
		c.t.Fatal(err)
	}
	m, err := wire.DecodeResponse(f.Opcode, f.Version, body)
	if err != nil {
		c.t.Fatalf("decoding %v: %v", f.Opcode, err)
	}
	return f.Header, env, m
}

// roundTrip sends m and returns the answer, which must be on stream.
func (c *client) roundTrip(stream int16, m wire.Message) wire.Message {
	c.t.Helper()
	c.send(stream, m)
	h, _, resp := c.recv()
	if h.Stream != stream {
		c.t.Fatalf("answer on stream %d, want %d", h.Stream, stream)
	}
	return resp
}

func (c *client) startup(opts map[string]string) {
	c.t.Helper()
	if opts == nil {
		opts = map[string]string{}
	}
	opts["CQL_VERSION"] = "3.0.0"
	if _, ok := c.roundTrip(0, &wire.Startup{Options: opts}).(*wire.Ready); !ok {
		c.t.Fatal("STARTUP not answered with READY")
	}
	if c.v >= wire.V5 {
		c.segmented(opts["COMPRESSION"] == "lz4")
	}
}

func query(q string, values ...[]byte) *wire.Query {
	m := &wire.Query{Query: q, Params: wire.QueryParams{Consistency: wire.One}}
	for _, v := range values {
		m.Params.Values = append(m.Params.Values, wire.BytesValue(v))
	}
	return m
}

// wantError checks that m is an ERROR with code and a message containing
// part.
func wantError(t *testing.T, m wire.Message, code wire.ErrorCode, part string) *wire.Error {
	t.Helper()
	e, ok := m.(*wire.Error)
	if !ok {
		t.Fatalf("got %T %+v, want an error %v", m, m, code)
	}
	if e.Code != code || !strings.Contains(e.Message, part) {
		t.Fatalf("got error %v %q, want %v containing %q", e.Code, e.Message, code, part)
	}
	return e
}

// expectClosed checks that the server closes the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	if n, err := c.nc.Read(b[:]); err != io.EOF {
		c.t.Fatalf("read %d bytes, %v; want the connection closed", n, err)
	}
}

func TestHandshake(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c := dial(t, addr)

	sup, ok := c.roundTrip(1, &wire.Options{}).(*wire.Supported)
	if !ok || sup.Options["CQL_VERSION"][0] != CQLVersion ||
		strings.Join(sup.Options["COMPRESSION"], ",") != "snappy,lz4" ||
		strings.Join(sup.Options["PROTOCOL_VERSIONS"], ",") != "3/v3,4/v4,5/v5" {
		t.Fatalf("SUPPORTED %+v", sup)
	}
	wantError(t, c.roundTrip(2, query("ECHO")), wire.CodeProtocol, "Unexpected message QUERY, expecting STARTUP or OPTIONS")
	wantError(t, c.roundTrip(3, &wire.Startup{Options: map[string]string{}}), wire.CodeProtocol, "Missing value CQL_VERSION in STARTUP message")
	wantError(t, c.roundTrip(4, &wire.Startup{Options: map[string]string{"CQL_VERSION": "2.0.0"}}), wire.CodeProtocol, "is not supported")
	wantError(t, c.roundTrip(4, &wire.Startup{Options: map[string]string{"CQL_VERSION": "x"}}), wire.CodeProtocol, "Invalid version value: x")
	wantError(t, c.roundTrip(5, &wire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0", "COMPRESSION": "zstd"}}), wire.CodeProtocol, "Unknown compression algorithm: zstd")
	c.startup(map[string]string{"DRIVER_NAME": "test"})
	wantError(t, c.roundTrip(6, &wire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}), wire.CodeProtocol, "already initialized")
	wantError(t, c.roundTrip(7, &wire.Register{Events: []string{"NOPE"}}), wire.CodeProtocol, "NOPE")
	if _, ok := c.roundTrip(8, &wire.Register{Events: []string{wire.SchemaChanged}}).(*wire.Ready); !ok {
		t.Fatal("REGISTER not answered with READY")
	}
	if _, ok := c.roundTrip(9, &wire.Options{}).(*wire.Supported); !ok {
		t.Fatal("OPTIONS after STARTUP")
	}
	// USE sets the session's keyspace for later statements.
	if r, ok := c.roundTrip(10, query("USE ks1")).(*wire.SetKeyspace); !ok || r.Keyspace != "ks1" {
		t.Fatalf("USE answered %+v", r)
	}
	rows := c.roundTrip(11, query("WHO")).(*wire.Rows)
	if string(rows.Rows[0][0]) != "ks1" || string(rows.Rows[0][1]) != "" {
		t.Fatalf("WHO: %q", rows.Rows[0])
	}
}

func TestUnsupportedVersions(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	// Each client opens with OPTIONS in its version; the answer is a
	// Protocol error framed so it can read it, then the server hangs up.
	tests := []struct {
		name   string
		in     string
		header string // the answer's header up to its length
		ver    int
	}{
		{"v1", "01000a0500000000", "81000a00", 1},
		{"v2", "02007f0500000000", "82007f00", 2},
		{"v6", "060000070500000000", "8400000700", 6},
		{"DSE_V2", "420001000500000000", "8400010000", 0x42},
		{"v0", "000000010500000000", "8400000100", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			in := make([]byte, len(tt.in)/2)
			fmt.Sscanf(tt.in, "%x", &in)
			c.raw(in)
			c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(c.nc)
			if err != nil {
				t.Fatal(err)
			}
			msg := fmt.Sprintf("Invalid or unsupported protocol version (%d); supported versions are (3/v3, 4/v4, 5/v5)", tt.ver)
			var want []byte
			fmt.Sscanf(tt.header, "%x", &want)
			body := binary.BigEndian.AppendUint32(nil, uint32(wire.CodeProtocol))
			body = binary.BigEndian.AppendUint16(body, uint16(len(msg)))
			body = append(body, msg...)
			want = binary.BigEndian.AppendUint32(want, uint32(len(body)))
			want = append(want, body...)
			if !bytes.Equal(got, want) {
				t.Fatalf("got  %x\nwant %x", got, want)
			}
		})
	}
	// A v3 client is served.
	c := dial(t, addr)
	c.v = wire.V3
	c.startup(nil)
	if _, ok := c.roundTrip(1, query("ECHO", []byte{0, 0, 0, 1})).(*wire.Rows); !ok {
		t.Fatal("v3 ECHO")
	}
	// A version change on an open connection is refused.
	c.v = wire.V4
	wantError(t, c.roundTrip(2, query("ECHO")), wire.CodeProtocol, "Invalid message version. Got 4/v4 but previous messages on this connection had version 3/v3")
}

func TestMalformedFrames(t *testing.T) {
	cfg := testConfig()
	cfg.MaxFrameSize = 4096
	_, addr := startServer(t, cfg, newTestHandler(), nil)
	c := dial(t, addr)
	c.startup(nil)
	good := func(stream int16) {
		t.Helper()
		if _, ok := c.roundTrip(stream, query("ECHO", []byte{0, 0, 0, 9})).(*wire.Rows); !ok {
			t.Fatal("the connection no longer serves")
		}
	}
	frame := func(version byte, flags wire.Flags, stream int16, op wire.Opcode, body []byte) []byte {
		b := wire.AppendHeader(nil, wire.Header{Version: wire.Version(version), Flags: flags, Stream: stream, Opcode: op})
		b = append(b, body...)
		wire.PatchLength(b)
		return b
	}
	queryBody, _ := query("ECHO").AppendBody(nil, wire.V4)

	v3Body, _ := query("ECHO").AppendBody(nil, wire.V3)
	tests := []struct {
		name  string
		frame []byte
		code  wire.ErrorCode
		part  string
	}{
		{"truncated body", frame(4, 0, 1, wire.OpQuery, queryBody[:5]), wire.CodeProtocol, "Not enough bytes"},
		{"bad flags", frame(4, 0, 2, wire.OpQuery, append(bytes.Clone(queryBody[:len(queryBody)-1]), 0x80)), wire.CodeProtocol, "Unknown query flags"},
		{"unknown opcode", frame(4, 0, 3, 0x42, nil), wire.CodeProtocol, "Unknown opcode 66"},
		{"response opcode", frame(4, 0, 4, wire.OpReady, nil), wire.CodeProtocol, "Wrong protocol direction (expected RESPONSE, got REQUEST) for opcode 2 (READY)"},
		{"response bit", frame(0x84, 0, 5, wire.OpQuery, queryBody), wire.CodeProtocol, "Wrong protocol direction (expected REQUEST, got RESPONSE) for opcode 7 (QUERY)"},
		{"credentials", frame(4, 0, 6, wire.OpCredentials, []byte{0, 0}), wire.CodeProtocol, "Unsupported message"},
		{"bad utf-8", frame(4, 0, 7, wire.OpQuery, []byte{0, 0, 0, 2, 0xff, 0xfe, 0, 1, 0}), wire.CodeProtocol, "Invalid UTF-8"},
		// The limit counts the header, and the code is Invalid, as
		// Cassandra's native_transport_max_frame_size.
		{"too large", frame(4, 0, 8, wire.OpQuery, make([]byte, 4096-8)), wire.CodeInvalid, "Request is too big: length 4097 exceeds maximum allowed length 4096."},
		{"bad consistency", frame(4, 0, 9, wire.OpQuery, []byte{0, 0, 0, 1, 'x', 0, 0x77, 0}), wire.CodeProtocol, "Unknown code 119 for a consistency level"},
		{"bad custom payload", frame(4, wire.FlagCustomPayload, 10, wire.OpQuery, []byte{0, 5}), wire.CodeProtocol, "custom payload"},
		{"v3 custom payload", frame(4, 0, 11, wire.OpQuery, v3Body), wire.CodeProtocol, "Received frame with CUSTOM_PAYLOAD flag for native protocol version < 4"},
	}
	v3 := dial(t, addr)
	v3.v = wire.V3
	v3.startup(nil)
	for i, tt := range tests {
		conn := c
		if tt.name == "v3 custom payload" {
			conn = v3
			tt.frame = frame(3, wire.FlagCustomPayload, 11, wire.OpQuery, append([]byte{0, 1, 0, 1, 'k', 0, 0, 0, 1, 'v'}, v3Body...))
		}
		conn.raw(tt.frame)
		h, _, m := conn.recv()
		if h.Stream != int16(i+1) {
			t.Errorf("%s: answer on stream %d", tt.name, h.Stream)
		}
		wantError(t, m, tt.code, tt.part)
		good(100 + int16(i))
	}
	// The largest frame allowed is served.
	big := query("ECHO", make([]byte, 4096-wire.HeaderSize-len(queryBody)-6)) // 2 bytes of count, 4 of length
	if m := c.roundTrip(60, big); m.Opcode() != wire.OpResult {
		t.Fatalf("a frame of the maximum size answered %+v", m)
	}
	// A custom payload and the tracing flag are accepted; the answer has no
	// tracing flag (and no tracing ID), which tells the driver there is no
	// trace to fetch.
	payload := []byte{0, 1, 0, 1, 'k', 0, 0, 0, 1, 'v'}
	c.raw(frame(4, wire.FlagCustomPayload|wire.FlagTracing, 50, wire.OpQuery, append(payload, queryBody...)))
	if h, _, m := c.recv(); h.Stream != 50 || m.Opcode() != wire.OpResult || h.Flags&wire.FlagTracing != 0 {
		t.Fatalf("query with a payload and tracing answered %+v %+v", h, m)
	}
	// Garbage that leaves the stream out of step ends only that connection.
	bad := dial(t, addr)
	bad.raw([]byte{4, 0, 0})
	bad.nc.(*net.TCPConn).CloseWrite()
	bad.expectClosed()
	good(200)
}

func TestConcurrentStreams(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, testConfig(), h, nil)
	c := dial(t, addr)
	c.startup(nil)
	// n statements block in the handler at once, then are released in
	// reverse order: the answers come in the order of release.
	const n = 100
	for i := range n {
		c.send(int16(i), query("WAIT "+strconv.Itoa(i)))
	}
	for range n {
		<-h.started
	}
	if got := h.running.Load(); got != n {
		t.Fatalf("%d statements running, want %d", got, n)
	}
	// A statement that does not wait is answered meanwhile.
	if _, ok := c.roundTrip(n, query("ECHO")).(*wire.Rows); !ok {
		t.Fatal("ECHO while others wait")
	}
	for i := n - 1; i >= 0; i-- {
		h.release(strconv.Itoa(i))
		hd, _, m := c.recv()
		if hd.Stream != int16(i) || string(m.(*wire.Rows).Rows[0][0]) != strconv.Itoa(i) {
			t.Fatalf("answer on stream %d (%+v), want %d", hd.Stream, m, i)
		}
	}
}

func TestInFlightLimits(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlightPerConn = 2
	cfg.MaxInFlight = 3
	h := newTestHandler()
	_, addr := startServer(t, cfg, h, nil)
	c1, c2 := dial(t, addr), dial(t, addr)
	c1.startup(nil)
	c2.startup(nil)
	for i := range 3 {
		c1.send(int16(i), query(fmt.Sprintf("WAIT a%d", i)))
	}
	started := map[string]bool{<-h.started: true, <-h.started: true}
	if !started["a0"] || !started["a1"] {
		t.Fatalf("started %v", started)
	}
	for i := range 2 {
		c2.send(int16(i), query(fmt.Sprintf("WAIT b%d", i)))
	}
	if s := <-h.started; s != "b0" {
		t.Fatalf("started %s, want b0", s)
	}
	// Now a0, a1, b0 hold the server's 3 slots; a2 and b1 must wait.
	select {
	case s := <-h.started:
		t.Fatalf("%s started past the limits", s)
	case <-time.After(50 * time.Millisecond):
	}
	h.release("a0")
	c1.recv()
	// The freed slot goes to a2 or b1, not both.
	first := <-h.started
	h.release(first)
	second := <-h.started
	if first == second || (first != "a2" && first != "b1") || (second != "a2" && second != "b1") {
		t.Fatalf("started %s then %s", first, second)
	}
	for _, g := range []string{"a1", "b0", second} {
		h.release(g)
	}
	for range 2 {
		c1.recv()
		c2.recv()
	}
	if m := h.maxRun.Load(); m > 3 {
		t.Fatalf("%d statements ran at once, the limit is 3", m)
	}
}

// TestIdleConnectionsHoldNoSlots: connections waiting for their next
// request take none of the server's in-flight slots.
func TestIdleConnectionsHoldNoSlots(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlight = 1
	_, addr := startServer(t, cfg, newTestHandler(), nil)
	for range 3 {
		dial(t, addr).startup(nil)
	}
	c := dial(t, addr)
	c.startup(nil)
	for i := range 3 {
		if _, ok := c.roundTrip(int16(i), query("ECHO")).(*wire.Rows); !ok {
			t.Fatal("ECHO")
		}
	}
}

func TestSkipMetadata(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, testConfig(), h, nil)
	c := dial(t, addr)
	c.startup(nil)
	p := c.roundTrip(1, &wire.Prepare{Query: "SELECT ?"}).(*wire.Prepared)
	if len(p.Bound.Columns) != 1 || len(p.Bound.PKIndexes) != 1 {
		t.Fatalf("prepared %+v", p)
	}
	for _, skip := range []bool{false, true} {
		x := &wire.Execute{ID: p.ID, Params: wire.QueryParams{Consistency: wire.One, SkipMetadata: skip,
			Values: []wire.Value{wire.BytesValue([]byte{0, 0, 0, 5})}}}
		r := c.roundTrip(2, x).(*wire.Rows)
		if skip {
			// The handler forgets the ID: the error names it anyway.
			h.forget.Store(true)
			e := wantError(t, c.roundTrip(3, x), wire.CodeUnprepared, "not found")
			if !bytes.Equal(e.ID, p.ID) {
				t.Fatalf("Unprepared ID %x, want %x", e.ID, p.ID)
			}
		}
		if r.Metadata.NoMetadata != skip || len(r.Metadata.Columns) == 0 == !skip || !bytes.Equal(r.Rows[0][0], []byte{0, 0, 0, 5}) {
			t.Fatalf("skip %v: %+v", skip, r)
		}
	}
	// Rows the handler says have other columns come with them at v4.
	p = c.roundTrip(4, &wire.Prepare{Query: "CHANGED ?"}).(*wire.Prepared)
	x := &wire.Execute{ID: p.ID, Params: wire.QueryParams{Consistency: wire.One, SkipMetadata: true,
		Values: []wire.Value{wire.BytesValue([]byte{0, 0, 0, 5})}}}
	if r := c.roundTrip(5, x).(*wire.Rows); r.Metadata.NoMetadata || len(r.Metadata.Columns) != 1 {
		t.Fatalf("changed columns skipped: %+v", r.Metadata)
	}
}

func TestMaxConnections(t *testing.T) {
	cfg := testConfig()
	cfg.MaxConnections = 1
	s, addr := startServer(t, cfg, newTestHandler(), nil)
	c1 := dial(t, addr)
	c1.startup(nil)
	c2 := dial(t, addr)
	c2.expectClosed()
	c1.nc.Close()
	// Once the server has let go of the first, a new one is served.
	for {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	dial(t, addr).startup(nil)
}

func TestIdleTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.IdleTimeout = 100 * time.Millisecond
	h := newTestHandler()
	_, addr := startServer(t, cfg, h, nil)
	idle := dial(t, addr)
	idle.startup(nil)
	busy := dial(t, addr)
	busy.startup(nil)
	busy.send(1, query("WAIT long"))
	<-h.started
	idle.expectClosed()
	// The connection waiting for an answer is not idle.
	time.Sleep(3 * cfg.IdleTimeout)
	h.release("long")
	if hd, _, _ := busy.recv(); hd.Stream != 1 {
		t.Fatalf("answer on stream %d", hd.Stream)
	}
	busy.expectClosed()
}

func TestCompression(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	for _, comp := range wire.Compressors {
		t.Run(comp.Name(), func(t *testing.T) {
			c := dial(t, addr)
			c.comp = comp
			c.startup(map[string]string{"COMPRESSION": comp.Name()})
			big := bytes.Repeat([]byte("sediment"), 1000)
			c.send(1, query("ECHO", big, []byte{1}))
			h, _, m := c.recv()
			if h.Flags&wire.FlagCompression == 0 {
				t.Fatal("answer not compressed")
			}
			if r := m.(*wire.Rows); !bytes.Equal(r.Rows[0][0], big) {
				t.Fatal("echo mismatch")
			}
			// Uncompressed requests are fine too: the flag says which.
			c.comp = nil
			b, _ := wire.AppendFrame(nil, wire.Header{Version: wire.V4, Stream: 2}, nil, query("ECHO"), nil)
			c.raw(b)
			c.comp = comp
			if h, _, _ := c.recv(); h.Stream != 2 {
				t.Fatalf("stream %d", h.Stream)
			}
			// A malformed compressed body is a protocol error.
			c.raw([]byte{4, byte(wire.FlagCompression), 0, 3, byte(wire.OpQuery), 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff})
			_, _, m = c.recv()
			wantError(t, m, wire.CodeProtocol, "")
		})
	}
}

func TestPasswordAuthentication(t *testing.T) {
	cfg := testConfig()
	cfg.Authenticator = "password"
	if _, err := New(cfg, newTestHandler(), Options{}); !errors.Is(err, ErrNoAuthenticator) {
		t.Fatalf("New without an authenticator: %v", err)
	}
	_, addr := startServer(t, cfg, newTestHandler(), passwords{"alice": "secret"})
	c := dial(t, addr)
	a, ok := c.roundTrip(0, &wire.Startup{Options: map[string]string{"CQL_VERSION": "3.4.5"}}).(*wire.Authenticate)
	if !ok || a.Authenticator != PasswordAuthenticatorClass {
		t.Fatalf("STARTUP answered %+v", a)
	}
	wantError(t, c.roundTrip(1, query("WHO")), wire.CodeProtocol, "expecting SASL_RESPONSE")
	wantError(t, c.roundTrip(2, &wire.AuthResponse{Token: []byte("alice:secret")}), wire.CodeBadCredentials, "Password must not be null")
	wantError(t, c.roundTrip(3, &wire.AuthResponse{Token: []byte("\x00alice\x00wrong")}), wire.CodeBadCredentials, "Provided username alice and/or password are incorrect")
	wantError(t, c.roundTrip(4, &wire.AuthResponse{Token: []byte("\x00nobody\x00secret")}), wire.CodeBadCredentials, "Provided username nobody")
	wantError(t, c.roundTrip(5, &wire.AuthResponse{Token: []byte("\x00broken\x00x")}), wire.CodeServer, "Internal server error")
	if _, ok := c.roundTrip(6, &wire.AuthResponse{Token: []byte("\x00alice\x00secret")}).(*wire.AuthSuccess); !ok {
		t.Fatal("good password refused")
	}
	rows := c.roundTrip(7, query("WHO")).(*wire.Rows)
	if string(rows.Rows[0][1]) != "alice" {
		t.Fatalf("user %q", rows.Rows[0][1])
	}
}

func TestErrorsAndWarnings(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c := dial(t, addr)
	c.startup(nil)
	wantError(t, c.roundTrip(1, query("FAIL")), wire.CodeInvalid, "failed as asked")
	e := wantError(t, c.roundTrip(2, query("GOERR")), wire.CodeServer, "Internal server error")
	if strings.Contains(e.Message, "secret") {
		t.Fatalf("internal error leaked: %q", e.Message)
	}
	wantError(t, c.roundTrip(3, query("PANIC")), wire.CodeServer, "Internal server error")
	e = wantError(t, c.roundTrip(4, query("READFAIL")), wire.CodeReadFailure, "read failed")
	if e.NumFailures != 1 || e.BlockFor != 1 {
		t.Fatalf("read failure %+v", e)
	}
	wantError(t, c.roundTrip(5, query("NONSENSE")), wire.CodeSyntax, "no viable alternative")
	c.send(6, query("WARN"))
	h, env, m := c.recv()
	if h.Flags&wire.FlagWarning == 0 || strings.Join(env.Warnings, "|") != "first warning|second warning" || m.Opcode() != wire.OpResult {
		t.Fatalf("warnings %+v %+v", h, env)
	}

	// v3 has neither failures nor warnings.
	c3 := dial(t, addr)
	c3.v = wire.V3
	c3.startup(nil)
	e = wantError(t, c3.roundTrip(1, query("READFAIL")), wire.CodeReadTimeout, "read failed")
	if e.BlockFor != 1 {
		t.Fatalf("read timeout %+v", e)
	}
	c3.send(2, query("WARN"))
	if h, _, _ := c3.recv(); h.Flags&wire.FlagWarning != 0 {
		t.Fatal("warnings sent to a v3 client")
	}
}

func TestEvents(t *testing.T) {
	s, addr := startServer(t, testConfig(), newTestHandler(), nil)
	reg, other := dial(t, addr), dial(t, addr)
	reg.comp = wire.LZ4
	reg.startup(map[string]string{"COMPRESSION": "lz4"})
	other.startup(nil)
	reg.roundTrip(1, &wire.Register{Events: []string{wire.SchemaChanged, wire.StatusChange}})
	ev := &wire.Event{Type: wire.SchemaChanged, Schema: wire.SchemaChange{Change: "CREATED", Target: "TABLE", Keyspace: "ks", Name: "t"}}
	s.Publish(ev)
	s.Publish(&wire.Event{Type: wire.TopologyChange, Change: "NEW_NODE"}) // nobody registered
	h, _, m := reg.recv()
	if h.Stream != wire.EventStream || h.Opcode != wire.OpEvent {
		t.Fatalf("event frame %+v", h)
	}
	if got := m.(*wire.Event); !reflect.DeepEqual(got, ev) {
		t.Fatalf("event %+v", got)
	}
	// Neither the unregistered connection nor the unregistered type
	// produced a frame: the next frames are answers.
	for _, c := range []*client{reg, other} {
		if h, _, _ := c.recv2(7, query("ECHO")); h.Stream != 7 {
			t.Fatalf("stream %d", h.Stream)
		}
	}
}

// recv2 sends m and returns the next frame, whatever it is.
func (c *client) recv2(stream int16, m wire.Message) (wire.Header, wire.Envelope, wire.Message) {
	c.send(stream, m)
	return c.recv()
}

func TestCloseCancelsRequests(t *testing.T) {
	h := newTestHandler()
	s, err := New(testConfig(), h, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	c := dial(t, ln.Addr().String())
	c.startup(nil)
	c.send(1, query("WAIT forever"))
	<-h.started
	s.Close() // returns only once the statement gave up
	if h.running.Load() != 0 {
		t.Fatal("a statement still runs after Close")
	}
	if err := s.Serve(ln); err != ErrServerClosed {
		t.Fatalf("Serve after Close: %v", err)
	}
}

func TestConfig(t *testing.T) {
	var cfg Config
	fs := newFlagSet()
	cfg.RegisterFlags(fs)
	if DefaultConfig() != cfg {
		t.Fatalf("DefaultConfig %+v, flags %+v", DefaultConfig(), cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if cfg.ListenAddress != "127.0.0.1:9042" || cfg.MaxFrameSize != 16<<20 || cfg.Authenticator != "none" {
		t.Fatalf("defaults %+v", cfg)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.ListenAddress = "" },
		func(c *Config) { c.MaxFrameSize = 10 },
		func(c *Config) { c.MaxConnections = -1 },
		func(c *Config) { c.MaxInFlightPerConn = 0 },
		func(c *Config) { c.MaxInFlight = 0 },
		func(c *Config) { c.IdleTimeout = -time.Second },
		func(c *Config) { c.Authenticator = "ldap" },
		func(c *Config) { c.TLS.CertFile = "x" },
		func(c *Config) { c.TLS.ClientCAFile = "x" },
	} {
		c := cfg
		bad(&c)
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
}

func newFlagSet() *flag.FlagSet { return flag.NewFlagSet("test", flag.ContinueOnError) }

// flakyListener fails its first Accept, as a listener out of file
// descriptors does.
type flakyListener struct {
	net.Listener
	failed atomic.Bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.failed.CompareAndSwap(false, true) {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: errors.New("too many open files")}
	}
	return l.Listener.Accept()
}

func TestAcceptErrorsAreRetried(t *testing.T) {
	s, err := New(testConfig(), newTestHandler(), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(&flakyListener{Listener: ln}) }()
	dial(t, ln.Addr().String()).startup(nil)
	s.Close()
	if err := <-done; err != ErrServerClosed {
		t.Fatalf("Serve: %v", err)
	}
}
