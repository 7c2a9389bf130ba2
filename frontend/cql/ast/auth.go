package ast

// RoleOptions are the WITH options of CREATE ROLE and ALTER ROLE, joined
// by AND. A nil field was not given.
type RoleOptions struct {
	Password  *string
	Login     *bool
	Superuser *bool
	// Options is OPTIONS = {...}, a map of string literals.
	Options *Map
}

// CreateRole is CREATE ROLE [IF NOT EXISTS] r [WITH options]. Role names
// are lower case unless quoted or written as a string.
type CreateRole struct {
	Name        string
	IfNotExists bool
	Options     RoleOptions
}

// AlterRole is ALTER ROLE [IF EXISTS] r WITH options.
type AlterRole struct {
	Name     string
	IfExists bool
	Options  RoleOptions
}

// DropRole is DROP ROLE [IF EXISTS] r.
type DropRole struct {
	Name     string
	IfExists bool
}

// CreateUser is the legacy CREATE USER [IF NOT EXISTS] u [WITH PASSWORD
// 'p'] [SUPERUSER|NOSUPERUSER]. As in Cassandra, a user name keeps its
// case. Superuser is nil when neither keyword was given.
type CreateUser struct {
	Name        string
	IfNotExists bool
	Password    *string
	Superuser   *bool
}

// AlterUser is the legacy ALTER USER [IF EXISTS] u [WITH PASSWORD 'p']
// [SUPERUSER|NOSUPERUSER].
type AlterUser struct {
	Name      string
	IfExists  bool
	Password  *string
	Superuser *bool
}

// DropUser is DROP USER [IF EXISTS] u.
type DropUser struct {
	Name     string
	IfExists bool
}

// ListRoles is LIST ROLES [OF r] [NORECURSIVE].
type ListRoles struct {
	Of          string // empty: every role
	NoRecursive bool
}

// ListUsers is LIST USERS.
type ListUsers struct{}

// GrantRole is GRANT role TO grantee.
type GrantRole struct{ Role, To string }

// RevokeRole is REVOKE role FROM revokee.
type RevokeRole struct{ Role, From string }

// ResourceKind is the kind of resource a permission applies to.
type ResourceKind uint8

// Resource kinds.
const (
	ResAllKeyspaces ResourceKind = iota // ALL KEYSPACES
	ResKeyspace                         // KEYSPACE k
	ResTable                            // [TABLE] [k.]t
	ResAllRoles                         // ALL ROLES
	ResRole                             // ROLE r
	ResAllFunctions                     // ALL FUNCTIONS [IN KEYSPACE k]
	ResFunction                         // FUNCTION [k.]f(types)
	ResAllMBeans                        // ALL MBEANS
	ResMBean                            // MBEAN 'name' or MBEANS 'pattern'
)

// Resource is the ON part of GRANT, REVOKE and LIST PERMISSIONS.
// Keyspace and Name are set as the kind needs: ResKeyspace and
// ResAllFunctions use Keyspace (empty for all functions everywhere);
// ResTable and ResFunction use both (Keyspace empty when not given);
// ResRole and ResMBean use Name.
type Resource struct {
	Kind           ResourceKind
	Keyspace, Name string
	// ArgTypes are the argument types of a ResFunction, as written.
	ArgTypes []string
}

// Permission names, upper case, as the grammar spells them. PermAll is
// ALL [PERMISSIONS]: every permission the resource supports.
const (
	PermAll       = "ALL"
	PermCreate    = "CREATE"
	PermAlter     = "ALTER"
	PermDrop      = "DROP"
	PermSelect    = "SELECT"
	PermModify    = "MODIFY"
	PermAuthorize = "AUTHORIZE"
	PermDescribe  = "DESCRIBE"
	PermExecute   = "EXECUTE"
)

// GrantPermission is GRANT permission ON resource TO role.
type GrantPermission struct {
	Permission string
	Resource   Resource
	Role       string
}

// RevokePermission is REVOKE permission ON resource FROM role.
type RevokePermission struct {
	Permission string
	Resource   Resource
	Role       string
}

// ListPermissions is LIST permission [ON resource] [OF role]
// [NORECURSIVE]. Resource is nil when no ON clause was given.
type ListPermissions struct {
	Permission  string
	Resource    *Resource
	Of          string
	NoRecursive bool
}

func (*CreateRole) stmt()       {}
func (*AlterRole) stmt()        {}
func (*DropRole) stmt()         {}
func (*CreateUser) stmt()       {}
func (*AlterUser) stmt()        {}
func (*DropUser) stmt()         {}
func (*ListRoles) stmt()        {}
func (*ListUsers) stmt()        {}
func (*GrantRole) stmt()        {}
func (*RevokeRole) stmt()       {}
func (*GrantPermission) stmt()  {}
func (*RevokePermission) stmt() {}
func (*ListPermissions) stmt()  {}
