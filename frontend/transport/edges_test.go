package transport

import (
	"bytes"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/testwait"
)

// The protocol's edges, answered as Cassandra 4 answers them
// (org.apache.cassandra.transport: InitialConnectionHandler, Envelope,
// Message, StartupMessage, RegisterMessage, AuthResponse).

// rawFrame builds a request frame with any header.
func rawFrame(version byte, flags wire.Flags, stream int16, op wire.Opcode, body []byte) []byte {
	b := wire.AppendHeader(nil, wire.Header{Version: wire.Version(version &^ 0x80), Response: version&0x80 != 0, Flags: flags, Stream: stream, Opcode: op})
	b = append(b, body...)
	wire.PatchLength(b)
	return b
}

func TestEdgesBeforeStartup(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c := dial(t, addr)
	// Before STARTUP only the opcode is looked at: a malformed QUERY is
	// refused for being a QUERY, not for its body.
	c.raw(rawFrame(4, 0, 1, wire.OpQuery, []byte{0xff}))
	if h, _, m := c.recv(); h.Stream != 1 {
		t.Fatalf("answer on stream %d", h.Stream)
	} else {
		wantError(t, m, wire.CodeProtocol, "Unexpected message QUERY, expecting STARTUP or OPTIONS")
	}
	for i, op := range []wire.Opcode{wire.OpCredentials, wire.OpRegister, wire.OpAuthResponse} {
		c.raw(rawFrame(4, 0, int16(2+i), op, nil))
		_, _, m := c.recv()
		wantError(t, m, wire.CodeProtocol, "Unexpected message "+op.String()+", expecting STARTUP or OPTIONS")
	}
	// A response from the client is refused too, and opcodes are checked
	// before the state.
	c.raw(rawFrame(0x84, 0, 5, wire.OpReady, nil))
	_, _, m := c.recv()
	wantError(t, m, wire.CodeProtocol, "Unexpected message READY, expecting STARTUP or OPTIONS")
	c.raw(rawFrame(4, 0, 6, 0x33, nil))
	_, _, m = c.recv()
	wantError(t, m, wire.CodeProtocol, "Unknown opcode 51")

	// OPTIONS is answered in its own version; the connection's version is
	// the STARTUP's.
	c.v = wire.V3
	h, _, _ := c.recv2(7, &wire.Options{})
	if h.Version != wire.V3 {
		t.Fatalf("SUPPORTED in v%d", h.Version)
	}
	c.v = wire.V4
	// Option names are case-insensitive; extra options are accepted.
	r := c.roundTrip(8, &wire.Startup{Options: map[string]string{"cql_version": "3.4.5", "Driver_Name": "x", "THROW_ON_OVERLOAD": "1", "NO_COMPACT": "true"}})
	if _, ok := r.(*wire.Ready); !ok {
		t.Fatalf("STARTUP answered %+v", r)
	}
	if h, _, _ := c.recv2(9, query("ECHO")); h.Version != wire.V4 {
		t.Fatalf("answer in v%d", h.Version)
	}
}

func TestEdgesStartup(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c := dial(t, addr)
	startup := func(stream int16, opts map[string]string) wire.Message {
		t.Helper()
		return c.roundTrip(stream, &wire.Startup{Options: opts})
	}
	wantError(t, startup(1, map[string]string{"COMPRESSION": "lz4"}), wire.CodeProtocol, "Missing value CQL_VERSION in STARTUP message")
	// The name in the message is lowercased, as Cassandra lowercases it.
	wantError(t, startup(2, map[string]string{"CQL_VERSION": "3.0.0", "COMPRESSION": "ZSTD"}), wire.CodeProtocol, "Unknown compression algorithm: zstd")
	wantError(t, startup(3, map[string]string{"CQL_VERSION": "2.0.0"}), wire.CodeProtocol,
		"CQL version 2.0.0 is not supported by the binary protocol (supported version are >= 3.0.0)")
	wantError(t, startup(4, map[string]string{"CQL_VERSION": "3"}), wire.CodeProtocol, "Invalid version value: 3")
	// A failed STARTUP fixes the version: a retry in another is refused.
	// The error is framed in the connection's version.
	c.v = wire.V3
	h, _, m := c.recv2(5, &wire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}})
	wantError(t, m, wire.CodeProtocol, "Invalid message version. Got 3/v3 but previous messages on this connection had version 4/v4")
	if h.Version != wire.V4 || h.Stream != 5 {
		t.Fatalf("error frame %+v", h)
	}
	c.v = wire.V4
	if _, ok := startup(6, map[string]string{"CQL_VERSION": "3.0.0", "COMPRESSION": "Snappy"}).(*wire.Ready); !ok {
		t.Fatal("STARTUP after failures")
	}
	c.comp = wire.Snappy
	if m := c.roundTrip(7, query("ECHO")); m.Opcode() != wire.OpResult {
		t.Fatalf("ECHO answered %+v", m)
	}
}

