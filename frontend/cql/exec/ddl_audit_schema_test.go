package exec_test

import (
	"maps"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// The audit of types, keyspaces and identifiers against Cassandra 4.0/4.1
// (CreateTypeStatement, AlterTypeStatement, DropTypeStatement,
// ReplicationParams, ClientState).

func TestAuditTypes(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		"CREATE TYPE u (x int)",
		"CREATE TYPE v (a frozen<u>)",
		"CREATE TYPE w (b list<frozen<u>>)",
		"CREATE TABLE t1 (k int PRIMARY KEY, a u)",
		"CREATE TABLE t2 (k int PRIMARY KEY, a frozen<v>)",
	)
	for stmt, want := range map[string]struct {
		code int
		msg  string
	}{
		"CREATE TYPE d (q int, q text)": {codeInvalid, "Duplicate field name 'q' in type 'd'"},
		// A field's type as written: no counter, no UDT unless frozen
		// (checked before the type is resolved, so a self reference or an
		// unknown name gets this message too).
		"CREATE TYPE d (q u)":               {codeInvalid, "A user type cannot contain non-frozen UDTs"},
		"CREATE TYPE d (q int, me d)":       {codeInvalid, "A user type cannot contain non-frozen UDTs"},
		"CREATE TYPE d (q frozen<d>)":       {codeInvalid, "Unknown type ks.d"},
		"CREATE TYPE d (q list<u>)":         {codeInvalid, "Non-frozen UDTs are not allowed inside collections: list<u>"},
		"CREATE TYPE d (q list<counter>)":   {codeInvalid, "Counters are not allowed inside collections: list<counter>"},
		"CREATE TYPE d (q frozen<other.u>)": {codeInvalid, "Statement on keyspace ks cannot refer to a user type in keyspace other; user types can only be used in the keyspace they are defined in"},
		"ALTER TYPE u ADD y u":              {codeInvalid, "A user type cannot contain non-frozen UDTs"},
		"ALTER TYPE u ADD x u":              {codeInvalid, "A user type cannot contain non-frozen UDTs"}, // before the name check, as in 4.1
		"ALTER TYPE u ADD x counter":        {codeInvalid, "A user type cannot contain counters"},
		"ALTER TYPE u ADD x int":            {codeInvalid, "Cannot add field x to type ks.u: a field with name x already exists"},
		// Dropping a type in use names all the types using it, else all
		// the tables, by name.
		"DROP TYPE u": {codeInvalid, "Cannot drop user type 'ks.u' as it is still used by user types v, w"},
	} {
		wantErr(t, s, stmt, want.code, want.msg)
	}
	cqltest.Exec(t, s, "DROP TYPE w")
	wantErr(t, s, "DROP TYPE u", codeInvalid, "Cannot drop user type 'ks.u' as it is still used by user types v")
	cqltest.Exec(t, s, "DROP TABLE t2", "DROP TYPE v")
	cqltest.Exec(t, s, "CREATE TABLE t3 (k int PRIMARY KEY, a map<int, frozen<u>>)")
	wantErr(t, s, "DROP TYPE u", codeInvalid, "Cannot drop user type 'ks.u' as it is still used by tables t1, t3")
}

func TestAuditKeyspaces(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "")
	for stmt, want := range map[string]struct {
		code int
		msg  string
	}{
		// KeyspaceMetadata.validate: the name last, as a
		// ConfigurationException.
		`CREATE KEYSPACE "a-b" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`:                      {codeConfig, `Keyspace name must not be empty, more than 48 characters long, or contain non-alphanumeric-underscore characters (got "a-b")`},
		`CREATE KEYSPACE "a-b" WITH replication = {'class': 'Nope'}`:                                                         {codeConfig, "Unable to find replication strategy class"},
		"CREATE KEYSPACE k WITH replication = {'class': 'Nope'}":                                                             {codeConfig, "Unable to find replication strategy class 'org.apache.cassandra.locator.Nope'"},
		"CREATE KEYSPACE k WITH replication = {'class': 'LocalStrategy'}":                                                    {codeConfig, "Unable to use given strategy class: LocalStrategy is reserved for internal use."},
		"CREATE KEYSPACE k WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 'x'}":                              {codeConfig, `For input string: "x"`},
		"CREATE KEYSPACE k WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': -1}":                               {codeConfig, "Replication factor must be non-negative, found -1"},
		"CREATE KEYSPACE k WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 'x'}":               {codeConfig, `For input string: "x"`},
		"CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '3/1'}":                      {codeConfig, "Transient replication is not enabled on this node"},
		"CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '3/'}":                       {codeConfig, "Replication factor format is <replicas> or <replicas>/<transient>"},
		"CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND durable_writes = 'x'": {codeSyntax, "Invalid boolean value x for 'durable_writes'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'."},
		// Local system keyspaces: ClientState's words, with the period.
		"ALTER KEYSPACE system WITH durable_writes = false": {codeUnauth, "system keyspace is not user-modifiable."},
		"DROP KEYSPACE system_schema":                       {codeUnauth, "system_schema keyspace is not user-modifiable."},
		// Replicated system keyspaces exist; nobody may drop them.
		"DROP KEYSPACE system_auth":   {codeUnauth, "Cannot DROP <keyspace system_auth>"},
		"DROP KEYSPACE system_traces": {codeUnauth, "Cannot DROP <keyspace system_traces>"},
		"CREATE KEYSPACE system_distributed WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}": {codeExists, `Cannot add existing keyspace "system_distributed"`},
		"ALTER KEYSPACE system_auth WITH replication = {'class': 'Nope'}":                                            {codeConfig, "Unable to find replication strategy class 'org.apache.cassandra.locator.Nope'"},
	} {
		wantErr(t, s, stmt, want.code, want.msg)
	}
	// Operators set the replication of the replicated system keyspaces
	// (setup scripts do); Sediment accepts it and changes nothing.
	cqltest.Exec(t, s,
		"ALTER KEYSPACE system_auth WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3}",
		"ALTER KEYSPACE system_traces WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"CREATE KEYSPACE IF NOT EXISTS system_distributed WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
	)

	// NetworkTopologyStrategy's replication_factor expands to the data
	// centers, factors of 0 are left out, and an ALTER from SimpleStrategy
	// keeps the factor.
	cqltest.Exec(t, s,
		"CREATE KEYSPACE n1 WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3}",
		"CREATE KEYSPACE n2 WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 2, 'datacenter1': 1, 'dc2': 0}",
		"CREATE KEYSPACE n3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
		"ALTER KEYSPACE n3 WITH replication = {'class': 'NetworkTopologyStrategy'}",
		"CREATE KEYSPACE n4 WITH replication = {'class': 'NetworkTopologyStrategy', 'dc2': 2}",
		"ALTER KEYSPACE n4 WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3}",
	)
	const nts = "org.apache.cassandra.locator.NetworkTopologyStrategy"
	for ks, want := range map[string]map[string]string{
		"n1": {"class": nts, "datacenter1": "3"},
		"n2": {"class": nts, "datacenter1": "1"},
		"n3": {"class": nts, "datacenter1": "2"},
		"n4": {"class": nts, "datacenter1": "3", "dc2": "2"},
	} {
		var got map[string]string
		if err := s.Query("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?", ks).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("replication of %s: %v, want %v", ks, got, want)
		}
	}
}

