package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/logsample"
)

// Options are the server's collaborators.
type Options struct {
	// Authenticator checks passwords; required with the password
	// authenticator.
	Authenticator Authenticator
	// Registerer receives the server's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger logs; nil is slog.Default().
	Logger *slog.Logger
}

// Server serves the CQL native protocol on the connections of listeners.
type Server struct {
	cfg     Config
	h       Handler
	auth    Authenticator
	tls     *tls.Config
	log     *slog.Logger
	m       *metrics
	sampler logsample.Sampler

	// ctx is the parent of every request's context, canceled by Close.
	ctx    context.Context
	cancel context.CancelFunc
	// inFlight holds a token per statement executing on the server.
	inFlight chan struct{}
	// maxPendingReplies is maxPendingReplies, lowered by tests.
	maxPendingReplies int
	workers           *workers
	nextID            atomic.Uint64

	closeOnce sync.Once
	mu        sync.Mutex
	closed    bool
	lns       map[net.Listener]struct{}
	conns     map[*conn]struct{}
	wg        sync.WaitGroup
}

// New returns a server of h configured by cfg.
func New(cfg Config, h Handler, o Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Authenticator == "password" && o.Authenticator == nil {
		return nil, ErrNoAuthenticator
	}
	tc, err := cfg.TLS.tlsConfig()
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg:               cfg,
		h:                 h,
		auth:              o.Authenticator,
		tls:               tc,
		log:               log.With("component", "frontend"),
		m:                 newMetrics(o.Registerer),
		ctx:               ctx,
		cancel:            cancel,
		inFlight:          make(chan struct{}, cfg.MaxInFlight),
		maxPendingReplies: maxPendingReplies,
		workers:           newWorkers(time.Second),
		lns:               make(map[net.Listener]struct{}),
		conns:             make(map[*conn]struct{}),
	}, nil
}

// Listen opens the configured listen address.
func (s *Server) Listen() (net.Listener, error) {
	return net.Listen("tcp", s.cfg.ListenAddress)
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("frontend: server closed")

// Serve accepts connections on ln until Close, and returns ErrServerClosed
// then. With TLS configured, connections are TLS.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			if closed || errors.Is(err, net.ErrClosed) {
				delete(s.lns, ln)
			}
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors, an aborted handshake...: wait a
			// little rather than give up serving, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.sampler.Warn(s.log, "accept failed", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.mu.Lock()
		if s.closed || (s.cfg.MaxConnections > 0 && len(s.conns) >= s.cfg.MaxConnections) {
			closed := s.closed
			s.mu.Unlock()
			nc.Close()
			if !closed {
				s.m.rejected.Inc()
				s.sampler.Warn(s.log, "connection refused: max-connections reached", "remote", nc.RemoteAddr())
			}
			continue
		}
		if s.tls != nil {
			nc = tls.Server(nc, s.tls)
		}
		c := s.newConn(nc)
		s.conns[c] = struct{}{}
		s.wg.Add(2)
		s.mu.Unlock()
		s.m.connections.Inc()
		go c.readLoop()
		go c.writeLoop()
	}
}

// Close stops the listeners, cancels the requests in flight, closes every
// connection and waits for their goroutines.
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
	s.cancel()
	s.wg.Wait()
	s.closeOnce.Do(s.workers.stop)
	return nil
}

// Publish pushes ev to every connection registered for its type, in the
// connection's version. Delivery is best effort, as in Cassandra: a
// connection whose client does not read its answers misses events rather
// than slowing the publisher.
func (s *Server) Publish(ev *wire.Event) {
	bit := eventBit(ev.Type)
	if bit == 0 {
		return
	}
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		if c.events.Load()&bit != 0 {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.push(ev)
	}
}

// eventBit is an event type's bit in conn.events, or 0 for an unknown type.
func eventBit(t string) uint32 {
	switch t {
	case wire.TopologyChange:
		return 1
	case wire.StatusChange:
		return 2
	case wire.SchemaChanged:
		return 4
	}
	return 0
}
