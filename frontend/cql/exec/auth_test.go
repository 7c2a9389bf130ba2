package exec_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend/transport"
	"github.com/sedimentdb/sediment/internal/cqltest"
)

// startAuth starts a server with password authentication; its default
// superuser cassandra is logged in on the returned session.
func startAuth(t *testing.T) (*cqltest.Server, *gocql.Session) {
	t.Helper()
	srv := cqltest.Start(t, cqltest.Options{Frontend: func(c *transport.Config) { c.Authenticator = "password" }})
	admin := srv.Session(t, "ks")
	cqltest.Exec(t, admin, "CREATE TABLE ks.t (id int PRIMARY KEY, v text)", "INSERT INTO ks.t (id, v) VALUES (1, 'one')")
	return srv, admin
}

// login connects as user with password; it fails the test if that fails.
func login(t *testing.T, srv *cqltest.Server, user, password string) *gocql.Session {
	t.Helper()
	s, err := loginErr(srv, user, password)
	if err != nil {
		t.Fatalf("login %s/%s: %v", user, password, err)
	}
	t.Cleanup(s.Close)
	return s
}

func loginErr(srv *cqltest.Server, user, password string) (*gocql.Session, error) {
	c := srv.Cluster()
	c.Authenticator = gocql.PasswordAuthenticator{Username: user, Password: password}
	c.ConnectTimeout = 5e9
	return c.CreateSession()
}

