package rpc

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"
)

// Server answers requests on the connections of a listener. Each request
// runs in its own goroutine, so answers leave in the order they finish,
// not the order they came.
type Server struct {
	h    Handler
	opts Options

	mu     sync.Mutex
	lns    map[net.Listener]struct{}
	conns  map[*serverConn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewServer returns a server of h. Of opts, MaxFrame, MaxInFlight, TLS,
// HandshakeTimeout and Refused apply.
func NewServer(h Handler, opts Options) *Server {
	return &Server{h: h, opts: opts.withDefaults(), lns: map[net.Listener]struct{}{}, conns: map[*serverConn]struct{}{}}
}

// Serve serves h on ln with default options until ln fails or is closed.
// The connections it accepted live on until their clients hang up; use a
// Server to close them too.
func Serve(ln net.Listener, h Handler) error {
	return NewServer(h, Options{}).Serve(ln)
}

// Serve accepts connections on ln until it fails or the server is closed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			delete(s.lns, ln)
			s.mu.Unlock()
			return err
		}
		if s.opts.TLS != nil {
			// No I/O yet: readLoop runs the handshake under its deadline.
			nc = tls.Server(nc, s.opts.TLS())
		}
		c := &serverConn{s: s, nc: nc, kick: make(chan struct{}, 1), done: make(chan struct{})}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(2)
		s.mu.Unlock()
		go c.readLoop()
		go c.writeLoop()
	}
}

// Close closes the listeners and every connection at once, abandoning
// requests in flight (their clients see ErrConnLost), and waits for the
// connections' goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) refuse(remote net.Addr, err error) {
	if s.opts.Refused != nil {
		s.opts.Refused(remote, err)
	}
}

type serverConn struct {
	s  *Server
	nc net.Conn

	// Answers are appended to out and written by writeLoop: every answer
	// that finished while the previous write was in progress goes out in one
	// write.
	mu   sync.Mutex
	out  []byte
	kick chan struct{}

	once sync.Once
	done chan struct{}
	reqs sync.WaitGroup
}

func (c *serverConn) close() {
	c.once.Do(func() {
		close(c.done)
		c.nc.Close()
	})
}

// readLoop decodes requests and starts a goroutine for each, at most
// MaxInFlight at once; past that it stops reading, and TCP pushes back on
// the client.
func (c *serverConn) readLoop() {
	defer c.s.wg.Done()
	defer func() {
		c.close()
		c.reqs.Wait()
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	}()
	// Until the first request has been read the peer is a stranger: it
	// gets a deadline, and nothing is allocated for it beyond the TLS
	// handshake's own state.
	c.nc.SetDeadline(time.Now().Add(c.s.opts.HandshakeTimeout))
	if tc, ok := c.nc.(*tls.Conn); ok {
		if err := tc.Handshake(); err != nil {
			c.s.refuse(c.nc.RemoteAddr(), err)
			return
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	sem := make(chan struct{}, c.s.opts.MaxInFlight)
	for first := true; ; first = false {
		// Requests alias their body, so each gets a buffer of its own.
		f, _, err := readFrame(r, nil, c.s.opts.MaxFrame)
		if err != nil {
			if first {
				c.s.refuse(c.nc.RemoteAddr(), fmt.Errorf("first request: %w", err))
			}
			// A bad frame leaves the stream out of step: hang up.
			return
		}
		if first {
			c.nc.SetDeadline(time.Time{})
		}
		select {
		case sem <- struct{}{}:
		case <-c.done:
			return
		}
		c.reqs.Add(1)
		go func() {
			defer func() { <-sem; c.reqs.Done() }()
			c.handle(ctx, f)
		}()
	}
}

func (c *serverConn) handle(ctx context.Context, f frame) {
	op, body, err := c.serve(ctx, f)
	if err != nil {
		op, body = opError, func(dst []byte) []byte { return appendError(dst, err) }
	}
	c.reply(f.stream, op, body)
}

// serve runs one request and returns its answer's op and body encoder.
func (c *serverConn) serve(ctx context.Context, f frame) (byte, func([]byte) []byte, error) {
	switch f.op {
	case opApply:
		timeout, m, err := decodeApply(f.body)
		if err != nil {
			return 0, nil, err
		}
		ctx, cancel := withTimeout(ctx, timeout)
		defer cancel()
		return opAck, nil, c.s.h.Apply(ctx, m)
	case opScan:
		timeout, r, err := decodeScan(f.body)
		if err != nil {
			return 0, nil, err
		}
		ctx, cancel := withTimeout(ctx, timeout)
		defer cancel()
		p, err := c.s.h.Scan(ctx, r)
		return opPage, func(dst []byte) []byte { return appendPage(dst, p) }, err
	case opApplyIf:
		timeout, m, want, err := decodeApplyIf(f.body)
		if err != nil {
			return 0, nil, err
		}
		ctx, cancel := withTimeout(ctx, timeout)
		defer cancel()
		applied, err := c.s.h.ApplyIf(ctx, m, want)
		return opApplied, func(dst []byte) []byte { return appendApplied(dst, applied) }, err
	case opTruncate:
		timeout, table, err := decodeTruncate(f.body)
		if err != nil {
			return 0, nil, err
		}
		ctx, cancel := withTimeout(ctx, timeout)
		defer cancel()
		return opAck, nil, c.s.h.Truncate(ctx, table)
	case opFlush:
		timeout, err := decodeFlush(f.body)
		if err != nil {
			return 0, nil, err
		}
		ctx, cancel := withTimeout(ctx, timeout)
		defer cancel()
		return opAck, nil, c.s.h.Flush(ctx)
	}
	return 0, nil, fmt.Errorf("%w: unknown request op %#x", ErrProtocol, f.op)
}

// withTimeout applies a request's timeout in microseconds; 0 is none.
func withTimeout(ctx context.Context, us uint64) (context.Context, context.CancelFunc) {
	if us == 0 || us > uint64(time.Duration(1<<62)/time.Microsecond) {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Duration(us)*time.Microsecond)
}

func (c *serverConn) reply(stream uint32, op byte, body func([]byte) []byte) {
	c.mu.Lock()
	out, start := startFrame(c.out, stream, op)
	if body != nil {
		out = body(out)
	}
	if n := len(out) - start - 4; n > c.s.opts.MaxFrame {
		// The client would refuse the frame and hang up: refuse the
		// request instead.
		out, start = startFrame(out[:start], stream, opError)
		out = appendError(out, fmt.Errorf("%w: answer of %d bytes exceeds the frame limit", ErrProtocol, n))
	}
	c.out = endFrame(out, start)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *serverConn) writeLoop() {
	defer c.s.wg.Done()
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
			c.close()
			return
		}
		if cap(buf) <= maxKeptBuffer {
			spare = buf
		}
	}
}
