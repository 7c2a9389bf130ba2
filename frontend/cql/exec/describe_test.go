package exec_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// describeSchema is a schema that exercises what DESCRIBE writes: nested
// types, quoted names, every kind of column, clustering order and stored
// table options.
var describeSchema = []string{
	`CREATE KEYSPACE "Desc" WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': '2'} AND durable_writes = false`,
	`CREATE TYPE "Desc".point (x double, y double)`,
	`CREATE TYPE "Desc".zone (name text, "Corners" list<frozen<point>>)`,
	`CREATE TYPE "Desc".alpha (z frozen<zone>, at timestamp)`,
	`CREATE TABLE "Desc".kv (k text PRIMARY KEY, v blob)`,
	`CREATE TABLE "Desc"."Events" (
		tenant int, day date, at timeuuid, seq int,
		"Kind" text, tags set<text>, attrs map<text, int>, hist frozen<list<int>>,
		owner text static, place frozen<zone>, loose alpha, pair tuple<int, text>,
		PRIMARY KEY ((tenant, day), at, seq))
		WITH CLUSTERING ORDER BY (at DESC, seq ASC)
		AND comment = 'it''s an event'
		AND default_time_to_live = 3600
		AND gc_grace_seconds = 7200
		AND compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '160'}
		AND compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': '64'}`,
	`CREATE KEYSPACE plain WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
	`CREATE TABLE plain.t (a int, b int, c int, PRIMARY KEY (a, b))`,
}

const defaultTableOptions = `additional_write_policy = '99p'
    AND bloom_filter_fp_chance = 0.01
    AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}
    AND cdc = false
    AND comment = ''
    AND compaction = {'class': 'org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy', 'max_threshold': '32', 'min_threshold': '4'}
    AND compression = {'chunk_length_in_kb': '16', 'class': 'org.apache.cassandra.io.compress.LZ4Compressor'}
    AND crc_check_chance = 1.0
    AND default_time_to_live = 0
    AND extensions = {}
    AND gc_grace_seconds = 864000
    AND max_index_interval = 2048
    AND memtable_flush_period_in_ms = 0
    AND min_index_interval = 128
    AND read_repair = 'BLOCKING'
    AND speculative_retry = '99p';`

// The CREATE statements Cassandra 4.0 writes for describeSchema.
var (
	wantDescKeyspace = `CREATE KEYSPACE "Desc" WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': '2'}  AND durable_writes = false;`
	wantPoint        = "CREATE TYPE \"Desc\".point (\n    x double,\n    y double\n);"
	wantZone         = "CREATE TYPE \"Desc\".zone (\n    name text,\n    \"Corners\" frozen<list<frozen<point>>>\n);"
	wantAlpha        = "CREATE TYPE \"Desc\".alpha (\n    z frozen<zone>,\n    at timestamp\n);"
	wantKV           = "CREATE TABLE \"Desc\".kv (\n    k text PRIMARY KEY,\n    v blob\n) WITH " + defaultTableOptions
	wantEvents       = `CREATE TABLE "Desc"."Events" (
    tenant int,
    day date,
    at timeuuid,
    seq int,
    owner text static,
    "Kind" text,
    hist frozen<list<int>>,
    pair frozen<tuple<int, text>>,
    place frozen<zone>,
    attrs map<text, int>,
    loose alpha,
    tags set<text>,
    PRIMARY KEY ((tenant, day), at, seq)
) WITH CLUSTERING ORDER BY (at DESC, seq ASC)
    AND additional_write_policy = '99p'
    AND bloom_filter_fp_chance = 0.01
    AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}
    AND cdc = false
    AND comment = 'it''s an event'
    AND compaction = {'class': 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy', 'sstable_size_in_mb': '160'}
    AND compression = {'chunk_length_in_kb': '64', 'class': 'org.apache.cassandra.io.compress.ZstdCompressor'}
    AND crc_check_chance = 1.0
    AND default_time_to_live = 3600
    AND extensions = {}
    AND gc_grace_seconds = 7200
    AND max_index_interval = 2048
    AND memtable_flush_period_in_ms = 0
    AND min_index_interval = 128
    AND read_repair = 'BLOCKING'
    AND speculative_retry = '99p';`
	wantPlainKeyspace = `CREATE KEYSPACE plain WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'}  AND durable_writes = true;`
	wantPlainT        = "CREATE TABLE plain.t (\n    a int,\n    b int,\n    c int,\n    PRIMARY KEY (a, b)\n) WITH CLUSTERING ORDER BY (b ASC)\n    AND " + defaultTableOptions
)

