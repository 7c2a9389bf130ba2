package exec_test

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
	"github.com/sedimentdb/sediment/internal/token"
)

// tokenOf is the Murmur3 token of a text partition key.
func tokenOf(s string) int64 { return token.Murmur3([]byte(s)) }

// byToken sorts "ks|..." rows as Cassandra scans a table keyed by
// keyspace_name: by the token of the keyspace, then by the rest (the
// clustering columns, text compared as bytes).
func byToken(rows []string) []string {
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b string) int {
		fa, fb := strings.Split(a, "|"), strings.Split(b, "|")
		if c := cmp.Compare(tokenOf(fa[0]), tokenOf(fb[0])); c != 0 {
			return c
		}
		return slices.Compare(fa, fb)
	})
	return rows
}

// systemOrderEnv creates keyspaces whose names sort differently by token
// and by name, with tables and types in a few of them.
func systemOrderEnv(t *testing.T) (*cqltest.Server, *gocql.Session, []string) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "")
	names := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"}
	for _, ks := range names {
		cqltest.Exec(t, s, fmt.Sprintf(`CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`, ks))
	}
	cqltest.Exec(t, s,
		`CREATE TABLE alpha.t2 (k int PRIMARY KEY, b text, a int)`,
		`CREATE TABLE alpha.t1 (k int, c int, v text, PRIMARY KEY (k, c))`,
		`CREATE TABLE zeta.z (k text PRIMARY KEY, x int)`,
		`CREATE TABLE eta.e (k int PRIMARY KEY)`,
		`CREATE TYPE gamma.u2 (f int)`,
		`CREATE TYPE gamma.u1 (f int)`,
		`CREATE TYPE beta.b (f text)`,
	)
	all := append([]string{"system", "system_schema"}, names...)
	if slices.Equal(byToken(all), slices.Sorted(slices.Values(all))) {
		t.Fatal("the keyspaces sort alike by name and by token: the test would prove nothing")
	}
	return srv, s, all
}

func TestSystemTablesInTokenOrder(t *testing.T) {
	_, s, all := systemOrderEnv(t)
	want := byToken(all)
	for _, page := range []int{0, 1, 2, 3, 100} {
		t.Run(fmt.Sprint("page=", page), func(t *testing.T) {
			wantRows(t, rowsOf(t, s, page, `SELECT keyspace_name FROM system_schema.keyspaces`), want...)

			tables := rowsOf(t, s, page, `SELECT keyspace_name, table_name FROM system_schema.tables`)
			if len(tables) < 10 || !slices.Contains(tables, "alpha|t1") || !slices.Contains(tables, "system|local") {
				t.Fatalf("system_schema.tables: %q", tables)
			}
			wantRows(t, tables, byToken(tables)...)
			wantRows(t, rowsOf(t, s, page, `SELECT keyspace_name, table_name FROM system_schema.tables WHERE keyspace_name = 'alpha'`), "alpha|t1", "alpha|t2")

			cols := rowsOf(t, s, page, `SELECT keyspace_name, table_name, column_name FROM system_schema.columns`)
			wantRows(t, cols, byToken(cols)...)
			if !slices.Contains(cols, "zeta|z|x") {
				t.Fatalf("system_schema.columns: %q", cols)
			}

			types := rowsOf(t, s, page, `SELECT keyspace_name, type_name FROM system_schema.types`)
			wantRows(t, types, byToken([]string{"beta|b", "gamma|u1", "gamma|u2"})...)

			// LIMIT holds across pages.
			wantRows(t, rowsOf(t, s, page, `SELECT keyspace_name FROM system_schema.keyspaces LIMIT 4`), want[:4]...)
			wantRows(t, rowsOf(t, s, page, `SELECT count(*) FROM system_schema.keyspaces`), fmt.Sprint(len(all)))
		})
	}
	// The single-row tables and those with no rows.
	wantRows(t, rowsOf(t, s, 1, `SELECT key FROM system.local`), "local")
	wantRows(t, rowsOf(t, s, 1, `SELECT keyspace_name FROM system_schema.functions`))
}