func TestCheckCQLVersion(t *testing.T) {
	for _, v := range []string{"3.0.0", "3.4.5", "3.4", "4.0", "99.0.0", "3.0.0-beta1", "3.0.0+build.7",
		"3.0.0.1", "3.0.0.0.0", "2.99.0", "2.99.1", "2.99.0.0", "2.99.0+b", "3.0.0-alpha-1.x_y", "3.0.0--x"} {
		if err := checkCQLVersion(v); err != nil {
			t.Errorf("%q refused: %v", v, err)
		}
	}
	for _, v := range []string{"2.0.0", "1.2", "2.98.9", "2.99.0-beta", "0.0.0"} {
		if err := checkCQLVersion(v); err == nil || err.Error() != "CQL version "+v+" is not supported by the binary protocol (supported version are >= 3.0.0)" {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"", "3", "x", "3.", "3.0.x", "3.0.0-", "3.0.0 ", " 3.0.0", "3.0.0+", "-3.0.0",
		"99999999999.0", "3.0.2147483648", "3.x.0", "v3.0.0", "3.0.0-é", "3.0.０"} {
		if err := checkCQLVersion(v); err == nil || err.Error() != "Invalid version value: "+v {
			t.Errorf("%q: %v", v, err)
		}
	}
}

func TestEdgesFlagsAndStreams(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c := dial(t, addr)
	c.startup(nil)
	body, _ := query("ECHO", []byte{0, 0, 0, 7}).AppendBody(nil, wire.V4)
	served := func(frame []byte, stream int16) {
		t.Helper()
		c.raw(frame)
		h, _, m := c.recv()
		if h.Stream != stream || m.Opcode() != wire.OpResult {
			t.Fatalf("answered %+v %+v", h, m)
		}
	}
	// The beta flag means nothing to a version that is not in beta.
	served(rawFrame(4, 0x10, 1, wire.OpQuery, body), 1)
	// Without compression agreed, the compression flag is ignored and
	// the body read as it is.
	served(rawFrame(4, wire.FlagCompression, 2, wire.OpQuery, body), 2)
	// Cassandra does not check a request's stream: a negative one is
	// answered on that stream.
	served(rawFrame(4, 0, -7, wire.OpQuery, body), -7)
	// A response frame from a client, once started, answers nothing.
	c.raw(rawFrame(0x84, 0, 3, wire.OpReady, nil))
	c.raw(rawFrame(0x84, 0, 4, wire.OpResult, []byte{0, 0, 0, 1}))
	served(rawFrame(4, 0, 5, wire.OpQuery, body), 5)
	// Bytes after the message within the frame are ignored.
	served(rawFrame(4, 0, 6, wire.OpQuery, append(append([]byte{}, body...), 1, 2, 3)), 6)
}

func TestEdgesRegister(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	for _, v := range []wire.Version{wire.V3, wire.V4} {
		c := dial(t, addr)
		c.v = v
		c.startup(nil)
		wantError(t, c.roundTrip(1, &wire.Register{Events: []string{"SCHEMA_CHANGE", "NOPE"}}), wire.CodeProtocol, "Invalid value 'NOPE' for Type")
		// Names are read case-insensitively.
		if m := c.roundTrip(2, &wire.Register{Events: []string{"schema_change", "Status_Change"}}); m.Opcode() != wire.OpReady {
			t.Fatalf("v%d: REGISTER answered %+v", v, m)
		}
		m := c.roundTrip(3, &wire.Register{Events: []string{"TRACE_COMPLETE"}})
		if v == wire.V3 {
			wantError(t, m, wire.CodeProtocol, "Event TRACE_COMPLETE not valid for protocol version 3/v3")
		} else if m.Opcode() != wire.OpReady {
			t.Fatalf("v4: REGISTER TRACE_COMPLETE answered %+v", m)
		}
	}
}

func TestEdgesAuthResponseWhenReady(t *testing.T) {
	// Without an authenticator, AUTH_RESPONSE completes at once.
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	c := dial(t, addr)
	c.startup(nil)
	if m, ok := c.roundTrip(1, &wire.AuthResponse{Token: []byte("anything")}).(*wire.AuthSuccess); !ok || m.Token != nil {
		t.Fatalf("AUTH_RESPONSE answered %+v", m)
	}

	// With passwords, it logs the connection in again.
	cfg := testConfig()
	cfg.Authenticator = "password"
	_, addr = startServer(t, cfg, newTestHandler(), passwords{"alice": "secret", "bob": "hunter2"})
	c = dial(t, addr)
	c.send(0, &wire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}})
	c.recv()
	who := func(stream int16) string {
		t.Helper()
		return string(c.roundTrip(stream, query("WHO")).(*wire.Rows).Rows[0][1])
	}
	if _, ok := c.roundTrip(1, &wire.AuthResponse{Token: []byte("\x00alice\x00secret")}).(*wire.AuthSuccess); !ok || who(2) != "alice" {
		t.Fatal("login as alice")
	}
	wantError(t, c.roundTrip(3, &wire.AuthResponse{Token: []byte("\x00bob\x00wrong")}), wire.CodeBadCredentials, "Provided username bob and/or password are incorrect")
	if who(4) != "alice" {
		t.Fatal("a failed login changed the user")
	}
	if _, ok := c.roundTrip(5, &wire.AuthResponse{Token: []byte("\x00bob\x00hunter2")}).(*wire.AuthSuccess); !ok || who(6) != "bob" {
		t.Fatal("login again as bob")
	}
	wantError(t, c.roundTrip(7, &wire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}), wire.CodeProtocol, "Unexpected message STARTUP, the connection is already initialized")
}