// describeRows runs a DESCRIBE and returns its rows, each column as text
// (create_statement included when the form has it).
func describeRows(t *testing.T, s *gocql.Session, stmt string) [][]string {
	t.Helper()
	rows, err := describe(t, s, stmt, 0)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	return rows
}

func describe(t *testing.T, s *gocql.Session, stmt string, pageSize int) ([][]string, error) {
	t.Helper()
	q := s.Query(stmt)
	if pageSize > 0 {
		q = q.PageSize(pageSize)
	}
	iter := cqltest.Paged(t, q.Iter())
	var out [][]string
	for {
		m := map[string]any{}
		if !iter.MapScan(m) {
			break
		}
		var row []string
		for _, c := range []string{"keyspace_name", "type", "name", "create_statement"} {
			if v, ok := m[c]; ok {
				row = append(row, v.(string))
			}
		}
		out = append(out, row)
	}
	return out, iter.Close()
}

func TestDescribeForms(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "")
	cqltest.Exec(t, s, describeSchema...)

	wantDesc := [][]string{
		{`"Desc"`, "keyspace", `"Desc"`, wantDescKeyspace},
		{`"Desc"`, "type", "point", wantPoint},
		{`"Desc"`, "type", "zone", wantZone},
		{`"Desc"`, "type", "alpha", wantAlpha},
		{`"Desc"`, "table", `"Events"`, wantEvents},
		{`"Desc"`, "table", "kv", wantKV},
	}
	wantPlain := [][]string{
		{"plain", "keyspace", "plain", wantPlainKeyspace},
		{"plain", "table", "t", wantPlainT},
	}
	systemKeyspaces := []string{"system", "system_schema", "system_virtual_schema"}

	check := func(s *gocql.Session, stmt string, want [][]string) {
		t.Helper()
		got := describeRows(t, s, stmt)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s:\n got %q\nwant %q", stmt, got, want)
			for i := range min(len(got), len(want)) {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("first difference, row %d:\n%s\n----- want\n%s", i, strings.Join(got[i], "\n"), strings.Join(want[i], "\n"))
					break
				}
			}
		}
	}
	check(s, "DESCRIBE SCHEMA", append(slices.Clone(wantDesc), wantPlain...))
	check(s, `DESC KEYSPACE "Desc"`, wantDesc)
	check(s, `DESCRIBE "Desc"`, wantDesc)
	check(s, `DESCRIBE ONLY KEYSPACE "Desc"`, wantDesc[:1])
	check(s, `DESCRIBE TABLE "Desc"."Events"`, wantDesc[4:5])
	check(s, `DESCRIBE "Desc".kv`, wantDesc[5:6])
	check(s, `DESCRIBE TYPE "Desc".zone`, wantDesc[2:3])
	check(s, "DESCRIBE TABLE plain.t", wantPlain[1:])

	var keyspaces [][]string
	for _, ks := range append([]string{`"Desc"`, "plain"}, systemKeyspaces...) {
		keyspaces = append(keyspaces, []string{ks, "keyspace", ks})
	}
	check(s, "DESCRIBE KEYSPACES", keyspaces)

	// FULL SCHEMA adds the system keyspaces, in name order.
	full := describeRows(t, s, "DESCRIBE FULL SCHEMA")
	var fullKeyspaces []string
	for _, r := range full {
		if r[1] == "keyspace" {
			fullKeyspaces = append(fullKeyspaces, r[0])
		}
	}
	if want := []string{`"Desc"`, "plain", "system", "system_schema", "system_virtual_schema"}; !slices.Equal(fullKeyspaces, want) {
		t.Errorf("DESCRIBE FULL SCHEMA keyspaces: got %q, want %q", fullKeyspaces, want)
	}
	for _, r := range full {
		if r[0] == "system_virtual_schema" && r[1] == "table" && r[2] == "keyspaces" {
			want := "/*\nWarning: Table system_virtual_schema.keyspaces is a virtual table and cannot be recreated with CQL.\nStructure, for reference:\n" +
				"VIRTUAL TABLE system_virtual_schema.keyspaces (\n    keyspace_name text PRIMARY KEY\n) WITH comment = 'virtual keyspace definitions';\n*/"
			if r[3] != want {
				t.Errorf("virtual table:\n%s\nwant\n%s", r[3], want)
			}
		}
		if r[0] == "system" && r[1] == "table" && r[2] == "local" && !strings.Contains(r[3], "    tokens set<text>,\n    truncated_at map<uuid, blob>\n) WITH ") {
			t.Errorf("system.local: the non-frozen collections come last:\n%s", r[3])
		}
	}

	// Listings without a keyspace span every keyspace; in one, only it.
	var allTables [][]string
	for _, r := range full {
		if r[1] == "table" {
			allTables = append(allTables, r[:3])
		}
	}
	check(s, "DESCRIBE TABLES", allTables)
	check(s, "DESCRIBE TYPES", [][]string{{`"Desc"`, "type", "alpha"}, {`"Desc"`, "type", "point"}, {`"Desc"`, "type", "zone"}})
	check(s, "DESCRIBE FUNCTIONS", nil)
	check(s, "DESCRIBE AGGREGATES", nil)

	in := srv.Session(t, "plain")
	check(in, "DESCRIBE TABLES", [][]string{{"plain", "table", "t"}})
	check(in, "DESCRIBE TYPES", nil)
	check(in, "DESCRIBE TABLE t", wantPlain[1:])
	check(in, "DESCRIBE t", wantPlain[1:])
	check(in, "DESCRIBE KEYSPACE", wantPlain)
	check(in, `DESCRIBE "Desc"`, wantDesc)
	check(in, "DESCRIBE KEYSPACES", keyspaces)

	for _, c := range []struct{ stmt, msg string }{
		{"DESCRIBE KEYSPACE", "No keyspace specified and no current keyspace"},
		{"DESCRIBE TABLE t", "No keyspace specified and no current keyspace"},
		{"DESCRIBE TYPE t", "No keyspace specified and no current keyspace"},
		{"DESCRIBE KEYSPACE nope", "'nope' not found in keyspaces"},
		{"DESCRIBE nope", "'nope' not found in keyspaces"},
		{"DESCRIBE plain.nope", "'nope' not found in keyspace 'plain'"},
		{"DESCRIBE TABLE plain.nope", "Table 'nope' not found in keyspace 'plain'"},
		{"DESCRIBE TYPE plain.nope", "User defined type 'nope' not found in 'plain'"},
		{"DESCRIBE FUNCTION plain.f", "User defined function 'f' not found in 'plain'"},
		{"DESCRIBE AGGREGATE plain.a", "User defined aggregate 'a' not found in 'plain'"},
		{"DESCRIBE INDEX plain.i", "Table for existing index 'i' not found in 'plain'"},
		{"DESCRIBE MATERIALIZED VIEW plain.v", "Materialized view 'v' not found in 'plain'"},
	} {
		wantErr(t, s, c.stmt, codeInvalid, c.msg)
	}
	wantErr(t, in, "DESCRIBE nope", codeInvalid, "'nope' not found in keyspace 'plain'")

	// WITH INTERNALS adds the ID and replays dropped columns.
	cqltest.Exec(t, s, "ALTER TABLE plain.t DROP c USING TIMESTAMP 1589286942065000", "ALTER TABLE plain.t ADD c int")
	var id gocql.UUID
	if err := s.Query("SELECT id FROM system_schema.tables WHERE keyspace_name = 'plain' AND table_name = 't'").Scan(&id); err != nil {
		t.Fatal(err)
	}
	internals := describeRows(t, s, "DESCRIBE TABLE plain.t WITH INTERNALS")
	want := "CREATE TABLE plain.t (\n    a int,\n    b int,\n    c int,\n    PRIMARY KEY (a, b)\n) WITH ID = " + id.String() +
		"\n    AND CLUSTERING ORDER BY (b ASC)\n    AND " + defaultTableOptions +
		"\nALTER TABLE plain.t DROP c USING TIMESTAMP 1589286942065000;\nALTER TABLE plain.t ADD c int;"
	if len(internals) != 1 || internals[0][3] != want {
		t.Errorf("WITH INTERNALS:\n%q\nwant\n%s", internals, want)
	}
}

