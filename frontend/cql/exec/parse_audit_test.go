package exec_test

import (
	"errors"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// TestParseAuditActionErrors: errors that Cassandra's grammar actions
// raise (addRecognitionError, or a SyntaxException thrown from an action)
// reach the client as the bare message, with no position and no snippet;
// ANTLR's own errors keep theirs.
func TestParseAuditActionErrors(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		"CREATE TABLE t (k int PRIMARY KEY, a int, b int, l list<int>)",
		"CREATE TABLE c (k int PRIMARY KEY, n counter)",
	)
	for _, c := range []struct{ stmt, msg string }{
		{"UPDATE t SET a = b + 1 WHERE k = 0", "Only expressions of the form X = X +<value> are supported."},
		{"UPDATE t SET a = b - 1 WHERE k = 0", "Only expressions of the form X = X -<value> are supported."},
		{"UPDATE t SET a = b -1 WHERE k = 0", "Only expressions of the form X = X - <value> are supported."},
		{"UPDATE t SET l = [1] + a WHERE k = 0", "Only expressions of the form X = <value> + X are supported."},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy'} AND replication = {}", "Multiple definition for property 'replication'"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'class': 'x'}", "Multiple definition for property class"},
		{"CREATE KEYSPACE k2 WITH replication = {'class': ?}", "Invalid property value: ? for property: 'class' (bind variables are not supported in DDL queries)"},
		{"CREATE TABLE t2 (k int PRIMARY KEY) WITH comment = 'a' AND comment = 'b'", "Multiple definition for property 'comment'"},
		{"CREATE ROLE r WITH password = 'a' AND password = 'b'", "Multiple definition for property 'PASSWORD'"},
		{"CREATE ROLE r WITH login = true AND superuser = false AND login = false", "Multiple definition for property 'LOGIN'"},
		{`CREATE USER "bob"`, "Quoted strings are are not supported for user names and USER is deprecated, please use ROLE"},
		{"DROP KEYSPACE ?", "Bind variables cannot be used for keyspace names"},
		{"SELECT * FROM ks.?", "Bind variables cannot be used for table names"},
		{"DROP ROLE ?", "Bind variables cannot be used for role names"},
		{"CREATE TYPE byte (a int)", "Invalid (reserved) user type name byte"},
		{"CREATE TABLE t3 (k int PRIMARY KEY, v frozen<int>)", "frozen<> is only allowed on collections, tuples, and user-defined types (got int)"},
		{"CREATE ROLE r WITH OPTIONS = {'a': 'b', 'a': 'c'}", "Multiple definition for property a"},
		// ANTLR's errors: positioned, and first when before the action.
		{"DROP ROLE :r", "line 1:10 no viable alternative at input ':' (DROP ROLE [:]r)"},
		{"UPDATE t SET a = b + WHERE k = 0", "line 1:21 no viable alternative at input 'WHERE' (...SET a = b + [WHERE] k...)"},
		{"CREATE KEYSPACE k2 WITH durable_writes = ?", "line 1:41 no viable alternative at input '?' (...KEYSPACE k2 WITH durable_writes = [?])"},
		{"CREATE TABLE t3 (k int PRIMARY KEY) WITH comment = {'a', 'b'}", "line 1:55 mismatched input ',' expecting ':' (...WITH comment = {'a'[,] 'b'...)"},
	} {
		wantExactErr(t, s, c.stmt, codeSyntax, c.msg)
	}
	// PREPARE answers the same.
	err := s.Query("UPDATE t SET a = b + ? WHERE k = ?", 1, 0).Exec()
	var re gocql.RequestError
	if !errors.As(err, &re) || re.Code() != codeSyntax || re.Message() != "Only expressions of the form X = X +<value> are supported." {
		t.Errorf("prepared: %v", err)
	}
	// c = c 5 adds 5, as Cassandra's grammar reads it.
	cqltest.Exec(t, s, "UPDATE c SET n = n + 10 WHERE k = 1", "UPDATE c SET n = n 5 WHERE k = 1")
	var n int64
	if err := s.Query("SELECT n FROM c WHERE k = 1").Scan(&n); err != nil || n != 15 {
		t.Errorf("n = n 5: n is %d (%v), want 15", n, err)
	}
}

