package transport

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sedimentdb/sediment/frontend/wire"
)

// CQLVersion is the CQL version Sediment reports in SUPPORTED.
const CQLVersion = "3.4.5"

// supported answers OPTIONS.
var supported = &wire.Supported{Options: map[string][]string{
	"CQL_VERSION": {CQLVersion},
	// Cassandra 4 lists snappy first.
	"COMPRESSION":       {wire.Snappy.Name(), wire.LZ4.Name()},
	"PROTOCOL_VERSIONS": wire.SupportedVersions,
}}

type connState uint8

const (
	stateNew   connState = iota // before STARTUP
	stateAuth                   // AUTHENTICATE sent, waiting for a good AUTH_RESPONSE
	stateReady                  // statements accepted
)

const (
	// maxKeptBuffer bounds the write buffer kept for reuse.
	maxKeptBuffer = 1 << 20
	// maxPendingEvents is the most unwritten bytes past which an event
	// is dropped for a connection rather than queued.
	maxPendingEvents = 4 << 20
	// maxPendingReplies is the most unwritten bytes past which the reader
	// stops reading until the writer catches up: answers the reader
	// writes itself (OPTIONS, errors, Overloaded) take no in-flight slot,
	// so a client that sends without reading would otherwise grow them
	// without bound.
	maxPendingReplies = 4 << 20
	// drainTimeout bounds the last write to a connection being closed
	// after an error that ends it.
	drainTimeout = 5 * time.Second
)

type conn struct {
	s    *Server
	nc   net.Conn
	br   *bufio.Reader
	sess *Session
	// in is what frames are read from: br, then from v5 once STARTUP is
	// answered, a wire.SegmentReader over it.
	in io.Reader

	// ctx is canceled when the connection closes, abandoning its requests.
	ctx    context.Context
	cancel context.CancelFunc

	// Set by the reader before the connection is ready, fixed after.
	// version is 0 until STARTUP, which fixes it, as in Cassandra: OPTIONS
	// and the errors before it are answered in each frame's own version.
	version    wire.Version
	compressor wire.Compressor
	state      connState
	// throwOnOverload: the client asked in STARTUP (THROW_ON_OVERLOAD=1)
	// to be told Overloaded when the server's in-flight bound is full,
	// rather than not being read.
	throwOnOverload bool

	// events holds eventBit of each event type registered for.
	events atomic.Uint32
	// slots holds a token per request of this connection in flight.
	slots chan struct{}
	// active counts statements executing, for the idle timeout.
	active atomic.Int64
	reqs   sync.WaitGroup

	// Answers are appended to out and written by writeLoop: every answer
	// that finished while the previous write was in progress goes out in
	// one write. draining asks writeLoop to close once out is written.
	mu       sync.Mutex
	out      []byte
	draining bool
	// segmented (v5) says that out holds envelopes from segStart on,
	// which writeLoop wraps in segments (lz4 ones with segmentLZ4); the
	// bytes before segStart are the handshake's, sent as they are.
	segmented  bool
	segmentLZ4 bool
	segStart   int
	// unwritten counts the bytes queued or being written, read by the
	// reader without the lock.
	unwritten atomic.Int64
	kick      chan struct{}
	// wrote is signalled after each write, for a reader waiting on
	// maxPendingReplies.
	wrote chan struct{}

	once sync.Once
	done chan struct{}
}

func (s *Server) newConn(nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	br := bufio.NewReaderSize(nc, 32<<10)
	return &conn{
		s:      s,
		nc:     nc,
		br:     br,
		in:     br,
		sess:   &Session{ID: s.nextID.Add(1), RemoteAddr: nc.RemoteAddr()},
		ctx:    ctx,
		cancel: cancel,
		slots:  make(chan struct{}, s.cfg.MaxInFlightPerConn),
		kick:   make(chan struct{}, 1),
		wrote:  make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.nc.Close()
		c.cancel()
	})
}

