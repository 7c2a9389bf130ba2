package exec

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/manifest"
)

// authPlan runs a role or permission statement. Its checks happen when it
// runs, against the roles of that moment, as Cassandra's do.
type authPlan struct {
	cols []ColumnSpec
	run  func(ctx context.Context, a *Auth, p *principal) (*Result, error)
	// anonymous, when set, is what Cassandra finds wrong with a CREATE or
	// ALTER ROLE before it refuses the anonymous user (see anonymousRole).
	anonymous func() error
}

func (authPlan) binds() []ColumnSpec    { return nil }
func (p authPlan) result() []ColumnSpec { return p.cols }

func (p authPlan) execute(ctx context.Context, x *execCtx) (*Result, error) {
	a, user := x.e.cfg.Auth, x.session.User()
	if a == nil || user == "" {
		// Without an authenticator the user is anonymous, and Cassandra
		// refuses every role statement to anonymous users.
		if p.anonymous != nil {
			if err := p.anonymous(); err != nil {
				return nil, err
			}
		}
		return nil, unauthorizedf("You have to be logged in and not anonymous to perform this request")
	}
	return p.run(ctx, a, a.principal(user))
}

// Result columns of LIST ROLES, LIST USERS and LIST PERMISSIONS, in
// Cassandra's pseudo-tables of system_auth.
var (
	listRolesColumns = []ColumnSpec{
		{Keyspace: ksSystemAuth, Table: "roles", Name: "role", Type: cqltype.TextType},
		{Keyspace: ksSystemAuth, Table: "roles", Name: "super", Type: cqltype.BooleanType},
		{Keyspace: ksSystemAuth, Table: "roles", Name: "login", Type: cqltype.BooleanType},
		{Keyspace: ksSystemAuth, Table: "roles", Name: "options", Type: cqltype.MapOf(cqltype.TextType, cqltype.TextType, false)},
	}
	listUsersColumns = []ColumnSpec{
		{Keyspace: ksSystemAuth, Table: "users", Name: "name", Type: cqltype.TextType},
		{Keyspace: ksSystemAuth, Table: "users", Name: "super", Type: cqltype.BooleanType},
	}
	listPermissionsColumns = []ColumnSpec{
		{Keyspace: ksSystemAuth, Table: "permissions", Name: "role", Type: cqltype.TextType},
		{Keyspace: ksSystemAuth, Table: "permissions", Name: "username", Type: cqltype.TextType},
		{Keyspace: ksSystemAuth, Table: "permissions", Name: "resource", Type: cqltype.TextType},
		{Keyspace: ksSystemAuth, Table: "permissions", Name: "permission", Type: cqltype.TextType},
	}
)

