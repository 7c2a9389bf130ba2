package exec

import (
	"context"
	"errors"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/manifest"
)

// need is one permission a statement needs on one resource.
type need struct {
	perm permission
	res  resource
}

// authorize checks that the session's role may run st, planned with
// unqualified names in keyspace, as Cassandra's statements' checkAccess
// do. Without an Auth everything is allowed. Role and permission
// statements check their own rules when they run.
func (e *Executor) authorize(s *Session, keyspace string, st ast.Statement) error {
	if e.cfg.Auth == nil {
		return nil
	}
	return e.cfg.Auth.check(s.User(), keyspace, st)
}

// check checks that user may run st.
func (a *Auth) check(user, keyspace string, st ast.Statement) error {
	if user == "" {
		return unauthorizedf("You have not logged in")
	}
	needs := statementNeeds(keyspace, st)
	if len(needs) == 0 {
		return nil
	}
	p := a.principal(user)
	for _, n := range needs {
		if err := p.ensure(n.perm, n.res); err != nil {
			return err
		}
	}
	return nil
}

// statementNeeds lists the permissions st needs. Reads of the system
// keyspaces need none: every driver reads system.local, system.peers and
// system_schema to connect.
func statementNeeds(keyspace string, st ast.Statement) []need {
	ksOf := func(n ast.TableName) string {
		if n.Keyspace != "" {
			return n.Keyspace
		}
		return keyspace
	}
	table := func(p permission, n ast.TableName) []need {
		return []need{{p, tableResource(ksOf(n), n.Name)}}
	}
	conditional := func(n ast.TableName, cond bool) []need {
		if cond {
			// A condition reads the row: Cassandra asks for SELECT too.
			return append(table(permModify, n), table(permSelect, n)...)
		}
		return table(permModify, n)
	}
	switch st := st.(type) {
	case *ast.Select:
		if isSystemKeyspace(ksOf(st.Table)) {
			return nil
		}
		return table(permSelect, st.Table)
	case *ast.Insert:
		return conditional(st.Table, st.IfNotExists)
	case *ast.Update:
		return conditional(st.Table, st.IfExists || len(st.If) > 0)
	case *ast.Delete:
		return conditional(st.Table, st.IfExists || len(st.If) > 0)
	case *ast.Batch:
		var out []need
		for _, c := range st.Statements {
			out = append(out, statementNeeds(keyspace, c)...)
		}
		return out
	case *ast.Truncate:
		return table(permModify, st.Table)
	case *ast.CreateKeyspace:
		return []need{{permCreate, resData}}
	case *ast.AlterKeyspace:
		return []need{{permAlter, keyspaceResource(st.Name)}}
	case *ast.DropKeyspace:
		return []need{{permDrop, keyspaceResource(st.Name)}}
	case *ast.CreateTable:
		return []need{{permCreate, keyspaceResource(ksOf(st.Table))}}
	case *ast.AlterTable:
		return table(permAlter, st.Table)
	case *ast.DropTable:
		return table(permDrop, st.Table)
	case *ast.CreateType:
		return []need{{permCreate, keyspaceResource(ksOf(st.Name))}}
	case *ast.AlterType:
		return []need{{permAlter, keyspaceResource(ksOf(st.Name))}}
	case *ast.DropType:
		return []need{{permDrop, keyspaceResource(ksOf(st.Name))}}
	}
	// USE, role and permission statements (checked as they run), and
	// statements that change nothing Sediment has.
	return nil
}

// runAs checks that s may run st, runs its plan, and then keeps the
// permissions in step with the schema as Cassandra does: the creator of a
// keyspace or table gets every permission on it, and the permissions on a
// dropped keyspace or table are revoked from everyone.
func (e *Executor) runAs(ctx context.Context, s *Session, keyspace string, st ast.Statement, pl plan, p *Params) (*Result, error) {
	if err := e.authorize(s, keyspace, st); err != nil {
		return nil, err
	}
	res, err := e.run(ctx, s, pl, p)
	if err != nil || e.cfg.Auth == nil || res == nil || res.Kind != ResultSchemaChange {
		return res, err
	}
	c := res.Change
	var r resource
	switch {
	case c.Target == TargetKeyspace:
		r = keyspaceResource(c.Keyspace)
	case c.Target == TargetTable:
		r = tableResource(c.Keyspace, c.Name)
	default:
		return res, nil
	}
	switch c.Change {
	case ChangeCreated:
		err = e.cfg.Auth.grantCreator(ctx, s.User(), r)
	case ChangeDropped:
		err = e.cfg.Auth.revokeAllOn(ctx, r)
	}
	return res, err
}

// grantCreator gives role every permission on r it just created.
func (a *Auth) grantCreator(ctx context.Context, role string, r resource) error {
	if role == "" {
		return nil
	}
	err := a.m.AlterRole(ctx, role, func(x *manifest.Role) error {
		x.Grant(string(r), r.applicable().names()...)
		return nil
	})
	if errors.Is(err, manifest.ErrNotFound) { // dropped while logged in
		return nil
	}
	if err != nil {
		return err
	}
	return a.sync(ctx)
}

// revokeAllOn removes every permission on r, and on what is under it,
// from every role, so that a keyspace, table or role created again later
// under the same name starts without them.
func (a *Auth) revokeAllOn(ctx context.Context, r resource) error {
	roles, _ := a.view.Roles()
	changed := false
	for _, role := range roles {
		if !role.Clone().RevokeOn(string(r)) {
			continue
		}
		err := a.m.AlterRole(ctx, role.Name, func(x *manifest.Role) error {
			x.RevokeOn(string(r))
			return nil
		})
		if err != nil && !errors.Is(err, manifest.ErrNotFound) {
			return err
		}
		changed = true
	}
	if !changed {
		return nil
	}
	return a.sync(ctx)
}