// closeAfterFlush closes the connection once the answers queued so far
// are written, so that a client told why it is being dropped reads why.
func (c *conn) closeAfterFlush() {
	c.nc.SetWriteDeadline(time.Now().Add(drainTimeout))
	c.mu.Lock()
	c.draining = true
	c.mu.Unlock()
	c.wake()
}

func (c *conn) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// acquire takes a slot of the connection's in-flight bound, waiting while
// it is full; false when the connection closed.
func (c *conn) acquire() bool {
	select {
	case c.slots <- struct{}{}:
		return true
	case <-c.done:
		return false
	}
}

// acquireServer takes a slot of the server's bound for a frame read. It
// is taken after the read, so that idle connections hold none.
func (c *conn) acquireServer() bool {
	select {
	case c.s.inFlight <- struct{}{}:
		return true
	case <-c.done:
		<-c.slots
		return false
	}
}

// tryAcquireServer takes a slot of the server's bound if one is free.
func (c *conn) tryAcquireServer() bool {
	select {
	case c.s.inFlight <- struct{}{}:
		return true
	default:
		return false
	}
}

// overloaded is the error a THROW_ON_OVERLOAD client gets in place of
// waiting, worded as Cassandra 4.1 words its bytes-in-flight overload, for
// Sediment's bound on requests.
func (c *conn) overloaded() *wire.Error {
	n := cap(c.s.inFlight)
	return wire.Errorf(wire.CodeOverloaded, "Request breached limit on requests in flight. (Global: %d/%d requests.) Server is currently in an overloaded state and cannot accept more requests.", n, n)
}

// pending returns the bytes queued or being written.
func (c *conn) pending() int { return int(c.unwritten.Load()) }

// waitForWriter waits while more than maxPendingReplies bytes are
// unwritten; false when the connection closed.
func (c *conn) waitForWriter() bool {
	for c.pending() > c.s.maxPendingReplies {
		select {
		case <-c.wrote:
		case <-c.done:
			return false
		}
	}
	return true
}

func (c *conn) release() {
	<-c.s.inFlight
	<-c.slots
}

// readLoop reads frames and answers or dispatches them, until the client
// leaves, the stream is out of step or the server closes. A frame is read
// only with a free slot of the connection's in-flight bound, and handled
// only with one of the server's.
func (c *conn) readLoop() {
	defer func() {
		c.reqs.Wait()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
		c.s.m.connections.Dec()
		c.s.wg.Done()
	}()
	for {
		if !c.waitForWriter() {
			return
		}
		if !c.acquire() {
			return
		}
		if idle := c.s.cfg.IdleTimeout; idle > 0 {
			if c.active.Load() == 0 {
				c.nc.SetReadDeadline(time.Now().Add(idle))
			} else {
				c.nc.SetReadDeadline(time.Time{})
			}
		}
		f, err := wire.ReadFrame(c.in, c.s.cfg.MaxFrameSize)
		if err == nil {
			if c.throwOnOverload {
				if !c.tryAcquireServer() {
					<-c.slots
					c.replyError(f.Header, c.overloaded())
					continue
				}
			} else if !c.acquireServer() {
				return
			}
			c.handle(f)
			continue
		}
		<-c.slots
		var badVersion *wire.UnsupportedVersionError
		var tooLarge *wire.FrameTooLargeError
		switch {
		case errors.As(err, &badVersion):
			// The connection cannot go on in a version it does not
			// share with the client: answer why, then hang up without
			// waiting for statements in flight, whose answers the
			// client could not tell from the rest of a broken stream.
			h := badVersion.Header
			c.reply(badVersion.ReplyVersion(), h.Stream, nil, badVersion.ProtocolError(), nil)
			c.closeAfterFlush()
			return
		case errors.As(err, &tooLarge):
			h := tooLarge.Header
			if _, err := io.CopyN(io.Discard, c.in, int64(h.Length)); err != nil {
				c.close()
				return
			}
			c.replyError(h, tooLarge.InvalidError())
		default:
			if errors.Is(err, wire.ErrCorruptSegment) {
				// The stream cannot be trusted past a bad CRC: nothing
				// after it can be told apart from noise.
				c.s.sampler.Warn(c.s.log, "corrupt segment: closing the connection", "conn", c.sess.ID, "err", err)
			}
			c.close()
			return
		}
	}
}