// auditIdentifiersPy reads quoted names through the Python driver's
// metadata and export_as_string.
const auditIdentifiersPy = `
import sys
from cassandra.cluster import Cluster

from cassandra import InvalidRequest

cluster = Cluster([sys.argv[1]], port=int(sys.argv[2]), connect_timeout=20, control_connection_timeout=20)
session = cluster.connect()
session.execute('USE "Mixed_Case"')
assert session.keyspace == "Mixed_Case", session.keyspace
for name in ['"a b"', "a" * 49, "mixed_case"]:
    try:
        session.execute("USE " + name)
        raise AssertionError("USE %s succeeded" % name)
    except InvalidRequest as e:
        want = "Keyspace '%s' does not exist" % name.strip('"')
        assert want in str(e), (want, str(e))
ks = cluster.metadata.keyspaces["Mixed_Case"]
table = ks.tables["EventsLog"]
assert list(table.columns) == ["Key Col", "UPPER", "lower"], list(table.columns)
assert [c.name for c in table.partition_key] == ["Key Col"]
assert [c.name for c in table.clustering_key] == ["UPPER"]
udt = ks.user_types["Point"]
assert udt.field_names == ["X Coord", "y"], udt.field_names
cql = ks.export_as_string()
for want in ['CREATE KEYSPACE "Mixed_Case"', 'CREATE TYPE "Mixed_Case"."Point"', '"X Coord" int',
             'CREATE TABLE "Mixed_Case"."EventsLog"', '"Key Col" text', '"UPPER" int', 'lower frozen<"Point">',
             'PRIMARY KEY ("Key Col", "UPPER")']:
    assert want in cql, (want, cql)
cluster.shutdown()
print("OK")
`

func TestAuditQuotedIdentifiers(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "")
	cqltest.Exec(t, s,
		`CREATE KEYSPACE "Mixed_Case" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TYPE "Mixed_Case"."Point" ("X Coord" int, y int)`,
		`CREATE TABLE "Mixed_Case"."EventsLog" ("Key Col" text, "UPPER" int, lower frozen<"Point">, PRIMARY KEY ("Key Col", "UPPER"))`,
	)
	var names []string
	iter := s.Query(`SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'Mixed_Case' AND table_name = 'EventsLog'`).Iter()
	var n string
	for iter.Scan(&n) {
		names = append(names, n)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, "|") != "Key Col|UPPER|lower" {
		t.Errorf("system_schema.columns names: %q", names)
	}
	var fields []string
	if err := s.Query(`SELECT field_names FROM system_schema.types WHERE keyspace_name = 'Mixed_Case' AND type_name = 'Point'`).Scan(&fields); err != nil {
		t.Fatal(err)
	}
	if strings.Join(fields, "|") != "X Coord|y" {
		t.Errorf("system_schema.types field names: %q", fields)
	}
	// Unquoted names fold to lower case and miss the quoted ones.
	wantErr(t, s, `INSERT INTO Mixed_Case.EventsLog ("Key Col", "UPPER") VALUES ('a', 1)`, codeInvalid, "Keyspace mixed_case does not exist")

	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import cassandra").CombinedOutput(); err != nil {
		t.Fatalf("the Python driver is missing (make tools installs it: apt-get install -y python3-cassandra): %v\n%s", err, out)
	}
	host, port, _ := net.SplitHostPort(srv.Addr)
	out, err := exec.Command(python, "-c", auditIdentifiersPy, host, port).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "OK") {
		t.Fatalf("Python driver metadata: %v\n%s", err, out)
	}
}
