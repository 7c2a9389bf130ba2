package parse

import (
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
)

// roleName parses a role name: an identifier (lower case unless quoted)
// or a string, kept as written.
func (p *parser) roleName() string {
	if t := p.tok(); t.kind == tString {
		p.next()
		return t.text
	}
	return p.name("role")
}

// userName parses the name of the legacy USER statements. As in
// Cassandra, an unquoted user name keeps its case and a quoted one is an
// error.
func (p *parser) userName() string {
	t := p.tok()
	switch {
	case t.kind == tString:
		p.next()
		return t.text
	case t.kind == tQuoted:
		p.actionf(t, "Quoted strings are are not supported for user names and USER is deprecated, please use ROLE")
	case t.kind == tIdent && !ast.Reserved(t.word):
		p.next()
		return t.text
	}
	p.noViable(t)
	return ""
}

// roleOptions parses option (AND option)* of CREATE and ALTER ROLE.
func (p *parser) roleOptions() ast.RoleOptions {
	var o ast.RoleOptions
	for {
		t := p.tok()
		w := t.word
		if t.kind != tIdent {
			p.noViable(t)
		}
		p.next()
		// RoleOptions.setOption throws a SyntaxException from the
		// grammar's action, once the value has parsed: a bare message.
		dup := func(set bool) {
			if set {
				p.actionf(t, "Multiple definition for property '%s'", strings.ToUpper(w))
			}
		}
		switch w {
		case "password":
			p.expectPunct("=")
			s := p.stringLiteral()
			dup(o.Password != nil)
			o.Password = &s
		case "login":
			p.expectPunct("=")
			b := p.booleanLiteral()
			dup(o.Login != nil)
			o.Login = &b
		case "superuser":
			p.expectPunct("=")
			b := p.booleanLiteral()
			dup(o.Superuser != nil)
			o.Superuser = &b
		case "options":
			p.expectPunct("=")
			m := p.propertyMap()
			dup(o.Options != nil)
			o.Options = m
		default:
			p.noViable(t)
		}
		if !p.acceptKw("and") {
			return o
		}
	}
}

func (p *parser) stringLiteral() string {
	t := p.tok()
	if t.kind != tString {
		p.failf(t, "mismatched input %s expecting STRING_LITERAL", p.quote(t))
	}
	p.next()
	return t.text
}

func (p *parser) booleanLiteral() bool {
	t := p.tok()
	switch w := p.literalWord(t); w {
	case "true", "false":
		p.next()
		return w == "true"
	}
	p.failf(t, "mismatched input %s expecting BOOLEAN", p.quote(t))
	return false
}

// userOptions parses [WITH PASSWORD 's'] [SUPERUSER|NOSUPERUSER].
func (p *parser) userOptions() (password *string, superuser *bool) {
	if p.acceptKw("with") {
		p.expectKw("password")
		s := p.stringLiteral()
		password = &s
	}
	switch {
	case p.acceptKw("superuser"):
		b := true
		superuser = &b
	case p.acceptKw("nosuperuser"):
		b := false
		superuser = &b
	}
	return password, superuser
}

// permissions are the single permissions of GRANT, REVOKE and LIST.
var permissions = map[string]bool{
	ast.PermCreate: true, ast.PermAlter: true, ast.PermDrop: true,
	ast.PermSelect: true, ast.PermModify: true, ast.PermAuthorize: true,
	ast.PermDescribe: true, ast.PermExecute: true,
}

// isPermissionStart reports whether the tokens at the current position
// read as a permission rather than a role name: ALL or a permission
// followed by PERMISSION(S), ON, OF, NORECURSIVE or the end.
func (p *parser) isPermissionStart() bool {
	t := p.tok()
	w := strings.ToUpper(t.text)
	if t.kind != tIdent || !(w == ast.PermAll || permissions[w]) {
		return false
	}
	n := p.peek(1)
	return p.isKw(n, "permission") || p.isKw(n, "permissions") || p.isKw(n, "on") ||
		p.isKw(n, "of") || p.isKw(n, "norecursive") || n.kind == tEOF || p.isPunct(n, ";")
}

// permission parses ALL [PERMISSIONS] or a permission [PERMISSION].
func (p *parser) permission() string {
	t := p.next()
	w := strings.ToUpper(t.text)
	if w == ast.PermAll {
		p.acceptKw("permissions")
	} else {
		p.acceptKw("permission")
	}
	return w
}