// handle answers a frame or starts its statement. It releases the frame's
// in-flight slot, or leaves that to the statement's goroutine.
func (c *conn) handle(f *wire.Frame) {
	h := f.Header
	if err := c.checkHeader(h); err != nil || h.Response {
		// A response opcode with the response bit answers nothing once
		// the connection is started: Cassandra drops it.
		c.release()
		if err != nil {
			c.replyError(h, err)
		}
		return
	}
	m, err := c.decode(f)
	if err != nil {
		c.release()
		c.replyError(h, err)
		return
	}
	c.s.m.requests.WithLabelValues(h.Opcode.String()).Inc()
	if err := c.allowed(m); err != nil {
		c.release()
		c.replyError(h, err)
		return
	}
	switch m := m.(type) {
	case *wire.Query, *wire.Prepare, *wire.Execute, *wire.Batch:
		c.active.Add(1)
		c.reqs.Add(1)
		c.s.workers.run(func() { c.execute(h, m) })
		return
	case *wire.Options:
		c.reply(h.Version, h.Stream, nil, supported, c.compressor)
	case *wire.Startup:
		err = c.startup(h, m)
	case *wire.AuthResponse:
		err = c.authenticate(h, m)
	case *wire.Register:
		err = c.register(h, m)
	}
	c.release()
	if err != nil {
		c.replyError(h, err)
	}
}

// checkHeader checks a frame's opcode and direction, and before STARTUP
// that it is STARTUP or OPTIONS: Cassandra looks at nothing else of a
// frame before STARTUP, not even its body.
func (c *conn) checkHeader(h wire.Header) error {
	if err := wire.CheckOpcode(h.Opcode, h.Response); err != nil {
		return err
	}
	if c.state == stateNew && h.Opcode != wire.OpStartup && h.Opcode != wire.OpOptions {
		return wire.Errorf(wire.CodeProtocol, "Unexpected message %v, expecting STARTUP or OPTIONS", h.Opcode)
	}
	return nil
}

// decode checks a request's version against the connection's and decodes
// its body.
func (c *conn) decode(f *wire.Frame) (wire.Message, error) {
	h := f.Header
	if c.version != 0 && h.Version != c.version {
		return nil, wire.Errorf(wire.CodeProtocol, "Invalid message version. Got %d/v%d but previous messages on this connection had version %d/v%d", h.Version, h.Version, c.version, c.version)
	}
	body := f.Body
	// Without compression agreed the flag is ignored and the body read as
	// it is, as Cassandra does; from v5 segments carry the compression
	// and the flag means nothing.
	if h.Flags&wire.FlagCompression != 0 && c.compressor != nil && h.Version < wire.V5 {
		var err error
		if body, err = c.compressor.Decompress(nil, body, c.s.cfg.MaxFrameSize); err != nil {
			return nil, err
		}
	}
	_, body, err := wire.SplitBody(h, body)
	if err != nil {
		return nil, err
	}
	return wire.DecodeRequest(h.Opcode, h.Version, body)
}

// allowed checks that m may come in the connection's state once started
// (checkHeader has checked it before), with Cassandra's messages.
func (c *conn) allowed(m wire.Message) error {
	op := m.Opcode()
	switch c.state {
	case stateAuth:
		if op != wire.OpAuthResponse {
			return wire.Errorf(wire.CodeProtocol, "Unexpected message %v, expecting SASL_RESPONSE", op)
		}
	case stateReady:
		if op == wire.OpStartup {
			return wire.Errorf(wire.CodeProtocol, "Unexpected message STARTUP, the connection is already initialized")
		}
	}
	return nil
}