// planAuth plans the role and permission statements.
func (e *Executor) planAuth(s *Session, st ast.Statement) (plan, error) {
	switch st := st.(type) {
	case *ast.CreateRole:
		return authPlan{run: func(ctx context.Context, a *Auth, p *principal) (*Result, error) {
			return a.createRole(ctx, p, st.Name, st.IfNotExists, st.Options)
		}, anonymous: func() error { return anonymousRole(st.Name, st.Options, true) }}, nil
	case *ast.CreateUser:
		// CREATE USER is CREATE ROLE WITH LOGIN = true, and SUPERUSER
		// false unless given.
		login, super := true, false
		if st.Superuser != nil {
			super = *st.Superuser
		}
		o := ast.RoleOptions{Password: st.Password, Login: &login, Superuser: &super}
		return authPlan{run: func(ctx context.Context, a *Auth, p *principal) (*Result, error) {
			return a.createRole(ctx, p, st.Name, st.IfNotExists, o)
		}, anonymous: func() error { return anonymousRole(st.Name, o, true) }}, nil
	case *ast.AlterRole:
		return authPlan{run: func(ctx context.Context, a *Auth, p *principal) (*Result, error) {
			return a.alterRole(ctx, p, st.Name, st.IfExists, st.Options)
		}, anonymous: func() error { return anonymousRole(st.Name, st.Options, false) }}, nil
	case *ast.AlterUser:
		o := ast.RoleOptions{Password: st.Password, Superuser: st.Superuser}
		return authPlan{run: func(ctx context.Context, a *Auth, p *principal) (*Result, error) {
			return a.alterRole(ctx, p, st.Name, st.IfExists, o)
		}, anonymous: func() error { return anonymousRole(st.Name, o, false) }}, nil
	case *ast.DropRole:
		return authPlan{run: func(ctx context.Context, a *Auth, p *principal) (*Result, error) {
			return a.dropRole(ctx, p, st.Name, st.IfExists)
		}}, nil
	case *ast.DropUser:
		return authPlan{run: func(ctx context.Context, a *Auth, p *principal) (*Result, error) {
			return a.dropRole(ctx, p, st.Name, st.IfExists)
		}}, nil
	case *ast.GrantRole:
		return authPlan{run: func(ctx context.Context, a *Auth, p *principal) (*Result, error) {
			return a.grantRole(ctx, p, st.Role, st.To, true)
		}}, nil
	case *ast.RevokeRole:
		return authPlan{run: func(ctx context.Context, a *Auth, p *principal) (*Result, error) {
			return a.grantRole(ctx, p, st.Role, st.From, false)
		}}, nil
	case *ast.ListRoles:
		return authPlan{cols: listRolesColumns, run: func(_ context.Context, a *Auth, p *principal) (*Result, error) {
			return a.listRoles(p, st.Of, !st.NoRecursive, false)
		}}, nil
	case *ast.ListUsers:
		return authPlan{cols: listUsersColumns, run: func(_ context.Context, a *Auth, p *principal) (*Result, error) {
			// As in Cassandra, LIST USERS lists a role's direct roles only.
			return a.listRoles(p, "", false, true)
		}}, nil
	case *ast.GrantPermission:
		return e.grantPlan(s, st.Permission, st.Resource, st.Role, true)
	case *ast.RevokePermission:
		return e.grantPlan(s, st.Permission, st.Resource, st.Role, false)
	case *ast.ListPermissions:
		var r *resource
		if st.Resource != nil {
			res, err := e.resourceOf(s, *st.Resource)
			if err != nil {
				return nil, err
			}
			r = &res
		}
		perms := allPerms
		if st.Permission != ast.PermAll {
			p, err := permissionNamed(st.Permission)
			if err != nil {
				return nil, err
			}
			perms = setOf(p)
		}
		return authPlan{cols: listPermissionsColumns, run: func(_ context.Context, a *Auth, p *principal) (*Result, error) {
			return a.listPermissions(p, perms, r, st.Of, !st.NoRecursive)
		}}, nil
	}
	return nil, invalidf("%s statements are not supported by Sediment yet", statementName(st))
}

// anonymousRole is what Cassandra 4 answers the anonymous user of
// AllowAllAuthenticator before it finds it anonymous: the superuser checks
// of CREATE and ALTER ROLE's authorize (the anonymous user is no
// superuser), then RoleOptions.validate (CassandraRoleManager takes a
// PASSWORD only with PasswordAuthenticator), then the name or the options.
func anonymousRole(name string, o ast.RoleOptions, create bool) error {
	switch {
	case create && o.Superuser != nil && *o.Superuser:
		return unauthorizedf("Only superusers can create a role with superuser status")
	case !create && o.Superuser != nil:
		return unauthorizedf("Only superusers are allowed to alter superuser status")
	case o.Password != nil:
		return invalidf("org.apache.cassandra.auth.CassandraRoleManager doesn't support PASSWORD")
	case create && name == "":
		return invalidf("Role name can't be an empty string")
	case !create && o.Password == nil && o.Login == nil && o.Superuser == nil && o.Options == nil:
		return invalidf("ALTER [ROLE|USER] can't be empty")
	}
	return nil
}