// rows runs a query and returns its rows as strings, one per row, columns
// joined by "|".
func authRows(t *testing.T, s *gocql.Session, q string) []string {
	t.Helper()
	iter := s.Query(q).Iter()
	var out []string
	cols := iter.Columns()
	for {
		vals := make([]any, len(cols))
		for i, c := range cols {
			vals[i] = c.TypeInfo.New()
		}
		if !iter.Scan(vals...) {
			break
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(reflect.ValueOf(v).Elem().Interface())
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func wantAuthRows(t *testing.T, s *gocql.Session, q string, want ...string) {
	t.Helper()
	got := authRows(t, s, q)
	if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("%s:\n got %q\nwant %q", q, got, want)
	}
}

func TestAuthLogin(t *testing.T) {
	srv, admin := startAuth(t)
	if _, err := loginErr(srv, "cassandra", "wrong"); err == nil || !strings.Contains(err.Error(), "Provided username cassandra and/or password are incorrect") {
		t.Fatalf("bad password: %v", err)
	}
	if _, err := loginErr(srv, "nobody", "x"); err == nil {
		t.Fatal("unknown user logged in")
	}
	wantAuthRows(t, admin, "LIST ROLES", "cassandra|true|true|map[]")

	cqltest.Exec(t, admin,
		"CREATE ROLE alice WITH PASSWORD = 'pw1' AND LOGIN = true",
		"CREATE ROLE quiet WITH PASSWORD = 'pw' AND OPTIONS = {'team': 'ops'}",
		"CREATE USER IF NOT EXISTS bob WITH PASSWORD 'pw' NOSUPERUSER",
	)
	alice := login(t, srv, "alice", "pw1")
	login(t, srv, "bob", "pw")
	if _, err := loginErr(srv, "quiet", "pw"); err == nil {
		t.Fatal("a role without LOGIN logged in")
	}
	wantAuthRows(t, admin, "LIST ROLES",
		"alice|false|true|map[]", "bob|false|true|map[]", "cassandra|true|true|map[]", "quiet|false|false|map[team:ops]")
	wantAuthRows(t, admin, "LIST USERS", "alice|false", "bob|false", "cassandra|true")

	// A role changes its own password, and nothing else about itself.
	cqltest.Exec(t, alice, "ALTER ROLE alice WITH PASSWORD = 'pw2'")
	if _, err := loginErr(srv, "alice", "pw1"); err == nil {
		t.Fatal("old password still accepted")
	}
	login(t, srv, "alice", "pw2")
	wantErr(t, alice, "ALTER ROLE alice WITH LOGIN = false", codeUnauth, "You aren't allowed to alter LOGIN")
	wantErr(t, alice, "ALTER ROLE alice WITH SUPERUSER = true", codeUnauth, "You aren't allowed to alter your own superuser status or that of a role granted to you")
	wantErr(t, alice, "ALTER ROLE bob WITH PASSWORD = 'x'", codeUnauth, "User alice does not have sufficient privileges to perform the requested operation")
	wantErr(t, alice, "CREATE ROLE eve", codeUnauth, "User alice does not have sufficient privileges to perform the requested operation")
	wantErr(t, alice, "LIST ALL PERMISSIONS", codeUnauth, "You are not authorized to view everyone's permissions")
	wantErr(t, alice, "LIST ROLES OF bob", codeUnauth, "You are not authorized to view roles granted to bob")
	wantAuthRows(t, alice, "LIST ROLES", "alice|false|true|map[]")

	// The superuser turns LOGIN on and off.
	cqltest.Exec(t, admin, "ALTER ROLE quiet WITH LOGIN = true")
	login(t, srv, "quiet", "pw")
	cqltest.Exec(t, admin, "ALTER USER bob WITH PASSWORD 'pw3' SUPERUSER")
	wantAuthRows(t, admin, "LIST USERS", "alice|false", "bob|true", "cassandra|true", "quiet|false")

	wantErr(t, admin, "CREATE ROLE alice", codeInvalid, "alice already exists")
	cqltest.Exec(t, admin, "CREATE ROLE IF NOT EXISTS alice")
	wantErr(t, admin, "ALTER ROLE nobody WITH LOGIN = true", codeInvalid, "nobody doesn't exist")
	wantErr(t, admin, "ALTER ROLE alice WITH OPTIONS = {'a': 1}", codeInvalid, "OPTIONS")
	wantErr(t, admin, "DROP ROLE nobody", codeInvalid, "nobody doesn't exist")
	cqltest.Exec(t, admin, "DROP ROLE IF EXISTS nobody")
	wantErr(t, admin, "DROP ROLE cassandra", codeInvalid, "Cannot DROP primary role for current login")
	wantErr(t, admin, "CREATE ROLE ''", codeInvalid, "Role name can't be an empty string")
}

func TestAuthPermissions(t *testing.T) {
	srv, admin := startAuth(t)
	cqltest.Exec(t, admin,
		"CREATE ROLE alice WITH PASSWORD = 'pw' AND LOGIN = true",
		"CREATE ROLE writer",
	)
	alice := login(t, srv, "alice", "pw")
	// Drivers read the system keyspaces without any grant.
	if n := len(authRows(t, alice, "SELECT keyspace_name FROM system_schema.keyspaces")); n == 0 {
		t.Fatal("no keyspaces in system_schema")
	}
	wantErr(t, alice, "SELECT * FROM ks.t", codeUnauth, "User alice has no SELECT permission on <table ks.t> or any of its parents")

	cqltest.Exec(t, admin, "GRANT SELECT ON ks.t TO alice")
	wantAuthRows(t, alice, "SELECT id, v FROM ks.t", "1|one")
	wantErr(t, alice, "INSERT INTO ks.t (id, v) VALUES (2, 'two')", codeUnauth, "User alice has no MODIFY permission on <table ks.t> or any of its parents")
	wantErr(t, alice, "BEGIN BATCH INSERT INTO ks.t (id, v) VALUES (2, 'two') APPLY BATCH", codeUnauth, "no MODIFY permission")
	wantErr(t, alice, "TRUNCATE ks.t", codeUnauth, "no MODIFY permission")
	wantErr(t, alice, "DROP TABLE ks.t", codeUnauth, "User alice has no DROP permission on <table ks.t> or any of its parents")
	wantErr(t, alice, "CREATE TABLE ks.u (id int PRIMARY KEY)", codeUnauth, "User alice has no CREATE permission on <keyspace ks> or any of its parents")

	// Permissions come through granted roles, and go with them.
	cqltest.Exec(t, admin, "GRANT MODIFY ON KEYSPACE ks TO writer", "GRANT writer TO alice")
	cqltest.Exec(t, alice, "INSERT INTO ks.t (id, v) VALUES (2, 'two')")
	b := alice.NewBatch(gocql.LoggedBatch)
	b.Query("INSERT INTO ks.t (id, v) VALUES (?, ?)", 3, "three")
	if err := alice.ExecuteBatch(b); err != nil {
		t.Fatal(err)
	}
	// A conditional write needs SELECT as well: alice holds both now.
	cqltest.Exec(t, alice, "UPDATE ks.t SET v = 'x' WHERE id = 9 IF EXISTS")
	wantAuthRows(t, alice, "LIST ROLES", "alice|false|true|map[]", "writer|false|false|map[]")
	wantAuthRows(t, admin, "LIST ROLES OF alice NORECURSIVE", "alice|false|true|map[]", "writer|false|false|map[]")
	wantAuthRows(t, alice, "LIST ALL PERMISSIONS OF alice",
		"alice|alice|<table ks.t>|SELECT", "writer|writer|<keyspace ks>|MODIFY")
	// cassandra created ks and ks.t, and so holds every permission on them.
	var ksAll, tAll []string
	for _, p := range []string{"CREATE", "ALTER", "DROP", "SELECT", "MODIFY", "AUTHORIZE"} {
		ksAll = append(ksAll, "cassandra|cassandra|<keyspace ks>|"+p)
		if p != "CREATE" {
			tAll = append(tAll, "cassandra|cassandra|<table ks.t>|"+p)
		}
	}
	wantAuthRows(t, admin, "LIST ALL PERMISSIONS ON ks.t", append(append(append([]string{"alice|alice|<table ks.t>|SELECT"}, ksAll...), tAll...),
		"writer|writer|<keyspace ks>|MODIFY")...)
	wantAuthRows(t, admin, "LIST ALL PERMISSIONS ON ks.t NORECURSIVE", append([]string{"alice|alice|<table ks.t>|SELECT"}, tAll...)...)
	wantAuthRows(t, admin, "LIST MODIFY OF alice", "writer|writer|<keyspace ks>|MODIFY")

	wantErr(t, admin, "GRANT writer TO alice", codeInvalid, "alice is a member of writer")
	wantErr(t, admin, "GRANT alice TO writer", codeInvalid, "alice is a member of writer")
	wantErr(t, admin, "GRANT writer TO nobody", codeInvalid, "nobody doesn't exist")
	wantErr(t, admin, "GRANT SELECT ON ks.t TO nobody", codeInvalid, "Role nobody doesn't exist")
	wantErr(t, admin, "GRANT SELECT ON ks.nope TO alice", codeInvalid, "Resource <table ks.nope> doesn't exist")
	wantErr(t, admin, "GRANT DESCRIBE ON KEYSPACE ks TO alice", codeSyntax, "Resource type DataResource does not support any of the requested permissions")
	wantErr(t, alice, "GRANT SELECT ON ks.t TO writer", codeUnauth, "User alice has no AUTHORIZE permission on <table ks.t> or any of its parents")

	cqltest.Exec(t, admin, "REVOKE writer FROM alice")
	wantErr(t, alice, "INSERT INTO ks.t (id, v) VALUES (4, 'four')", codeUnauth, "no MODIFY permission")
	wantErr(t, admin, "REVOKE writer FROM alice", codeInvalid, "alice is not a member of writer")
	cqltest.Exec(t, admin, "REVOKE SELECT ON ks.t FROM alice")
	wantErr(t, alice, "SELECT * FROM ks.t", codeUnauth, "no SELECT permission")
	wantAuthRows(t, alice, "LIST ALL PERMISSIONS OF alice")

	// The creator of a keyspace or table gets every permission on it;
	// dropping it takes them away.
	cqltest.Exec(t, admin, "GRANT CREATE ON ALL KEYSPACES TO alice")
	cqltest.Exec(t, alice,
		"CREATE KEYSPACE ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks2.t (id int PRIMARY KEY, v text)",
		"INSERT INTO ks2.t (id, v) VALUES (1, 'a')",
		// Creating nothing grants nothing.
		"CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
	)
	wantAuthRows(t, alice, "SELECT v FROM ks2.t WHERE id = 1", "a")
	wantAuthRows(t, alice, "LIST ALL PERMISSIONS OF alice",
		"alice|alice|<all keyspaces>|CREATE",
		"alice|alice|<keyspace ks2>|CREATE", "alice|alice|<keyspace ks2>|ALTER", "alice|alice|<keyspace ks2>|DROP",
		"alice|alice|<keyspace ks2>|SELECT", "alice|alice|<keyspace ks2>|MODIFY", "alice|alice|<keyspace ks2>|AUTHORIZE",
		"alice|alice|<table ks2.t>|ALTER", "alice|alice|<table ks2.t>|DROP", "alice|alice|<table ks2.t>|SELECT",
		"alice|alice|<table ks2.t>|MODIFY", "alice|alice|<table ks2.t>|AUTHORIZE",
	)
	// With AUTHORIZE on it, alice hands out what she holds.
	cqltest.Exec(t, alice, "GRANT SELECT ON KEYSPACE ks2 TO writer")
	cqltest.Exec(t, alice, "DROP KEYSPACE ks2")
	wantAuthRows(t, alice, "LIST ALL PERMISSIONS OF alice", "alice|alice|<all keyspaces>|CREATE")
	wantAuthRows(t, admin, "LIST ALL PERMISSIONS OF writer", "writer|writer|<keyspace ks>|MODIFY")

	// Dropping a role drops its grants to others and the permissions on it.
	cqltest.Exec(t, admin, "GRANT writer TO alice", "GRANT ALTER ON ROLE writer TO alice", "DROP ROLE writer")
	wantAuthRows(t, admin, "LIST ROLES", "alice|false|true|map[]", "cassandra|true|true|map[]")
	wantAuthRows(t, admin, "LIST ALL PERMISSIONS OF alice", "alice|alice|<all keyspaces>|CREATE")
	if r := srv.View.Role("alice"); r == nil || len(r.MemberOf) != 0 {
		t.Fatalf("alice after DROP ROLE writer: %+v", r)
	}
	wantErr(t, alice, "DROP ROLE alice", codeUnauth, "User alice does not have sufficient privileges to perform the requested operation")
}

// TestAuthPrepared checks that a prepared statement's permission is
// checked at every execution, not once at PREPARE.
func TestAuthPrepared(t *testing.T) {
	srv, admin := startAuth(t)
	cqltest.Exec(t, admin, "CREATE ROLE alice WITH PASSWORD = 'pw' AND LOGIN = true", "GRANT SELECT ON KEYSPACE ks TO alice")
	alice := login(t, srv, "alice", "pw")
	var v string
	if err := alice.Query("SELECT v FROM ks.t WHERE id = ?", 1).Scan(&v); err != nil || v != "one" {
		t.Fatalf("select: %q, %v", v, err)
	}
	cqltest.Exec(t, admin, "REVOKE SELECT ON KEYSPACE ks FROM alice")
	err := alice.Query("SELECT v FROM ks.t WHERE id = ?", 1).Scan(&v)
	var re gocql.RequestError
	if !errors.As(err, &re) || re.Code() != codeUnauth {
		t.Fatalf("after REVOKE: %v", err)
	}
}

// TestAuthNone checks the answers without an authenticator: everything
// runs, and role statements are refused to the anonymous user as
// Cassandra refuses them.
func TestAuthNone(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t (id) VALUES (1)")
	for _, q := range []string{
		"CREATE ROLE alice", "LIST ROLES", "LIST USERS", "GRANT SELECT ON ks.t TO alice",
		"LIST ALL PERMISSIONS", "DROP ROLE alice", "ALTER ROLE alice WITH LOGIN = true", "GRANT a TO b",
	} {
		wantErr(t, s, q, codeUnauth, "You have to be logged in and not anonymous to perform this request")
	}
}