func (c *conn) startup(h wire.Header, m *wire.Startup) error {
	// The connection's version is the STARTUP's, even when it fails: a
	// retry must come in the same version, as in Cassandra.
	c.version, c.sess.Version = h.Version, h.Version
	// Option names are case-insensitive, values are not.
	opts := make(map[string]string, len(m.Options))
	for k, v := range m.Options {
		opts[strings.ToUpper(k)] = v
	}
	v, ok := opts["CQL_VERSION"]
	if !ok {
		return wire.Errorf(wire.CodeProtocol, "Missing value CQL_VERSION in STARTUP message")
	}
	if err := checkCQLVersion(v); err != nil {
		return err
	}
	var comp wire.Compressor
	if name, ok := opts["COMPRESSION"]; ok {
		name = strings.ToLower(name)
		if comp = wire.CompressorFor(name); comp == nil {
			return wire.Errorf(wire.CodeProtocol, "Unknown compression algorithm: %s", name)
		}
		if h.Version >= wire.V5 && comp != wire.LZ4 {
			// v5 segments know lz4 only.
			return wire.Errorf(wire.CodeProtocol, "Compression %s is not supported in protocol V5; use lz4", name)
		}
	}
	c.sess.Options = opts
	c.throwOnOverload = opts["THROW_ON_OVERLOAD"] == "1"
	// The answer to STARTUP is never compressed; everything after is.
	if c.s.cfg.Authenticator == "password" {
		c.state = stateAuth
		c.reply(h.Version, h.Stream, nil, &wire.Authenticate{Authenticator: PasswordAuthenticatorClass}, nil)
	} else {
		c.state = stateReady
		c.reply(h.Version, h.Stream, nil, &wire.Ready{}, nil)
	}
	c.s.m.startups.WithLabelValues("v" + strconv.Itoa(int(h.Version))).Inc()
	if h.Version >= wire.V5 {
		// From here on both ways travel in segments, compressed by
		// them rather than envelope by envelope. The client waits for
		// the answer before it frames, so nothing framed is buffered
		// yet.
		lz4 := comp != nil
		c.in = wire.NewSegmentReader(c.br, lz4)
		c.mu.Lock()
		c.segmented, c.segmentLZ4, c.segStart = true, lz4, len(c.out)
		c.mu.Unlock()
		return nil
	}
	c.compressor = comp
	return nil
}

