package rpc

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sedimentdb/sediment/internal/storage"
)

// Options tune a Client or a Server; zero fields take defaults.
type Options struct {
	// Conns is the number of connections a Client keeps to its peer.
	Conns int
	// MaxInFlight bounds the requests waiting for an answer on one
	// connection; more wait for a slot (client) or are not read (server).
	MaxInFlight int
	// MaxFrame bounds the length of a frame either side accepts.
	MaxFrame int
	// DialTimeout bounds a connection attempt, its TLS handshake included,
	// when the request's context has no earlier deadline.
	DialTimeout time.Duration
	// TLS returns the TLS configuration of each new connection
	// (clustertls.Identity.Server on a Server, .Client on a Client), called
	// per connection so that rotated certificates apply to the next one;
	// nil means plain TCP.
	TLS func() *tls.Config
	// HandshakeTimeout bounds the time from a server's accept to the
	// first request having been read, TLS handshake included, so that
	// connections that never authenticate or never ask are closed. Clients
	// dial when a request is waiting, so a legitimate one sends at once.
	HandshakeTimeout time.Duration
	// Refused, if set, is told of each connection a Server closes before its
	// first request: a failed TLS handshake (no certificate, one the CA
	// did not sign), a first request that did not come in time, or garbage
	// instead of a frame.
	Refused func(remote net.Addr, err error)
}

func (o Options) withDefaults() Options {
	if o.Conns <= 0 {
		o.Conns = 2
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 256
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = DefaultMaxFrame
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 10 * time.Second
	}
	return o
}

// maxKeptBuffer bounds the write buffer a connection keeps between writes,
// so that one huge frame does not pin its memory forever.
const maxKeptBuffer = 1 << 20

// Client sends requests to one peer over a few connections, each carrying
// many requests at once. A broken connection fails its requests in flight
// with ErrConnLost and is dialed again by the next request that picks it.
// A Client is safe for concurrent use.
type Client struct {
	addr   string
	opts   Options
	next   atomic.Uint32
	slots  []slot
	closed atomic.Bool
}

var _ Handler = (*Client)(nil)

// slot holds one of the client's connections, nil until first used or
// after it broke.
type slot struct {
	mu sync.Mutex
	c  *clientConn
}

// Dial returns a client of the server at addr. Connections are made when
// requests need them, so Dial does not fail when the peer is down.
func Dial(addr string, opts Options) *Client {
	opts = opts.withDefaults()
	return &Client{addr: addr, opts: opts, slots: make([]slot, opts.Conns)}
}

// Close closes the client's connections, failing requests in flight with
// ErrConnLost.
func (cl *Client) Close() error {
	cl.closed.Store(true)
	for i := range cl.slots {
		s := &cl.slots[i]
		s.mu.Lock()
		if s.c != nil {
			s.c.fail(ErrClosed)
			s.c = nil
		}
		s.mu.Unlock()
	}
	return nil
}

// Apply sends m to the peer's Handler.Apply. A failure of the connection
// while the request is in flight returns ErrConnLost: m may or may not have
// been applied, and Apply does not retry it.
func (cl *Client) Apply(ctx context.Context, m *storage.Mutation) error {
	f, err := cl.call(ctx, opApply, func(dst []byte, timeout uint64) []byte { return appendApply(dst, timeout, m) })
	if err != nil {
		return err
	}
	if f.op != opAck || len(f.body) != 0 {
		return fmt.Errorf("%w: answer op %#x to apply", ErrProtocol, f.op)
	}
	return nil
}

// ApplyIf sends m and want to the peer's Handler.ApplyIf. As with Apply,
// ErrConnLost leaves unknown whether m was applied; sending it again
// could apply it twice, since a conditional write is not idempotent (its
// own write changes the digest), so ApplyIf never does.
func (cl *Client) ApplyIf(ctx context.Context, m *storage.Mutation, want Digest) (bool, error) {
	f, err := cl.call(ctx, opApplyIf, func(dst []byte, timeout uint64) []byte { return appendApplyIf(dst, timeout, m, &want) })
	if err != nil {
		return false, err
	}
	if f.op != opApplied {
		return false, fmt.Errorf("%w: answer op %#x to applyif", ErrProtocol, f.op)
	}
	return decodeApplied(f.body)
}

// Truncate sends a truncation of table to the peer's Handler.Truncate.
func (cl *Client) Truncate(ctx context.Context, table storage.TableID) error {
	f, err := cl.call(ctx, opTruncate, func(dst []byte, timeout uint64) []byte { return appendTruncate(dst, timeout, table) })
	if err != nil {
		return err
	}
	if f.op != opAck || len(f.body) != 0 {
		return fmt.Errorf("%w: answer op %#x to truncate", ErrProtocol, f.op)
	}
	return nil
}

// Flush asks the peer to flush its memtables (Handler.Flush) and waits
// until it has, or until ctx ends; the peer gives up with ctx's deadline.
func (cl *Client) Flush(ctx context.Context) error {
	f, err := cl.call(ctx, opFlush, appendFlush)
	if err != nil {
		return err
	}
	if f.op != opAck || len(f.body) != 0 {
		return fmt.Errorf("%w: answer op %#x to flush", ErrProtocol, f.op)
	}
	return nil
}

// Scan sends r to the peer's Handler.Scan.
func (cl *Client) Scan(ctx context.Context, r ScanRequest) (*Page, error) {
	if r.Limit < 0 || r.Limit > maxLimit {
		return nil, fmt.Errorf("rpc: scan limit %d out of range", r.Limit)
	}
	f, err := cl.call(ctx, opScan, func(dst []byte, timeout uint64) []byte { return appendScan(dst, timeout, &r) })
	if err != nil {
		return nil, err
	}
	if f.op != opPage {
		return nil, fmt.Errorf("%w: answer op %#x to scan", ErrProtocol, f.op)
	}
	return decodePage(f.body)
}

