// Package tracing records the steps of the requests a client asks to trace
// (the native protocol's tracing flag; cqlsh TRACING ON; gocql Trace; the
// Python driver's trace=True), for system_traces.sessions and
// system_traces.events:
//
//	system_traces.sessions      system_traces.events
//	--------------------------  ------------------------------------------
//	session_id  uuid (PK)       session_id      uuid (PK)
//	client      inet            event_id        timeuuid (clustering)
//	command     text            activity        text
//	coordinator inet            source          inet
//	duration    int (µs)        source_elapsed  int (µs since the start)
//	parameters  map<text,text>  thread          text
//	request     text
//	started_at  timestamp
//
// A Store keeps the sessions of one frontend in memory for its TTL
// (Cassandra's 24 hours by default), which drivers read back right after
// the request, through the frontend that coordinated it.
//
// Tracing costs nothing when off: a request carries a Session in its
// context only when traced, and callers record a step after
// From(ctx) != nil, so an untraced request formats nothing.
package tracing

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Event is one step of a traced request.
type Event struct {
	ID       uuid.UUID // a timeuuid: events order by it
	Activity string
	Elapsed  time.Duration // since the session started
	Thread   string
}

// Session is one traced request.
type Session struct {
	ID          uuid.UUID
	Client      netip.Addr
	Coordinator netip.Addr
	Command     string // QUERY, EXECUTE, PREPARE, BATCH
	Started     time.Time

	mu         sync.Mutex
	request    string
	parameters map[string]string
	events     []Event
	duration   time.Duration
	done       bool
	expires    time.Time
}

type ctxKey struct{}

// With returns ctx carrying s.
func With(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}

// From returns the session of a traced request's context, nil when the
// request is not traced.
func From(ctx context.Context) *Session {
	s, _ := ctx.Value(ctxKey{}).(*Session)
	return s
}

// Eventf records a step. thread names what did it (the stage).
func (s *Session) Eventf(thread, format string, args ...any) {
	id, err := uuid.NewUUID()
	if err != nil {
		id = uuid.New()
	}
	e := Event{ID: id, Activity: fmt.Sprintf(format, args...), Elapsed: time.Since(s.Started), Thread: thread}
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

// SetRequest sets what the request was, as Cassandra words it ("Execute
// CQL3 query"), and a parameter of it (query, consistency_level, ...).
func (s *Session) SetRequest(request string, params map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if request != "" {
		s.request = request
	}
	if s.parameters == nil {
		s.parameters = map[string]string{}
	}
	maps.Copy(s.parameters, params)
}

// Snapshot returns the session's current state.
func (s *Session) Snapshot() (request string, params map[string]string, events []Event, duration time.Duration, done bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.request, maps.Clone(s.parameters), append([]Event(nil), s.events...), s.duration, s.done
}

// Store keeps the traced sessions of a frontend for their TTL.
type Store struct {
	ttl time.Duration
	now func() time.Time

	mu       sync.Mutex
	sessions []*Session // by start
}

// DefaultTTL is how long a trace is kept: Cassandra's
// tracetype_query_ttl.
const DefaultTTL = 24 * time.Hour

// NewStore returns a store whose traces live for ttl; now is the clock
// (time.Now when nil).
func NewStore(ttl time.Duration, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{ttl: ttl, now: now}
}

// Start begins the session of a traced request from client, coordinated
// by coordinator; it is visible, without a duration, until Finish.
func (st *Store) Start(client, coordinator netip.Addr, command string) *Session {
	id, err := uuid.NewUUID()
	if err != nil {
		id = uuid.New()
	}
	now := st.now()
	s := &Session{ID: id, Client: client, Coordinator: coordinator, Command: command, Started: now, expires: now.Add(st.ttl)}
	st.mu.Lock()
	st.expire(now)
	st.sessions = append(st.sessions, s)
	st.mu.Unlock()
	return s
}

// Finish ends s: its duration is set, and its TTL counts from now.
func (st *Store) Finish(s *Session) {
	now := st.now()
	s.mu.Lock()
	s.duration, s.done = now.Sub(s.Started), true
	s.mu.Unlock()
	st.mu.Lock()
	s.expires = now.Add(st.ttl)
	st.mu.Unlock()
}

// Sessions returns the sessions not yet expired, oldest first.
func (st *Store) Sessions() []*Session {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.expire(st.now())
	return append([]*Session(nil), st.sessions...)
}

// expire drops the sessions past their TTL; st.mu is held.
func (st *Store) expire(now time.Time) {
	n := 0
	for _, s := range st.sessions {
		if now.Before(s.expires) {
			st.sessions[n] = s
			n++
		}
	}
	clear(st.sessions[n:])
	st.sessions = st.sessions[:n]
}