// cqlVersionRE is the form of a version Cassandra parses
// (utils.CassandraVersion): major.minor[.patch[.hotfix]][-prerelease][+build],
// \w being ASCII letters, digits and underscore as in Java.
var cqlVersionRE = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\w+)(?:\.(\w+))?)?(-[-.\w]+)?(?:[.+][.\w]+)?$`)

// checkCQLVersion accepts what Cassandra accepts: a version it can parse
// that is not below 2.99.0, with no upper bound.
func checkCQLVersion(v string) error {
	m := cqlVersionRE.FindStringSubmatch(v)
	if m == nil {
		return wire.Errorf(wire.CodeProtocol, "Invalid version value: %s", v)
	}
	var n [4]int // major, minor, patch, hotfix (-1 when absent)
	n[3] = -1
	for i, s := range m[1:5] {
		if s == "" {
			continue
		}
		x, err := strconv.ParseInt(s, 10, 32) // a Java int
		if err != nil {
			return wire.Errorf(wire.CodeProtocol, "Invalid version value: %s", v)
		}
		n[i] = int(x)
	}
	// Below 2.99.0: a smaller major.minor.patch, or 2.99.0 itself with
	// no hotfix and a prerelease (2.99.0-beta sorts before 2.99.0).
	c := cmp.Compare(n[0], 2)
	if c == 0 {
		c = cmp.Compare(n[1], 99)
	}
	if c == 0 {
		c = cmp.Compare(n[2], 0)
	}
	if c < 0 || c == 0 && n[3] == -1 && m[5] != "" {
		return wire.Errorf(wire.CodeProtocol, "CQL version %s is not supported by the binary protocol (supported version are >= 3.0.0)", v)
	}
	return nil
}

// authenticate answers AUTH_RESPONSE: during authentication, and also
// once the connection is ready, where Cassandra starts a new SASL
// exchange: with no authenticator it completes at once, with passwords it
// logs the connection in again as the new user (a failure leaves the
// current user logged in).
func (c *conn) authenticate(h wire.Header, m *wire.AuthResponse) error {
	if c.s.cfg.Authenticator != "password" {
		c.reply(h.Version, h.Stream, nil, &wire.AuthSuccess{}, c.compressor)
		return nil
	}
	user, password, err := parsePlain(m.Token)
	if err != nil {
		return err
	}
	ok, err := c.s.auth.CheckPassword(c.ctx, c.sess.RemoteAddr, user, password)
	if err != nil {
		return err
	}
	if !ok {
		return wire.Errorf(wire.CodeBadCredentials, "Provided username %s and/or password are incorrect", user)
	}
	c.sess.setUser(user)
	c.state = stateReady
	c.reply(h.Version, h.Stream, nil, &wire.AuthSuccess{}, c.compressor)
	return nil
}

func (c *conn) register(h wire.Header, m *wire.Register) error {
	var bits uint32
	// Cassandra reads the names case-insensitively, all of them before
	// it checks any against the version: TRACE_COMPLETE is known from v4
	// on (and never sent by Sediment, which does not trace).
	trace := false
	for _, t := range m.Events {
		name := strings.ToUpper(t)
		if name == wire.TraceComplete {
			trace = true
			continue
		}
		b := eventBit(name)
		if b == 0 {
			return wire.Errorf(wire.CodeProtocol, "Invalid value '%s' for Type", t)
		}
		bits |= b
	}
	if trace && h.Version < wire.V4 {
		return wire.Errorf(wire.CodeProtocol, "Event %s not valid for protocol version %d/v%d", wire.TraceComplete, h.Version, h.Version)
	}
	c.events.Or(bits)
	c.reply(h.Version, h.Stream, nil, &wire.Ready{}, c.compressor)
	return nil
}

// execute runs a statement on a worker and answers it.
func (c *conn) execute(h wire.Header, m wire.Message) {
	start := time.Now()
	c.s.m.inFlight.Inc()
	defer func() {
		c.s.m.inFlight.Dec()
		c.release()
		if c.active.Add(-1) == 0 && c.s.cfg.IdleTimeout > 0 {
			c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		}
		c.reqs.Done()
	}()
	ctx, w := withWarnings(c.ctx)
	res, err := c.call(ctx, m)
	if err != nil {
		var we *wire.Error
		if x, ok := m.(*wire.Execute); ok && errors.As(err, &we) && we.Code == wire.CodeUnprepared && we.ID == nil {
			// Drivers prepare again the ID the error names: name it.
			e := *we
			e.ID = x.ID
			err = &e
		}
		c.replyError(h, err)
	} else {
		switch r := res.(type) {
		case *wire.SetKeyspace:
			c.sess.SetKeyspace(r.Keyspace)
		case *wire.Rows:
			if x, ok := m.(*wire.Execute); ok {
				res = executeRows(h.Version, x, r)
			}
		}
		c.reply(h.Version, h.Stream, w.take(), res, c.compressor)
	}
	c.s.m.duration.WithLabelValues(h.Opcode.String()).Observe(time.Since(start).Seconds())
}

// executeRows returns the rows an EXECUTE is answered with. Rows whose
// columns are not those the client knows carry them in full: a v5 client
// names the result metadata it knows, and rows with other columns get
// their new ID (METADATA_CHANGED) whether or not it asked to skip them;
// before v5 the handler tells, with a NewMetadataID, that the columns
// are not those PREPARE announced. Otherwise a client that asked to skip
// metadata has the columns from PREPARE and gets none.
func executeRows(v wire.Version, x *wire.Execute, r *wire.Rows) *wire.Rows {
	changed := r.Metadata.NewMetadataID != nil
	var buf [16]byte
	var id []byte
	if v >= wire.V5 && len(r.Metadata.Columns) > 0 {
		id = wire.MetadataID(buf[:0], r.Metadata.Columns)
		changed = !bytes.Equal(id, x.ResultMetadataID)
	}
	switch {
	case changed:
		if r.Metadata.NoMetadata || !bytes.Equal(r.Metadata.NewMetadataID, id) && id != nil {
			full := *r
			full.Metadata.NoMetadata = false
			if id != nil {
				full.Metadata.NewMetadataID = bytes.Clone(id)
			}
			return &full
		}
	case x.Params.SkipMetadata && !r.Metadata.NoMetadata || r.Metadata.NewMetadataID != nil:
		known := *r
		known.Metadata.NoMetadata = x.Params.SkipMetadata || r.Metadata.NoMetadata
		known.Metadata.NewMetadataID = nil
		return &known
	}
	return r
}

// call runs m on the handler, turning a panic into an error so that one
// bad statement does not take the server down.
func (c *conn) call(ctx context.Context, m wire.Message) (res wire.Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("frontend: handler panicked: %v\n%s", r, debug.Stack())
		}
	}()
	var r wire.Result
	switch m := m.(type) {
	case *wire.Query:
		r, err = c.s.h.Query(ctx, c.sess, m)
	case *wire.Prepare:
		var p *wire.Prepared
		if p, err = c.s.h.Prepare(ctx, c.sess, m); err == nil && p == nil {
			err = errors.New("frontend: Prepare returned no result")
		}
		if p != nil {
			r = p
		}
	case *wire.Execute:
		r, err = c.s.h.Execute(ctx, c.sess, m)
	case *wire.Batch:
		r, err = c.s.h.Batch(ctx, c.sess, m)
	}
	if err != nil {
		return nil, err
	}
	if r == nil {
		r = &wire.Void{}
	}
	return r, nil
}

// replyError answers the request of h with err as a wire error.
// Once STARTUP has fixed the connection's version, errors are framed in
// it, as Cassandra frames them, even for a frame in another version.
func (c *conn) replyError(h wire.Header, err error) {
	v := h.Version
	if c.version != 0 {
		v = c.version
	}
	c.reply(v, h.Stream, nil, c.wireError(h, err), c.compressor)
}

// wireError maps err to the ERROR sent: a *wire.Error as it is (in terms
// v3 knows for a v3 client), anything else as a logged Server error.
func (c *conn) wireError(h wire.Header, err error) *wire.Error {
	var we *wire.Error
	if !errors.As(err, &we) {
		if c.s.ctx.Err() != nil {
			return wire.Errorf(wire.CodeServer, "Server is shutting down")
		}
		c.s.sampler.Warn(c.s.log, "request failed", "conn", c.sess.ID, "stream", h.Stream, "opcode", h.Opcode, "err", err)
		return wire.Errorf(wire.CodeServer, "Internal server error (connection %d, stream %d): see the server log", c.sess.ID, h.Stream)
	}
	if h.Version < wire.V5 && we.Code == wire.CodeCASWriteUnknown {
		// Before v5 an unknown CAS outcome is a CAS write timeout, as
		// Cassandra sends it.
		e := *we
		e.Code, e.WriteType = wire.CodeWriteTimeout, "CAS"
		we = &e
	}
	if h.Version < wire.V4 {
		// v3 lacks the failure errors; Cassandra sends their nearest kin.
		switch we.Code {
		case wire.CodeReadFailure:
			e := *we
			e.Code = wire.CodeReadTimeout
			return &e
		case wire.CodeWriteFailure:
			e := *we
			e.Code = wire.CodeWriteTimeout
			return &e
		case wire.CodeFunctionFailure:
			return &wire.Error{Code: wire.CodeInvalid, Message: we.Message}
		}
	}
	return we
}

var framePool = sync.Pool{New: func() any { return new([]byte) }}

// reply queues the answer m on stream in version v.
func (c *conn) reply(v wire.Version, stream int16, warnings []string, m wire.Message, comp wire.Compressor) {
	bp := framePool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxKeptBuffer {
			framePool.Put(bp)
		}
	}()
	h := wire.Header{Version: v, Response: true, Stream: stream}
	var env *wire.Envelope
	if len(warnings) > 0 && v >= wire.V4 {
		env = &wire.Envelope{Warnings: warnings}
	}
	if v < wire.V3 || v >= wire.V5 {
		// v5 compresses segments, not envelopes.
		comp = nil
	}
	out, err := wire.AppendFrame((*bp)[:0], h, env, m, comp)
	if err != nil {
		m = c.wireError(h, err)
		out, err = wire.AppendFrame((*bp)[:0], h, nil, m, comp)
		if err != nil { // an error message too long for a [string]
			m = wire.Errorf(wire.CodeServer, "Internal server error")
			out, _ = wire.AppendFrame((*bp)[:0], h, nil, m, comp)
		}
	}
	*bp = out
	if e, ok := m.(*wire.Error); ok {
		c.s.m.errors.WithLabelValues(e.Code.String()).Inc()
	}
	c.mu.Lock()
	c.out = append(c.out, out...)
	c.mu.Unlock()
	c.unwritten.Add(int64(len(out)))
	c.wake()
}

// push queues an event unless the client is far behind in reading.
func (c *conn) push(ev *wire.Event) {
	comp := c.compressor
	if c.version >= wire.V5 {
		comp = nil
	}
	out, err := wire.AppendFrame(nil, wire.Header{Version: c.version, Response: true, Stream: wire.EventStream}, nil, ev, comp)
	if err != nil {
		c.s.sampler.Warn(c.s.log, "cannot encode event", "err", err)
		return
	}
	c.mu.Lock()
	full := len(c.out) > maxPendingEvents
	if !full {
		c.out = append(c.out, out...)
	}
	c.mu.Unlock()
	if !full {
		c.unwritten.Add(int64(len(out)))
	}
	if full {
		c.s.sampler.Warn(c.s.log, "event dropped: client not reading", "conn", c.sess.ID)
		return
	}
	c.wake()
}

func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	var spare, segs []byte
	for {
		select {
		case <-c.kick:
		case <-c.done:
			return
		}
		// Let the requests finishing with this one queue their answers
		// for the same write.
		runtime.Gosched()
		c.mu.Lock()
		buf, draining := c.out, c.draining
		segmented, lz4, segStart := c.segmented, c.segmentLZ4, c.segStart
		c.out, c.segStart = spare[:0], 0
		c.mu.Unlock()
		if len(buf) > 0 {
			wr := buf
			if segmented {
				// v5: the handshake's answer as it is, then segments.
				var err error
				segs, err = wire.AppendSegments(append(segs[:0], buf[:segStart]...), buf[segStart:], lz4)
				if err != nil {
					c.s.sampler.Warn(c.s.log, "cannot frame answers", "conn", c.sess.ID, "err", err)
					c.close()
					return
				}
				wr = segs
			}
			if _, err := c.nc.Write(wr); err != nil {
				c.close()
				return
			}
			if cap(segs) > maxKeptBuffer {
				segs = nil
			}
			c.unwritten.Add(-int64(len(buf)))
			select {
			case c.wrote <- struct{}{}:
			default:
			}
		}
		if draining {
			c.mu.Lock()
			empty := len(c.out) == 0
			c.mu.Unlock()
			if empty {
				c.close()
				return
			}
			c.wake()
		}
		if cap(buf) <= maxKeptBuffer {
			spare = buf
		}
	}
}