// allPerms is every permission.
const allPerms = permSet(1<<numPerms - 1)

// permissionNamed parses a permission of the grammar.
func permissionNamed(name string) (permission, error) {
	if i := slices.Index(permNames[:], name); i >= 0 {
		return permission(i), nil
	}
	return 0, syntaxf("unknown permission %s", name)
}

// resourceOf resolves a resource of GRANT, REVOKE or LIST PERMISSIONS; a
// table without keyspace is in the session's. Function and MBean
// resources name things Sediment does not have.
func (e *Executor) resourceOf(s *Session, r ast.Resource) (resource, error) {
	switch r.Kind {
	case ast.ResAllKeyspaces:
		return resData, nil
	case ast.ResKeyspace:
		return keyspaceResource(r.Keyspace), nil
	case ast.ResTable:
		ks, err := e.keyspaceOf(s, ast.TableName{Keyspace: r.Keyspace, Name: r.Name})
		if err != nil {
			return "", err
		}
		return tableResource(ks, r.Name), nil
	case ast.ResAllRoles:
		return resRoles, nil
	case ast.ResRole:
		return roleResource(r.Name), nil
	case ast.ResAllFunctions, ast.ResFunction:
		return "", invalidf("Function resources are not supported by Sediment: it has no user-defined functions")
	}
	return "", invalidf("MBean resources are not supported by Sediment")
}

// grantPlan plans GRANT (grant) or REVOKE of permission on res to or from
// role.
func (e *Executor) grantPlan(s *Session, permission string, res ast.Resource, role string, grant bool) (plan, error) {
	r, perms, err := e.permissionTarget(s, permission, res)
	if err != nil {
		return nil, err
	}
	return authPlan{run: func(ctx context.Context, a *Auth, p *principal) (*Result, error) {
		return a.grantPermissions(ctx, p, perms, r, role, grant)
	}}, nil
}

// permissionTarget resolves the resource and permissions of GRANT or
// REVOKE; ALL is every permission the resource supports.
func (e *Executor) permissionTarget(s *Session, name string, res ast.Resource) (resource, permSet, error) {
	r, err := e.resourceOf(s, res)
	if err != nil {
		return "", 0, err
	}
	if name == ast.PermAll {
		return r, r.applicable(), nil
	}
	p, err := permissionNamed(name)
	if err != nil {
		return "", 0, err
	}
	if !r.applicable().has(p) {
		// Cassandra 4's parser filters the permissions by the resource
		// (filterPermissions) and refuses an empty rest as a syntax error.
		kind := "DataResource"
		if r.isRoles() {
			kind = "RoleResource"
		}
		return "", 0, syntaxf("Resource type %s does not support any of the requested permissions", kind)
	}
	return r, setOf(p), nil
}

// exists reports whether a resource exists now.
func (a *Auth) exists(r resource) bool {
	x, y := r.parts()
	switch {
	case r == resData || r == resRoles:
		return true
	case r.isRoles():
		return a.view.Role(x) != nil
	case isSystemKeyspace(x):
		return true
	case y != "":
		return a.view.Table(x, y) != nil
	}
	return a.view.Keyspace(x) != nil
}

// roleOptions checks OPTIONS = {...}: a map of string literals.
func roleOptions(m *ast.Map) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m.Keys))
	for i := range m.Keys {
		k, ok1 := m.Keys[i].(*ast.Literal)
		v, ok2 := m.Values[i].(*ast.Literal)
		if !ok1 || !ok2 || k.Kind != ast.LitString || v.Kind != ast.LitString {
			return nil, invalidf("Invalid value for property 'OPTIONS'. It must be a map of text to text")
		}
		out[k.Text] = v.Text
	}
	return out, nil
}