func TestDescribeCluster(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "")
	m := map[string]any{}
	if err := s.Query("DESCRIBE CLUSTER").MapScan(m); err != nil {
		t.Fatal(err)
	}
	var cluster string
	if err := s.Query("SELECT cluster_name FROM system.local").Scan(&cluster); err != nil {
		t.Fatal(err)
	}
	if m["cluster"] != cluster || m["partitioner"] != "Murmur3Partitioner" || m["snitch"] != "SimpleSnitch" || len(m) != 3 {
		t.Errorf("DESCRIBE CLUSTER: got %v", m)
	}

	// In a keyspace, the ranges each frontend owns: the tokens it reports.
	in := srv.Session(t, "ks")
	m = map[string]any{}
	if err := in.Query("DESCRIBE CLUSTER").MapScan(m); err != nil {
		t.Fatal(err)
	}
	var tokens []string
	if err := in.Query("SELECT tokens FROM system.local").Scan(&tokens); err != nil {
		t.Fatal(err)
	}
	owned, _ := m["range_ownership"].(map[string][]string)
	host, _, _ := net.SplitHostPort(srv.Addr)
	if len(owned) != len(tokens) || len(tokens) == 0 {
		t.Fatalf("range_ownership %v, tokens %v", owned, tokens)
	}
	for _, tok := range tokens {
		if eps := owned[tok]; len(eps) != 1 || eps[0] != "/"+host+":7000" {
			t.Errorf("token %s: owners %q", tok, eps)
		}
	}
}

