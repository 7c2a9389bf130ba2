package transport

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"github.com/sedimentdb/sediment/frontend/wire"
)

// Handler executes statements. The server calls it concurrently, also for
// requests of one connection; it never sees frames.
//
// An error that is a *wire.Error (errors.As) is sent to the client as it
// is; any other error is logged and sent as a Server error. A *wire.SetKeyspace
// result sets the session's keyspace before the answer is sent, and the
// *wire.Rows of an EXECUTE that asked to skip metadata are sent without
// column metadata, unless their columns are not those the client knows:
// from v5 the server tells by the result metadata ID the client sent;
// before, the handler tells by setting Metadata.NewMetadataID (any
// non-nil ID; v4 does not send it). A nil result is sent as Void.
type Handler interface {
	Query(ctx context.Context, s *Session, q *wire.Query) (wire.Result, error)
	Prepare(ctx context.Context, s *Session, p *wire.Prepare) (*wire.Prepared, error)
	Execute(ctx context.Context, s *Session, e *wire.Execute) (wire.Result, error)
	Batch(ctx context.Context, s *Session, b *wire.Batch) (wire.Result, error)
}

// Session is the state of one client connection that statements see.
type Session struct {
	// ID numbers the connections of a server.
	ID uint64
	// Version is the protocol version the client speaks.
	Version wire.Version
	// RemoteAddr is the client's address.
	RemoteAddr net.Addr
	// Options are the client's STARTUP options (CQL_VERSION,
	// DRIVER_NAME, DRIVER_VERSION, COMPRESSION...).
	Options map[string]string

	user     atomic.Pointer[string]
	keyspace atomic.Pointer[string]
}

// User returns the authenticated role, or "" without authentication.
func (s *Session) User() string {
	if u := s.user.Load(); u != nil {
		return *u
	}
	return ""
}

// Keyspace returns the keyspace of USE, or "" before any.
func (s *Session) Keyspace() string {
	if k := s.keyspace.Load(); k != nil {
		return *k
	}
	return ""
}

// SetKeyspace sets the keyspace unqualified names refer to. The server
// calls it for every *wire.SetKeyspace result.
func (s *Session) SetKeyspace(ks string) { s.keyspace.Store(&ks) }

func (s *Session) setUser(u string) { s.user.Store(&u) }

// warningsKey finds a request's warnings in its context.
type warningsKey struct{}

type warnings struct {
	mu   sync.Mutex
	list []string
}

// AddWarning adds a warning to the answer of the request whose context
// ctx is, as Cassandra's ClientWarn does; drivers log them. Outside a
// request it does nothing.
func AddWarning(ctx context.Context, msg string) {
	if w, ok := ctx.Value(warningsKey{}).(*warnings); ok {
		w.mu.Lock()
		w.list = append(w.list, msg)
		w.mu.Unlock()
	}
}

func withWarnings(ctx context.Context) (context.Context, *warnings) {
	w := &warnings{}
	return context.WithValue(ctx, warningsKey{}, w), w
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.list
}