func (a *Auth) createRole(ctx context.Context, p *principal, name string, ifNotExists bool, o ast.RoleOptions) (*Result, error) {
	if err := p.ensureForRoles(permCreate, resRoles); err != nil {
		return nil, err
	}
	if o.Superuser != nil && *o.Superuser && !p.super {
		return nil, unauthorizedf("Only superusers can create a role with superuser status")
	}
	opts, err := roleOptions(o.Options)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, invalidf("Role name can't be an empty string")
	}
	exists := func() (*Result, error) {
		if ifNotExists {
			return voidResult, nil
		}
		return nil, invalidf("%s already exists", name)
	}
	if a.view.Role(name) != nil {
		return exists()
	}
	r := manifest.Role{Name: name, Options: opts}
	r.Login = o.Login != nil && *o.Login
	r.Superuser = o.Superuser != nil && *o.Superuser
	if o.Password != nil {
		if r.SaltedHash, err = a.hash(*o.Password); err != nil {
			return nil, err
		}
	}
	err = a.m.CreateRole(ctx, r)
	if errors.Is(err, manifest.ErrExists) {
		return exists()
	}
	if err != nil {
		return nil, err
	}
	// The creator may alter, drop and grant the new role, as in Cassandra.
	err = a.m.AlterRole(ctx, p.name, func(x *manifest.Role) error {
		x.Grant(string(roleResource(name)), roleResource(name).applicable().names()...)
		return nil
	})
	if err != nil && !errors.Is(err, manifest.ErrNotFound) {
		return nil, err
	}
	a.audit(p, "create role", "role", name, "superuser", r.Superuser, "login", r.Login, "password_set", o.Password != nil)
	return voidResult, a.sync(ctx)
}

func (a *Auth) alterRole(ctx context.Context, p *principal, name string, ifExists bool, o ast.RoleOptions) (*Result, error) {
	if o.Superuser != nil && p.roles[name] {
		return nil, unauthorizedf("You aren't allowed to alter your own superuser status or that of a role granted to you")
	}
	if o.Superuser != nil && !p.super {
		return nil, unauthorizedf("Only superusers are allowed to alter superuser status")
	}
	if !p.super {
		if p.name == name {
			// A role may change its own password, and nothing else.
			switch {
			case o.Login != nil:
				return nil, unauthorizedf("You aren't allowed to alter LOGIN")
			case o.Options != nil:
				return nil, unauthorizedf("You aren't allowed to alter OPTIONS")
			}
		} else if err := p.ensureForRoles(permAlter, roleResource(name)); err != nil {
			return nil, err
		}
	}
	if o.Password == nil && o.Login == nil && o.Superuser == nil && o.Options == nil {
		return nil, invalidf("ALTER [ROLE|USER] can't be empty")
	}
	opts, err := roleOptions(o.Options)
	if err != nil {
		return nil, err
	}
	missing := func() (*Result, error) {
		if ifExists {
			return voidResult, nil
		}
		return nil, invalidf("%s doesn't exist", name)
	}
	if a.view.Role(name) == nil {
		return missing()
	}
	var hash string
	if o.Password != nil {
		if hash, err = a.hash(*o.Password); err != nil {
			return nil, err
		}
	}
	err = a.m.AlterRole(ctx, name, func(r *manifest.Role) error {
		if o.Password != nil {
			r.SaltedHash = hash
		}
		if o.Login != nil {
			r.Login = *o.Login
		}
		if o.Superuser != nil {
			r.Superuser = *o.Superuser
		}
		if o.Options != nil {
			r.Options = opts
		}
		return nil
	})
	if errors.Is(err, manifest.ErrNotFound) {
		return missing()
	}
	if err != nil {
		return nil, err
	}
	a.audit(p, "alter role", "role", name, "superuser", auditBool(o.Superuser), "login", auditBool(o.Login), "password_changed", o.Password != nil)
	return voidResult, a.sync(ctx)
}