// TestDescribeRecreates is the property that matters: the statements
// DESCRIBE SCHEMA returns, run on a fresh server, recreate a schema that
// DESCRIBE shows identically.
func TestDescribeRecreates(t *testing.T) {
	a := cqltest.Start(t, cqltest.Options{})
	sa := a.Session(t, "")
	cqltest.Exec(t, sa, describeSchema...)
	cqltest.Exec(t, sa,
		`CREATE TABLE plain."select" ("from" int, "to" int static, "Where" frozen<map<int, frozen<set<text>>>>, PRIMARY KEY ("from", "Where")) WITH CLUSTERING ORDER BY ("Where" DESC)`,
		`CREATE TABLE plain.nocompress (k int PRIMARY KEY, v int) WITH compression = {'enabled': 'false'}`,
		`ALTER TABLE plain.t ADD d list<int>`,
		`ALTER TABLE plain.t DROP c`,
	)
	before := describeRows(t, sa, "DESCRIBE SCHEMA")

	b := cqltest.Start(t, cqltest.Options{})
	sb := b.Session(t, "")
	for _, r := range before {
		if err := sb.Query(r[3]).Exec(); err != nil {
			t.Fatalf("re-running %s: %v", r[3], err)
		}
	}
	after := describeRows(t, sb, "DESCRIBE SCHEMA")
	if !slices.EqualFunc(before, after, slices.Equal) {
		t.Errorf("recreated schema differs:\nbefore %q\nafter  %q", before, after)
	}
	// Rows round-trip too: the recreated tables take the same writes.
	cqltest.Exec(t, sb, `INSERT INTO "Desc"."Events" (tenant, day, at, seq, place) VALUES (1, '2026-01-01', now(), 1, {name: 'z', "Corners": [{x: 1, y: 2}]})`)
}