func TestParsePlain(t *testing.T) {
	const format = `Credential format error: username or password is empty or contains NUL(\0) character`
	tests := []struct {
		token, user, password, err string
	}{
		{"\x00alice\x00secret", "alice", "secret", ""},
		{"admin\x00alice\x00secret", "alice", "secret", ""}, // the authorization identity is ignored
		{"alice\x00secret", "", "", "Authentication ID must not be null"},
		{"secret", "", "", "Password must not be null"},
		{"", "", "", "Password must not be null"},
		{"\x00\x00", "", "", "Password must not be null"},
		{"abc\x00\x00", "", "", "Password must not be null"},
		{"\x00\x00secret", "", "", "Authentication ID must not be null"},
		{"\x00a\x00a\x00", "", "", format},
		{"a\x00a\x00a\x00", "", "", format},
	}
	for _, tt := range tests {
		user, password, err := parsePlain([]byte(tt.token))
		if tt.err != "" {
			wantError(t, errMessage(err), wire.CodeBadCredentials, tt.err)
			continue
		}
		if err != nil || user != tt.user || password != tt.password {
			t.Errorf("%q: %q %q %v", tt.token, user, password, err)
		}
	}
}

// errMessage turns a *wire.Error into the message wantError reads.
func errMessage(err error) wire.Message {
	if e, ok := err.(*wire.Error); ok {
		return e
	}
	return &wire.Ready{}
}