func (a *Auth) dropRole(ctx context.Context, p *principal, name string, ifExists bool) (*Result, error) {
	if err := p.ensureForRoles(permDrop, roleResource(name)); err != nil {
		return nil, err
	}
	if a.view.Role(name) != nil && a.principal(name).super && !p.super {
		return nil, unauthorizedf("Only superusers can drop a role with superuser status")
	}
	missing := func() (*Result, error) {
		if ifExists {
			return voidResult, nil
		}
		return nil, invalidf("%s doesn't exist", name)
	}
	if a.view.Role(name) == nil {
		return missing()
	}
	if p.name == name {
		return nil, invalidf("Cannot DROP primary role for current login")
	}
	err := a.m.DropRole(ctx, name)
	if errors.Is(err, manifest.ErrNotFound) {
		return missing()
	}
	if err != nil {
		return nil, err
	}
	// The grants of the role to others and the permissions on it go with
	// it, so that a role created again under the name starts clean.
	roles, _ := a.view.Roles()
	on := string(roleResource(name))
	for _, r := range roles {
		c := r.Clone()
		if !c.RemoveMember(name) && !c.RevokeOn(on) {
			continue
		}
		err := a.m.AlterRole(ctx, r.Name, func(x *manifest.Role) error {
			x.RemoveMember(name)
			x.RevokeOn(on)
			return nil
		})
		if err != nil && !errors.Is(err, manifest.ErrNotFound) {
			return nil, err
		}
	}
	a.audit(p, "drop role", "role", name)
	return voidResult, a.sync(ctx)
}

// grantRole runs GRANT role TO grantee, or REVOKE role FROM grantee.
func (a *Auth) grantRole(ctx context.Context, p *principal, role, grantee string, grant bool) (*Result, error) {
	if err := p.ensureForRoles(permAuthorize, roleResource(role)); err != nil {
		return nil, err
	}
	for _, r := range []string{role, grantee} {
		if a.view.Role(r) == nil {
			return nil, invalidf("%s doesn't exist", r)
		}
	}
	s := a.snapshot()
	if grant {
		if s.closure(grantee, true)[role] {
			return nil, invalidf("%s is a member of %s", grantee, role)
		}
		if s.closure(role, true)[grantee] {
			return nil, invalidf("%s is a member of %s", role, grantee)
		}
	} else if !s.closure(grantee, false)[role] {
		return nil, invalidf("%s is not a member of %s", grantee, role)
	}
	err := a.m.AlterRole(ctx, grantee, func(x *manifest.Role) error {
		if grant {
			x.AddMember(role)
		} else {
			x.RemoveMember(role)
		}
		return nil
	})
	if errors.Is(err, manifest.ErrNotFound) {
		return nil, invalidf("%s doesn't exist", grantee)
	}
	if err != nil {
		return nil, err
	}
	a.audit(p, grantAction("role", grant), "role", role, "grantee", grantee)
	return voidResult, a.sync(ctx)
}

// grantPermissions runs GRANT perms ON r TO role, or REVOKE ... FROM.
func (a *Auth) grantPermissions(ctx context.Context, p *principal, perms permSet, r resource, role string, grant bool) (*Result, error) {
	// One may grant only what one holds, and only with AUTHORIZE. As in
	// Cassandra, this is checked first (authorize before validate), so
	// one without AUTHORIZE learns nothing of what exists.
	if err := p.ensure(permAuthorize, r); err != nil {
		return nil, err
	}
	for q := range numPerms {
		if perms.has(q) {
			if err := p.ensure(q, r); err != nil {
				return nil, err
			}
		}
	}
	if a.view.Role(role) == nil {
		return nil, invalidf("Role %s doesn't exist", role)
	}
	if !a.exists(r) {
		return nil, invalidf("Resource %s doesn't exist", r)
	}
	err := a.m.AlterRole(ctx, role, func(x *manifest.Role) error {
		if grant {
			x.Grant(string(r), perms.names()...)
		} else {
			x.Revoke(string(r), perms.names()...)
		}
		return nil
	})
	if errors.Is(err, manifest.ErrNotFound) {
		return nil, invalidf("Role %s doesn't exist", role)
	}
	if err != nil {
		return nil, err
	}
	a.audit(p, grantAction("permissions", grant), "role", role, "permissions", perms.names(), "resource", r.String())
	return voidResult, a.sync(ctx)
}

