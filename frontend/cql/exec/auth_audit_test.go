package exec_test

import (
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// TestAuthAuditRoleStatementRefusals checks the Unauthorized message of
// the role statements: Cassandra 4's AuthenticationStatement.checkPermission
// replaces the usual "has no X permission on ..." with a message that
// names neither the permission nor the resource.
func TestAuthAuditRoleStatementRefusals(t *testing.T) {
	srv, admin := startAuth(t)
	cqltest.Exec(t, admin,
		"CREATE ROLE alice WITH PASSWORD = 'pw' AND LOGIN = true",
		"CREATE ROLE bob WITH PASSWORD = 'pw' AND LOGIN = true",
		"CREATE ROLE writer",
	)
	alice := login(t, srv, "alice", "pw")
	const refused = "User alice does not have sufficient privileges to perform the requested operation"
	for _, stmt := range []string{
		"CREATE ROLE eve",
		"CREATE USER eve WITH PASSWORD 'x'",
		"ALTER ROLE bob WITH PASSWORD = 'x'",
		"ALTER USER bob WITH PASSWORD 'x'",
		"DROP ROLE bob",
		"DROP USER bob",
		"DROP ROLE alice", // the permission is checked before "Cannot DROP primary role"
		"GRANT writer TO bob",
		"REVOKE writer FROM bob",
		// Checked before the roles' existence, as Cassandra authorizes
		// before it validates.
		"GRANT nobody TO bob",
		"ALTER ROLE nobody WITH PASSWORD = 'x'",
	} {
		wantExactErr(t, alice, stmt, codeUnauth, refused)
	}
	// Statements on one's own role keep their own words.
	wantExactErr(t, alice, "ALTER ROLE alice WITH SUPERUSER = true", codeUnauth,
		"You aren't allowed to alter your own superuser status or that of a role granted to you")
	wantExactErr(t, alice, "CREATE ROLE eve WITH SUPERUSER = true", codeUnauth, refused)

	// With the permission the statements run.
	cqltest.Exec(t, admin, "GRANT CREATE ON ALL ROLES TO alice", "GRANT AUTHORIZE ON ROLE writer TO alice")
	cqltest.Exec(t, alice, "CREATE ROLE eve", "GRANT writer TO bob", "REVOKE writer FROM bob")
	wantExactErr(t, alice, "CREATE ROLE root WITH SUPERUSER = true", codeUnauth,
		"Only superusers can create a role with superuser status")
}

// TestAuthAuditGrantPermissions checks GRANT and REVOKE of permissions:
// permissions a resource does not have are a syntax error of Cassandra
// 4's parser (filterPermissions), and the AUTHORIZE check comes before
// the checks that the role and the resource exist.
func TestAuthAuditGrantPermissions(t *testing.T) {
	srv, admin := startAuth(t)
	cqltest.Exec(t, admin, "CREATE ROLE alice WITH PASSWORD = 'pw' AND LOGIN = true", "CREATE ROLE writer")
	alice := login(t, srv, "alice", "pw")

	for _, tc := range []struct{ stmt, kind string }{
		{"GRANT EXECUTE ON KEYSPACE ks TO writer", "DataResource"},
		{"GRANT EXECUTE ON ALL KEYSPACES TO writer", "DataResource"},
		{"GRANT DESCRIBE ON KEYSPACE ks TO writer", "DataResource"},
		{"GRANT CREATE ON TABLE ks.t TO writer", "DataResource"},
		{"REVOKE CREATE ON ks.t FROM writer", "DataResource"},
		{"GRANT SELECT ON ROLE alice TO writer", "RoleResource"},
		{"GRANT CREATE ON ROLE alice TO writer", "RoleResource"},
		{"GRANT MODIFY ON ALL ROLES TO writer", "RoleResource"},
		// Refused before the role or the resource is looked at.
		{"GRANT EXECUTE ON KEYSPACE nope TO nobody", "DataResource"},
	} {
		wantExactErr(t, admin, tc.stmt, codeSyntax, "Resource type "+tc.kind+" does not support any of the requested permissions")
	}
	// ALL is what the resource has.
	cqltest.Exec(t, admin, "GRANT ALL ON ROLE alice TO writer", "GRANT ALL PERMISSIONS ON TABLE ks.t TO writer")
	wantAuthRows(t, admin, "LIST ALL PERMISSIONS OF writer",
		"writer|writer|<table ks.t>|ALTER", "writer|writer|<table ks.t>|DROP", "writer|writer|<table ks.t>|SELECT",
		"writer|writer|<table ks.t>|MODIFY", "writer|writer|<table ks.t>|AUTHORIZE",
		"writer|writer|<role alice>|ALTER", "writer|writer|<role alice>|DROP", "writer|writer|<role alice>|AUTHORIZE",
	)

	// Without AUTHORIZE, a missing table or role is not revealed.
	wantExactErr(t, alice, "GRANT SELECT ON ks.nope TO writer", codeUnauth,
		"User alice has no AUTHORIZE permission on <table ks.nope> or any of its parents")
	wantExactErr(t, alice, "GRANT SELECT ON ks.t TO nobody", codeUnauth,
		"User alice has no AUTHORIZE permission on <table ks.t> or any of its parents")
	wantExactErr(t, alice, "REVOKE SELECT ON KEYSPACE nope FROM writer", codeUnauth,
		"User alice has no AUTHORIZE permission on <keyspace nope> or any of its parents")
	// With AUTHORIZE but not the permission granted, the permission.
	cqltest.Exec(t, admin, "GRANT AUTHORIZE ON KEYSPACE ks TO alice")
	wantExactErr(t, alice, "GRANT SELECT ON ks.t TO writer", codeUnauth,
		"User alice has no SELECT permission on <table ks.t> or any of its parents")
	// With both, the existence checks, role first.
	cqltest.Exec(t, admin, "GRANT SELECT ON KEYSPACE ks TO alice")
	wantExactErr(t, alice, "GRANT SELECT ON ks.nope TO nobody", codeInvalid, "Role nobody doesn't exist")
	wantExactErr(t, alice, "GRANT SELECT ON ks.nope TO writer", codeInvalid, "Resource <table ks.nope> doesn't exist")
	cqltest.Exec(t, alice, "GRANT SELECT ON ks.t TO alice")
}

// TestAuthAuditLogin checks logging in as Cassandra 4 answers it: the
// password first (PasswordAuthenticator), then LOGIN (ClientState.login).
// CREATE ROLE accepts a password with LOGIN false, as Cassandra does.
func TestAuthAuditLogin(t *testing.T) {
	srv, admin := startAuth(t)
	cqltest.Exec(t, admin,
		"CREATE ROLE quiet WITH PASSWORD = 'pw' AND LOGIN = false",
		"CREATE ROLE nopw WITH LOGIN = true",
	)
	for _, tc := range []struct{ user, password, want string }{
		{"quiet", "pw", "quiet is not permitted to log in"},
		{"quiet", "wrong", "Provided username quiet and/or password are incorrect"},
		{"nopw", "x", "Provided username nopw and/or password are incorrect"},
		{"nobody", "pw", "Provided username nobody and/or password are incorrect"},
	} {
		_, err := loginErr(srv, tc.user, tc.password)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("login %s/%s: %v, want %q", tc.user, tc.password, err, tc.want)
		}
	}
	cqltest.Exec(t, admin, "ALTER ROLE quiet WITH LOGIN = true")
	login(t, srv, "quiet", "pw")
}