// TestParseAuditPreparationChecks: checks that Cassandra makes when it
// prepares a statement (or by throwing InvalidRequestException from the
// parser) are Invalid errors, in Cassandra's order.
func TestParseAuditPreparationChecks(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		"CREATE TABLE t (k int PRIMARY KEY, a int)",
		"CREATE TABLE c (k int PRIMARY KEY, n counter)",
	)
	for _, c := range []struct{ stmt, msg string }{
		// UpdateStatement.ParsedInsert.prepareInternal: counter tables,
		// then the counts, then duplicates.
		{"INSERT INTO t (k, a) VALUES (1)", "Unmatched column names/values"},
		{"INSERT INTO t (k) VALUES (1, 2)", "Unmatched column names/values"},
		{"INSERT INTO t (k, k) VALUES (1)", "Unmatched column names/values"},
		{"INSERT INTO c (k, n) VALUES (1)", "INSERT statements are not allowed on counter tables, use UPDATE instead"},
		// CreateTableStatement.Raw.prepare, before the keyspace or an
		// existing table is looked at.
		{"CREATE TABLE t2 (a int)", "No PRIMARY KEY specifed for table 't2' (exactly one required)"},
		{"CREATE TABLE IF NOT EXISTS t (a int)", "No PRIMARY KEY specifed for table 't' (exactly one required)"},
		{"CREATE TABLE nosuch.t (a int, b int,)", "No PRIMARY KEY specifed for table 'nosuch.t' (exactly one required)"},
		// Thrown from the grammar's actions: the parse ends there.
		{"CREATE TABLE t2 (a int PRIMARY KEY, b int, PRIMARY KEY (b))", "Multiple PRIMARY KEY specified for table 't2' (exactly one required)"},
		{"CREATE TABLE ks.t2 (a int PRIMARY KEY, b int PRIMARY KEY", "Multiple PRIMARY KEY specified for table 'ks.t2' (exactly one required)"},
		{"CREATE TABLE t2 (a int, b int, a text, PRIMARY KEY (a))", "Duplicate column 'a' declaration for table 't2'"},
		{"CREATE TABLE t2 (a int) WITH CLUSTERING ORDER BY (a ASC, a DESC)", "Duplicate column 'a' in CLUSTERING ORDER BY clause for table 't2'"},
		// AlterRoleStatement.validate.
		{"ALTER ROLE r", "ALTER [ROLE|USER] can't be empty"},
	} {
		wantExactErr(t, s, c.stmt, codeInvalid, c.msg)
	}
	// The table is looked up before the values are counted.
	wantErr(t, s, "INSERT INTO nosuch (k, a) VALUES (1)", codeInvalid, "nosuch")
	// Without a keyspace, the keyspace's absence is found first.
	bare := srv.Session(t, "")
	wantExactErr(t, bare, "CREATE TABLE t3 (a int)", codeInvalid, "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
	// The statements parse and prepare as before where they are right.
	cqltest.Exec(t, s, "INSERT INTO t (k, a) VALUES (1, 2)", "CREATE TABLE t2 (a int, b int, PRIMARY KEY (a))")

	_, admin := startAuth(t)
	cqltest.Exec(t, admin, "CREATE ROLE alice WITH LOGIN = true AND PASSWORD = 'pw'")
	wantExactErr(t, admin, "ALTER ROLE alice", codeInvalid, "ALTER [ROLE|USER] can't be empty")
	wantExactErr(t, admin, "ALTER ROLE IF EXISTS alice", codeInvalid, "ALTER [ROLE|USER] can't be empty")
	cqltest.Exec(t, admin, "ALTER ROLE alice WITH LOGIN = false")
}