// randomSchema returns the statements of a random schema: tables with
// random names (some needing quotes), key and column types, clustering
// orders, static columns and stored options.
func randomSchema(rng *rand.Rand, tables int) []string {
	stmts := []string{
		`CREATE KEYSPACE rnd WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TYPE rnd.pt (x int, "Y" text)`,
		`CREATE TYPE rnd."Box" (lo frozen<pt>, hi frozen<pt>, tags frozen<set<text>>)`,
	}
	keyTypes := []string{"int", "text", "bigint", "uuid", "timeuuid", "date", "blob", "frozen<list<int>>", "frozen<pt>", "tuple<int, text>", `frozen<"Box">`}
	valueTypes := append(slices.Clone(keyTypes), "set<text>", "map<int, text>", "list<blob>", "pt", "duration", "frozen<map<text, frozen<list<int>>>>")
	names := []string{"a", "b", "c", "d", "e", "f", `"Mixed"`, `"select"`, `"with space"`, "key", "value", `"from"`, "x_1"}
	compactions := []string{"SizeTieredCompactionStrategy", "LeveledCompactionStrategy", "TimeWindowCompactionStrategy"}
	for i := range tables {
		cols := slices.Clone(names)
		rng.Shuffle(len(cols), func(a, b int) { cols[a], cols[b] = cols[b], cols[a] })
		cols = cols[:3+rng.IntN(len(cols)-3)]
		npk := 1 + rng.IntN(2)
		nck := rng.IntN(min(3, len(cols)-npk))
		var defs []string
		for j, c := range cols {
			if j < npk+nck {
				defs = append(defs, c+" "+keyTypes[rng.IntN(len(keyTypes))])
				continue
			}
			d := c + " " + valueTypes[rng.IntN(len(valueTypes))]
			if nck > 0 && rng.IntN(4) == 0 {
				d += " static"
			}
			defs = append(defs, d)
		}
		pk := strings.Join(cols[:npk], ", ")
		if npk > 1 || rng.IntN(2) == 0 {
			pk = "(" + pk + ")"
		}
		key := append([]string{pk}, cols[npk:npk+nck]...)
		stmt := fmt.Sprintf("CREATE TABLE rnd.%s (%s, PRIMARY KEY (%s))", fmt.Sprintf([]string{"t%d", `"T%d"`, "tbl%d", `"Tbl_%d"`}[i%4], i), strings.Join(defs, ", "), strings.Join(key, ", "))
		var opts []string
		if nck > 0 && rng.IntN(2) == 0 {
			var order []string
			for _, c := range cols[npk : npk+nck] {
				order = append(order, c+" "+[]string{"ASC", "DESC"}[rng.IntN(2)])
			}
			opts = append(opts, "CLUSTERING ORDER BY ("+strings.Join(order, ", ")+")")
		}
		if rng.IntN(2) == 0 {
			opts = append(opts, fmt.Sprintf("default_time_to_live = %d", rng.IntN(100000)))
		}
		if rng.IntN(2) == 0 {
			opts = append(opts, fmt.Sprintf("gc_grace_seconds = %d", rng.IntN(1000000)))
		}
		if rng.IntN(2) == 0 {
			opts = append(opts, fmt.Sprintf("comment = 'table %d''s \"comment\"'", i))
		}
		if rng.IntN(2) == 0 {
			opts = append(opts, fmt.Sprintf("compaction = {'class': '%s'}", compactions[rng.IntN(len(compactions))]))
		}
		if rng.IntN(3) == 0 {
			opts = append(opts, fmt.Sprintf("compression = {'class': 'SnappyCompressor', 'chunk_length_in_kb': '%d'}", 1<<rng.IntN(8)))
		}
		if len(opts) > 0 {
			stmt += " WITH " + strings.Join(opts, " AND ")
		}
		stmts = append(stmts, stmt)
	}
	return stmts
}

