package exec

import (
	"context"
	"sync"

	"github.com/sedimentdb/sediment/cql/ast"
)

// Session is the state of one client connection: its current keyspace
// (USE). The server makes one per connection.
type Session struct {
	mu       sync.Mutex
	keyspace string
}

// NewSession returns a session without a keyspace.
func NewSession() *Session { return &Session{} }

// Keyspace returns the session's current keyspace, empty before USE.
func (s *Session) Keyspace() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyspace
}

// SetKeyspace sets the session's current keyspace, as USE does.
func (s *Session) SetKeyspace(ks string) {
	s.mu.Lock()
	s.keyspace = ks
	s.mu.Unlock()
}

// usePlan is USE keyspace: it checks the keyspace exists when it runs, so a
// prepared USE follows the schema.
type usePlan struct{ keyspace string }

func (e *Executor) planUse(st *ast.Use) (plan, error) {
	return usePlan{keyspace: st.Keyspace}, nil
}

func (usePlan) binds() []ColumnSpec  { return nil }
func (usePlan) result() []ColumnSpec { return nil }

func (p usePlan) execute(_ context.Context, x *execCtx) (*Result, error) {
	if x.e.view.Keyspace(p.keyspace) == nil && !isSystemKeyspace(p.keyspace) {
		return nil, invalidf("Keyspace '%s' does not exist", p.keyspace)
	}
	x.session.SetKeyspace(p.keyspace)
	return &Result{Kind: ResultSetKeyspace, Keyspace: p.keyspace}, nil
}