// TestAuthAuditAnonymous checks CREATE and ALTER ROLE without an
// authenticator, where Cassandra 4's checks that come before it finds the
// user anonymous answer first: the superuser checks of authorize, then
// CassandraRoleManager's options, which have no PASSWORD without
// PasswordAuthenticator.
func TestAuthAuditAnonymous(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	const anonymous = "You have to be logged in and not anonymous to perform this request"
	for _, tc := range []struct {
		stmt string
		code int
		msg  string
	}{
		{"CREATE ROLE r WITH SUPERUSER = true", codeUnauth, "Only superusers can create a role with superuser status"},
		{"CREATE USER r WITH PASSWORD 'x' SUPERUSER", codeUnauth, "Only superusers can create a role with superuser status"},
		{"ALTER ROLE r WITH SUPERUSER = false", codeUnauth, "Only superusers are allowed to alter superuser status"},
		{"CREATE ROLE r WITH PASSWORD = 'x' AND LOGIN = true", codeInvalid, "org.apache.cassandra.auth.CassandraRoleManager doesn't support PASSWORD"},
		{"CREATE USER r WITH PASSWORD 'x'", codeInvalid, "org.apache.cassandra.auth.CassandraRoleManager doesn't support PASSWORD"},
		{"ALTER USER r WITH PASSWORD 'x'", codeInvalid, "org.apache.cassandra.auth.CassandraRoleManager doesn't support PASSWORD"},
		{"CREATE ROLE ''", codeInvalid, "Role name can't be an empty string"},
		{"CREATE ROLE r WITH LOGIN = true AND SUPERUSER = false", codeUnauth, anonymous},
		{"CREATE USER r", codeUnauth, anonymous},
		{"ALTER ROLE r WITH LOGIN = true", codeUnauth, anonymous},
		{"DROP ROLE r", codeUnauth, anonymous},
	} {
		wantExactErr(t, s, tc.stmt, tc.code, tc.msg)
	}
}