// resource parses what a permission is on.
func (p *parser) resource() ast.Resource {
	t := p.tok()
	n := p.peek(1)
	switch {
	case p.isKw(t, "all") && p.isKw(n, "keyspaces"):
		p.next()
		p.next()
		return ast.Resource{Kind: ast.ResAllKeyspaces}
	case p.isKw(t, "all") && p.isKw(n, "roles"):
		p.next()
		p.next()
		return ast.Resource{Kind: ast.ResAllRoles}
	case p.isKw(t, "all") && p.isKw(n, "mbeans"):
		p.next()
		p.next()
		return ast.Resource{Kind: ast.ResAllMBeans}
	case p.isKw(t, "all") && p.isKw(n, "functions"):
		p.next()
		p.next()
		r := ast.Resource{Kind: ast.ResAllFunctions}
		if p.acceptKw("in") {
			p.expectKw("keyspace")
			r.Keyspace = p.ident()
		}
		return r
	case p.isKw(t, "keyspace"):
		p.next()
		return ast.Resource{Kind: ast.ResKeyspace, Keyspace: p.name("keyspace")}
	case p.isKw(t, "role") && p.startsName(n):
		p.next()
		return ast.Resource{Kind: ast.ResRole, Name: p.roleName()}
	case (p.isKw(t, "mbean") || p.isKw(t, "mbeans")) && n.kind == tString:
		p.next()
		return ast.Resource{Kind: ast.ResMBean, Name: p.stringLiteral()}
	case p.isKw(t, "function") && p.isFunctionName(n):
		p.next()
		r := ast.Resource{Kind: ast.ResFunction}
		r.Keyspace, r.Name = p.functionName()
		p.expectPunct("(")
		if !p.acceptPunct(")") {
			for {
				r.ArgTypes = append(r.ArgTypes, p.typ())
				if !p.acceptPunct(",") {
					break
				}
			}
			p.expectPunct(")")
		}
		return r
	}
	if p.isKw(t, "table") || p.isKw(t, "columnfamily") {
		p.next()
	}
	name := p.qualifiedName("table")
	return ast.Resource{Kind: ast.ResTable, Keyspace: name.Keyspace, Name: name.Name}
}

// startsName reports whether t can start a role name.
func (p *parser) startsName(t token) bool {
	return t.kind == tString || p.isIdent(t)
}

// grant parses GRANT permission ON resource TO role or GRANT role TO
// role.
func (p *parser) grant() ast.Statement {
	p.expectKw("grant")
	if p.isPermissionStart() {
		perm, res, role := p.permissionOn("to")
		return &ast.GrantPermission{Permission: perm, Resource: res, Role: role}
	}
	role, to := p.roleTo("to")
	return &ast.GrantRole{Role: role, To: to}
}

// revoke parses REVOKE permission ON resource FROM role or REVOKE role
// FROM role.
func (p *parser) revoke() ast.Statement {
	p.expectKw("revoke")
	if p.isPermissionStart() {
		perm, res, role := p.permissionOn("from")
		return &ast.RevokePermission{Permission: perm, Resource: res, Role: role}
	}
	role, from := p.roleTo("from")
	return &ast.RevokeRole{Role: role, From: from}
}

// permissionOn parses what GRANT and REVOKE of a permission share:
// permission ON resource, then prep (TO or FROM) role.
func (p *parser) permissionOn(prep string) (perm string, res ast.Resource, role string) {
	perm = p.permission()
	p.expectKw("on")
	res = p.resource()
	p.expectKw(prep)
	return perm, res, p.roleName()
}

// roleTo parses what GRANT and REVOKE of a role share: role, then prep (TO
// or FROM) grantee.
func (p *parser) roleTo(prep string) (role, grantee string) {
	role = p.roleName()
	p.expectKw(prep)
	return role, p.roleName()
}

// list parses LIST ROLES, LIST USERS and LIST ... PERMISSIONS.
func (p *parser) list() ast.Statement {
	p.expectKw("list")
	t := p.tok()
	switch {
	case p.acceptKw("roles"):
		s := &ast.ListRoles{}
		if p.acceptKw("of") {
			s.Of = p.roleName()
		}
		s.NoRecursive = p.acceptKw("norecursive")
		return s
	case p.acceptKw("users"):
		return &ast.ListUsers{}
	case p.isPermissionStart():
		s := &ast.ListPermissions{Permission: p.permission()}
		if p.acceptKw("on") {
			r := p.resource()
			s.Resource = &r
		}
		if p.acceptKw("of") {
			s.Of = p.roleName()
		}
		s.NoRecursive = p.acceptKw("norecursive")
		return s
	}
	p.noViable(t)
	return nil
}