// TestSystemTablesPageByKey: a page of a system table ends with a paging
// state, and the next page resumes after the last row sent, by its key,
// even when the schema changed in between.
func TestSystemTablesPageByKey(t *testing.T) {
	_, s, all := systemOrderEnv(t)
	const q = `SELECT keyspace_name FROM system_schema.keyspaces`
	page := func(state []byte) ([]string, []byte) {
		t.Helper()
		it := s.Query(q).PageSize(3).PageState(state).Iter()
		var out []string
		var ks string
		for n := it.NumRows(); n > 0 && it.Scan(&ks); n-- {
			out = append(out, ks)
		}
		next := it.PageState()
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return out, next
	}
	want := byToken(all)
	first, state := page(nil)
	if !slices.Equal(first, want[:3]) || len(state) == 0 {
		t.Fatalf("first page %q (state %x), want %q and a paging state", first, state, want[:3])
	}
	// A keyspace created and one dropped between pages.
	cqltest.Exec(t, s,
		`CREATE KEYSPACE late WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`DROP KEYSPACE `+want[4],
	)
	var rest []string
	for len(state) > 0 {
		var rows []string
		rows, state = page(state)
		rest = append(rest, rows...)
	}
	now := byToken(append(slices.DeleteFunc(slices.Clone(all), func(ks string) bool { return ks == want[4] }), "late"))
	var after []string
	for _, ks := range now {
		if tokenOf(ks) > tokenOf(want[2]) {
			after = append(after, ks)
		}
	}
	wantRows(t, rest, after...)
	// A state that is not Sediment's is refused.
	err := s.Query(q).PageSize(3).PageState([]byte{9, 9, 9}).Exec()
	if err == nil || !strings.Contains(err.Error(), "Invalid paging state") {
		t.Errorf("a foreign paging state: %v", err)
	}
}

func TestSystemTablesTokenRanges(t *testing.T) {
	_, s, all := systemOrderEnv(t)
	want := byToken(all)
	// Each keyspace's token, as token(keyspace_name) selects it... which
	// the system tables answer with columns only: compute it here.
	toks := make([]int64, len(want))
	for i, ks := range want {
		toks[i] = tokenOf(ks)
	}
	for _, page := range []int{0, 1, 2, 3} {
		wantRows(t, rowsOf(t, s, page, `SELECT keyspace_name FROM system_schema.keyspaces WHERE token(keyspace_name) > ?`, toks[2]), want[3:]...)
		wantRows(t, rowsOf(t, s, page, `SELECT keyspace_name FROM system_schema.keyspaces WHERE token(keyspace_name) >= ? AND token(keyspace_name) < ?`, toks[1], toks[4]), want[1:4]...)
		wantRows(t, rowsOf(t, s, page, `SELECT keyspace_name FROM system_schema.keyspaces WHERE token(keyspace_name) <= token(?)`, want[2]), want[:3]...)
		wantRows(t, rowsOf(t, s, page, `SELECT keyspace_name FROM system_schema.keyspaces WHERE token(keyspace_name) = token('`+want[5]+`')`), want[5])
		tables := rowsOf(t, s, page, `SELECT keyspace_name, table_name FROM system_schema.tables WHERE token(keyspace_name) > token('system')`)
		for _, r := range tables {
			if ks, _, _ := strings.Cut(r, "|"); tokenOf(ks) <= tokenOf("system") {
				t.Fatalf("token range of system_schema.tables returned %q", r)
			}
		}
		wantRows(t, tables, byToken(tables)...)
	}
	for q, msg := range map[string]string{
		`SELECT * FROM system_schema.keyspaces WHERE token(keyspace_name) > 0 AND keyspace_name = 'alpha'`:  "Columns token(keyspace_name) cannot be restricted by both a normal relation and a token relation",
		`SELECT * FROM system_schema.tables WHERE token(table_name) > 0`:                                    "The token function arguments must be in the partition key order: token(keyspace_name)",
		`SELECT * FROM system_schema.tables WHERE token(keyspace_name, table_name) > 0`:                     "The token() function must be applied to all partition key components or none of them",
		`SELECT * FROM system_schema.keyspaces WHERE token(keyspace_name) > 0 AND token(keyspace_name) > 1`: "More than one restriction was found for the start bound on token(keyspace_name)",
	} {
		wantErr(t, s, q, codeInvalid, msg)
	}
}

// TestSystemTablesPythonPaging pages system_schema.keyspaces through the
// DataStax Python driver with fetch sizes 1 to 3, and reads the schema
// from cluster.metadata, which the driver builds from those tables.
func TestSystemTablesPythonPaging(t *testing.T) {
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import cassandra").CombinedOutput(); err != nil {
		t.Fatalf("the Python driver is missing (make tools installs it: apt-get install -y python3-cassandra): %v\n%s", err, out)
	}
	srv, _, all := systemOrderEnv(t)
	host, port, _ := net.SplitHostPort(srv.Addr)
	const script = `
import sys
from cassandra.cluster import Cluster
from cassandra.query import SimpleStatement
cluster = Cluster([sys.argv[1]], port=int(sys.argv[2]), connect_timeout=20, control_connection_timeout=20)
session = cluster.connect()
for size in (1, 2, 3, 1000):
    rows = session.execute(SimpleStatement("SELECT keyspace_name FROM system_schema.keyspaces", fetch_size=size))
    print(size, " ".join(r.keyspace_name for r in rows))
m = cluster.metadata
print("metadata", " ".join(sorted(m.keyspaces)), " ".join(sorted(m.keyspaces["alpha"].tables)),
      " ".join(sorted(m.keyspaces["gamma"].user_types)))
cluster.shutdown()
`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-c", script, host, port).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := strings.Join(byToken(all), " ")
	var got []string
	for _, l := range lines {
		if size, rest, ok := strings.Cut(l, " "); ok && size != "metadata" {
			got = append(got, size)
			if rest != want {
				t.Errorf("fetch_size %s: keyspaces %q, want %q", size, rest, want)
			}
		}
	}
	if !slices.Equal(got, []string{"1", "2", "3", "1000"}) {
		t.Fatalf("python printed %q", out)
	}
	last := lines[len(lines)-1]
	// The driver also reads system_virtual_schema, as against Cassandra 4.
	ks := slices.Sorted(slices.Values(append(all, "system_virtual_schema")))
	if wantMeta := "metadata " + strings.Join(ks, " ") + " t1 t2 u1 u2"; last != wantMeta {
		t.Errorf("cluster.metadata: %q, want %q", last, wantMeta)
	}
}