// TestEdgesTooLargeThenServes checks that a frame over the limit is
// skipped whole, even arriving slowly, and the connection goes on.
func TestEdgesTooLargeThenServes(t *testing.T) {
	cfg := testConfig()
	cfg.MaxFrameSize = 2048
	_, addr := startServer(t, cfg, newTestHandler(), nil)
	c := dial(t, addr)
	c.startup(nil)
	f := rawFrame(4, 0, 9, wire.OpQuery, make([]byte, 3000))
	c.raw(f[:100])
	time.Sleep(10 * time.Millisecond)
	c.raw(f[100:])
	h, _, m := c.recv()
	if h.Stream != 9 || h.Version != wire.V4 {
		t.Fatalf("answer %+v", h)
	}
	wantError(t, m, wire.CodeInvalid, "Request is too big: length 3009 exceeds maximum allowed length 2048.")
	if m := c.roundTrip(10, query("ECHO")); m.Opcode() != wire.OpResult {
		t.Fatalf("then answered %+v", m)
	}
}

func TestThrowOnOverload(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlight = 1
	h := newTestHandler()
	_, addr := startServer(t, cfg, h, nil)
	busy, throw, wait := dial(t, addr), dial(t, addr), dial(t, addr)
	busy.startup(nil)
	throw.startup(map[string]string{"THROW_ON_OVERLOAD": "1"})
	wait.startup(map[string]string{"THROW_ON_OVERLOAD": "0"})
	busy.send(1, query("WAIT x"))
	testwait.Recv(t, "the handler to start", h.started)
	// The server's one slot is taken: the client that asked is told so at
	// once, on its stream, and its connection goes on.
	h2, _, m := throw.recv2(7, query("ECHO"))
	if h2.Stream != 7 {
		t.Fatalf("answer on stream %d", h2.Stream)
	}
	wantError(t, m, wire.CodeOverloaded, "Request breached limit on requests in flight. (Global: 1/1 requests.) Server is currently in an overloaded state and cannot accept more requests.")
	// The others wait for the slot.
	wait.send(2, query("ECHO"))
	wait.nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var b [1]byte
	if n, err := wait.nc.Read(b[:]); n != 0 || err == nil {
		t.Fatalf("a client that did not ask was answered while the server is full (%d bytes, %v)", n, err)
	}
	h.release("x")
	busy.recv()
	if hd, _, m := wait.recv(); hd.Stream != 2 || m.Opcode() != wire.OpResult {
		t.Fatalf("waiting client answered %+v %+v", hd, m)
	}
	// The slot is given back just after the answer is queued: the client
	// that asked may be told Overloaded until then, and served after.
	for i := 0; ; i++ {
		m := throw.roundTrip(8, query("ECHO"))
		if m.Opcode() == wire.OpResult {
			break
		}
		wantError(t, m, wire.CodeOverloaded, "Request breached limit")
		if i == 500 {
			t.Fatal("still overloaded with no statement running")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRepliesBoundWhenClientDoesNotRead checks that a client sending
// requests the reader answers itself, without reading the answers, is
// stopped being read rather than growing the server's queue of answers.
func TestRepliesBoundWhenClientDoesNotRead(t *testing.T) {
	s, err := New(testConfig(), newTestHandler(), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 64 << 10
	s.maxPendingReplies = limit
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	defer func() {
		s.Close()
		testwait.Recv(t, "Serve to return", done)
	}()
	c := dial(t, ln.Addr().String())
	c.nc.(*net.TCPConn).SetReadBuffer(4 << 10)
	c.startup(nil)
	s.mu.Lock()
	var sc *conn
	for x := range s.conns {
		sc = x
	}
	s.mu.Unlock()
	sc.nc.(*net.TCPConn).SetWriteBuffer(4 << 10)

	// 1 MiB of OPTIONS asks for about 10 MiB of SUPPORTED.
	opts := rawFrame(4, 0, 1, wire.OpOptions, nil)
	flood := bytes.Repeat(opts, (1<<20)/len(opts))
	go c.nc.Write(flood) // blocks once the server stops reading; ends when the test closes the connection
	answer := len(wire.AppendHeader(nil, wire.Header{})) + 200
	most := 0
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		most = max(most, sc.pending())
	}
	if most > limit+answer {
		t.Fatalf("%d bytes of answers queued, bound %d", most, limit)
	}
	if most < limit/2 {
		t.Fatalf("only %d bytes of answers queued: the client was not flooding", most)
	}
}