// call sends one request on the next connection, in turn, and waits for
// its answer, returning an error frame as an *Error.
func (cl *Client) call(ctx context.Context, op byte, body func(dst []byte, timeout uint64) []byte) (frame, error) {
	if cl.closed.Load() {
		return frame{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return frame{}, err
	}
	s := &cl.slots[int(cl.next.Add(1)-1)%len(cl.slots)]
	c, err := cl.conn(ctx, s)
	if err != nil {
		return frame{}, err
	}
	var timeout uint64
	if d, ok := ctx.Deadline(); ok {
		// The server gives up when the caller would: at least 1µs, as 0
		// means no timeout.
		timeout = uint64(max(time.Until(d)/time.Microsecond, 1))
	}
	f, err := c.roundTrip(ctx, op, func(dst []byte) []byte { return body(dst, timeout) })
	if err != nil {
		return frame{}, err
	}
	if f.op == opError {
		return frame{}, decodeError(f.body)
	}
	return f, nil
}

// conn returns the slot's connection, dialing it if it has none or its
// last one broke.
func (cl *Client) conn(ctx context.Context, s *slot) (*clientConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil && !s.c.broken() {
		return s.c, nil
	}
	d := net.Dialer{Timeout: cl.opts.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", cl.addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
	}
	if cl.closed.Load() {
		nc.Close()
		return nil, ErrClosed
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		// Requests are already batched per write; Nagle would only delay.
		tc.SetNoDelay(true)
	}
	if cl.opts.TLS != nil {
		tc := tls.Client(nc, cl.opts.TLS())
		hctx, cancel := context.WithTimeout(ctx, cl.opts.DialTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w: TLS handshake with %s: %w", storage.ErrUnavailable, cl.addr, err)
		}
		nc = tc
	}
	s.c = newClientConn(nc, cl.opts)
	return s.c, nil
}

// clientConn is one connection: a writer goroutine that sends every
// request queued while its previous write was in progress in one write, and
// a reader goroutine that hands each answer to the request of its stream.
type clientConn struct {
	nc       net.Conn
	maxFrame int
	slots    chan struct{} // bounds requests in flight

	mu      sync.Mutex
	out     []byte
	pending map[uint32]chan frame
	stream  uint32
	err     error // why the connection broke; nil while it works

	kick chan struct{}
	done chan struct{}
}

func newClientConn(nc net.Conn, opts Options) *clientConn {
	c := &clientConn{
		nc:       nc,
		maxFrame: opts.MaxFrame,
		slots:    make(chan struct{}, opts.MaxInFlight),
		pending:  map[uint32]chan frame{},
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	go c.writeLoop()
	go c.readLoop()
	return c
}

func (c *clientConn) broken() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// fail breaks the connection once: it closes it and fails every request
// in flight with err.
func (c *clientConn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.done)
	c.nc.Close()
	// Requests in flight see done closed and read err.
}

func (c *clientConn) roundTrip(ctx context.Context, op byte, body func([]byte) []byte) (frame, error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return frame{}, ctx.Err()
	case <-c.done:
		return frame{}, c.failure()
	}
	defer func() { <-c.slots }()

	answer := make(chan frame, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return frame{}, c.failure()
	}
	// Skip IDs still waiting, should the counter ever wrap around.
	c.stream++
	for c.pending[c.stream] != nil {
		c.stream++
	}
	id := c.stream
	out, start := startFrame(c.out, id, op)
	out = body(out)
	if n := len(out) - start - 4; n > c.maxFrame {
		c.out = out[:start]
		c.mu.Unlock()
		return frame{}, fmt.Errorf("rpc: request of %d bytes exceeds the frame limit %d", n, c.maxFrame)
	}
	c.out = endFrame(out, start)
	c.pending[id] = answer
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}

	select {
	case f := <-answer:
		return f, nil
	case <-ctx.Done():
		// The answer, if it comes, finds no one waiting and is dropped.
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return frame{}, ctx.Err()
	case <-c.done:
		// An answer may have arrived just before the connection broke.
		select {
		case f := <-answer:
			return f, nil
		default:
			return frame{}, c.failure()
		}
	}
}

// failure returns why the connection broke: ErrConnLost, a timeout (the
// fate of the requests in flight is unknown), unless the client was closed.
func (c *clientConn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(c.err, ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("%w: %w", ErrConnLost, c.err)
}

func (c *clientConn) writeLoop() {
	var spare []byte
	for {
		select {
		case <-c.kick:
		case <-c.done:
			return
		}
		// Let the goroutines woken with this one (a group commit acks
		// many writes at once) queue their frames for the same write.
		runtime.Gosched()
		c.mu.Lock()
		buf := c.out
		c.out = spare[:0]
		c.mu.Unlock()
		if _, err := c.nc.Write(buf); err != nil {
			c.fail(err)
			return
		}
		if cap(buf) <= maxKeptBuffer {
			spare = buf
		}
	}
}

func (c *clientConn) readLoop() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		// Each answer gets its own buffer: the caller keeps aliasing it.
		f, _, err := readFrame(r, nil, c.maxFrame)
		if err != nil {
			c.fail(err)
			return
		}
		if f.op&0x80 == 0 {
			c.fail(fmt.Errorf("%w: request op %#x from the server", ErrProtocol, f.op))
			return
		}
		c.mu.Lock()
		answer, ok := c.pending[f.stream]
		delete(c.pending, f.stream)
		c.mu.Unlock()
		if ok {
			answer <- f
		}
	}
}