// listRoles runs LIST ROLES [OF of] [NORECURSIVE], or LIST USERS.
func (a *Auth) listRoles(p *principal, of string, recursive, users bool) (*Result, error) {
	s := a.snapshot()
	if of != "" && s.roles[of] == nil {
		return nil, invalidf("%s doesn't exist", roleResource(of))
	}
	var names map[string]bool
	switch {
	case p.has(permDescribe, resRoles) && of == "":
		names = map[string]bool{}
		for n := range s.roles {
			names[n] = true
		}
	case p.has(permDescribe, resRoles):
		names = s.closure(of, recursive)
	case of == "":
		names = s.closure(p.name, recursive)
	case p.roles[of]:
		names = s.closure(of, recursive)
	default:
		return nil, unauthorizedf("You are not authorized to view roles granted to %s ", of)
	}
	if len(names) == 0 {
		return voidResult, nil
	}
	res := &Result{Kind: ResultRows, Columns: listRolesColumns}
	if users {
		res.Columns = listUsersColumns
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		r := s.roles[n]
		switch {
		case !users:
			opts := emptyMap
			if len(r.Options) > 0 {
				opts = textMapValue(r.Options)
			}
			res.Rows = append(res.Rows, [][]byte{textValue(n), boolValue(r.Superuser), boolValue(r.Login), opts})
		case r.Login:
			res.Rows = append(res.Rows, [][]byte{textValue(n), boolValue(a.principal(n).super)})
		}
	}
	return res, nil
}

// listPermissions runs LIST perms [ON r] [OF of] [NORECURSIVE].
func (a *Auth) listPermissions(p *principal, perms permSet, r *resource, of string, recursive bool) (*Result, error) {
	if r != nil && !a.exists(*r) {
		return nil, invalidf("%s doesn't exist", *r)
	}
	s := a.snapshot()
	if of != "" && s.roles[of] == nil {
		return nil, invalidf("%s doesn't exist", roleResource(of))
	}
	if !p.super && !p.roles[of] {
		who := of
		if of == "" {
			who = "everyone"
		}
		return nil, unauthorizedf("You are not authorized to view %s's permissions", who)
	}
	var roles map[string]bool
	if of == "" {
		roles = map[string]bool{}
		for n := range s.roles {
			roles[n] = true
		}
	} else {
		roles = s.closure(of, true)
	}
	var on map[resource]bool
	if r != nil {
		on = map[resource]bool{*r: true}
		if recursive {
			for _, c := range r.chain() {
				on[c] = true
			}
		}
	}
	type row struct {
		role string
		res  resource
		perm permission
	}
	var rows []row
	for n := range roles {
		for res, names := range s.roles[n].Permissions {
			if on != nil && !on[resource(res)] {
				continue
			}
			held := permsOf(names) & perms
			for q := range numPerms {
				if held.has(q) {
					rows = append(rows, row{n, resource(res), q})
				}
			}
		}
	}
	if len(rows) == 0 {
		return voidResult, nil
	}
	slices.SortFunc(rows, func(x, y row) int {
		return cmp.Or(cmp.Compare(x.role, y.role), cmp.Compare(x.res, y.res), cmp.Compare(x.perm, y.perm))
	})
	res := &Result{Kind: ResultRows, Columns: listPermissionsColumns}
	for _, w := range rows {
		res.Rows = append(res.Rows, [][]byte{textValue(w.role), textValue(w.role), textValue(w.res.String()), textValue(w.perm.String())})
	}
	return res, nil
}
