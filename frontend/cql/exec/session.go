package exec

import (
	"context"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/transport"
)

// Session is the state of one client connection the statements see: the
// server's, whose keyspace USE sets.
type Session = transport.Session

// NewSession returns a session without a keyspace, as a connection starts.
func NewSession() *Session { return &Session{} }

// sessionIn returns a session whose keyspace is ks, for planning a
// statement in a keyspace that is not the connection's current one.
func sessionIn(ks string) *Session {
	s := &Session{}
	s.SetKeyspace(ks)
	return s
}

var _ plan = usePlan{}

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