// TestDescribeRecreatesRandom checks the round trip on random schemas.
func TestDescribeRecreatesRandom(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	a := cqltest.Start(t, cqltest.Options{})
	sa := a.Session(t, "")
	cqltest.Exec(t, sa, randomSchema(rng, 12)...)
	before := describeRows(t, sa, "DESCRIBE SCHEMA")

	b := cqltest.Start(t, cqltest.Options{})
	sb := b.Session(t, "")
	for _, r := range before {
		if err := sb.Query(r[3]).Exec(); err != nil {
			t.Fatalf("re-running %s: %v", r[3], err)
		}
	}
	if after := describeRows(t, sb, "DESCRIBE SCHEMA"); !slices.EqualFunc(before, after, slices.Equal) {
		t.Errorf("recreated schema differs:\nbefore %q\nafter  %q", before, after)
	}
}

func TestDescribePaging(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "")
	cqltest.Exec(t, s, describeSchema...)
	all := describeRows(t, s, "DESCRIBE FULL SCHEMA")
	if len(all) < 10 {
		t.Fatalf("only %d rows", len(all))
	}
	for _, size := range []int{1, 3, len(all) - 1, len(all), len(all) + 1} {
		got, err := describe(t, s, "DESCRIBE FULL SCHEMA", size)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, all, slices.Equal) {
			t.Errorf("page size %d: %d rows differ from the unpaged %d", size, len(got), len(all))
		}
	}

	// A schema change between pages invalidates the paging state.
	iter := cqltest.Paged(t, s.Query("DESCRIBE KEYSPACES").PageSize(1).Iter())
	var ks, typ, name string
	if !iter.Scan(&ks, &typ, &name) {
		t.Fatal(iter.Close())
	}
	cqltest.Exec(t, s, "CREATE KEYSPACE later WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	for iter.Scan(&ks, &typ, &name) {
	}
	err := iter.Close()
	if err == nil || !strings.Contains(err.Error(), "The schema has changed since the previous page of the DESCRIBE statement result. Please retry the DESCRIBE statement.") {
		t.Errorf("paging across a schema change: got %v", err)
	}

	// A paging state from elsewhere is refused.
	err = s.Query("DESCRIBE KEYSPACES").PageState([]byte("garbage")).Exec()
	if err == nil || !strings.Contains(err.Error(), "Invalid paging state") {
		t.Errorf("foreign paging state: got %v", err)
	}
}

// TestDescribePython runs testdata/describe.py: DESCRIBE through the
// DataStax Python driver, as cqlsh 6 sends it.
func TestDescribePython(t *testing.T) {
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import cassandra").CombinedOutput(); err != nil {
		t.Fatalf("the Python driver is missing (make tools installs it: apt-get install -y python3-cassandra): %v\n%s", err, out)
	}
	srv := cqltest.Start(t, cqltest.Options{})
	cqltest.Exec(t, srv.Session(t, ""), describeSchema...)
	host, port, _ := net.SplitHostPort(srv.Addr)
	out, err := exec.Command(python, filepath.Join("testdata", "describe.py"), host, port, fmt.Sprint(len(wantEvents))).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "OK") {
		t.Fatalf("describe.py: %v\n%s", err, out)
	}
}
