package exec_test

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// The system tables as Cassandra 4.0's SystemKeyspace and SchemaKeyspace
// define them, checked against what drivers see through gocql.

// systemAuditEnv creates a schema with every column kind, a user type, a
// counter table, a DESC clustering column, options and dropped columns.
func systemAuditEnv(t *testing.T) *gocql.Session {
	t.Helper()
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "")
	cqltest.Exec(t, s,
		`CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE KEYSPACE nts WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3} AND durable_writes = false`,
		`CREATE TYPE ks.addr (street text, nums frozen<list<int>>)`,
		`CREATE TABLE ks.t (p1 int, p2 text, c1 int, c2 timeuuid, s int STATIC, v text, a frozen<addr>, na addr,
			m map<text, int>, fl frozen<list<int>>, "Quoted" int, PRIMARY KEY ((p1, p2), c1, c2))
			WITH CLUSTERING ORDER BY (c1 DESC) AND comment = 'hi' AND cdc = true AND gc_grace_seconds = 7`,
		`CREATE TABLE ks.cnt (k int PRIMARY KEY, n counter)`,
		`CREATE TABLE ks.plain (k int PRIMARY KEY, v int)`,
		`ALTER TABLE ks.t DROP v USING TIMESTAMP 1700000000123456`,
		`ALTER TABLE ks.t DROP a USING TIMESTAMP 1700000000999000`,
		`ALTER TABLE ks.plain DROP v USING TIMESTAMP 1600000000000000`,
		`ALTER TABLE ks.plain ADD v int`,
		`ALTER TABLE ks.plain DROP v USING TIMESTAMP 1600000000500000`,
		`ALTER TABLE ks.plain ADD v int`,
	)
	return s
}

// columnsOf returns the result columns of q as "name type", with gocql's
// type names (varchar for text; frozen is not on the wire).
func columnsOf(t *testing.T, s *gocql.Session, q string) []string {
	t.Helper()
	it := s.Query(q).Iter()
	var out []string
	for _, c := range it.Columns() {
		out = append(out, fmt.Sprintf("%s %s", c.Name, c.TypeInfo))
	}
	if err := it.Close(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// auditTableParams and auditTableParamsRest are the table parameters of
// system_schema.tables and views in Cassandra 4.0's select order, by name
// (tables' flags goes between them).
var auditTableParams = []string{
	"additional_write_policy varchar", "bloom_filter_fp_chance double", "caching map(varchar, varchar)",
	"cdc boolean", "comment varchar", "compaction map(varchar, varchar)", "compression map(varchar, varchar)",
	"crc_check_chance double", "dclocal_read_repair_chance double", "default_time_to_live int",
	"extensions map(varchar, blob)",
}

var auditTableParamsRest = []string{
	"gc_grace_seconds int", "id uuid", "max_index_interval int", "memtable_flush_period_in_ms int",
	"min_index_interval int", "read_repair varchar", "read_repair_chance double", "speculative_retry varchar",
}

// TestSystemAuditSelectStar: SELECT * returns each system table's columns
// as Cassandra 4.0 does: the partition key, the clustering columns, then
// the others by name (ColumnMetadata's order, non-frozen collections last).
func TestSystemAuditSelectStar(t *testing.T) {
	s := systemAuditEnv(t)
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	want := map[string][]string{
		"system.local": {"key varchar", "bootstrapped varchar", "broadcast_address inet", "broadcast_port int",
			"cluster_name varchar", "cql_version varchar", "data_center varchar", "gossip_generation int",
			"host_id uuid", "listen_address inet", "listen_port int", "native_protocol_version varchar",
			"partitioner varchar", "rack varchar", "release_version varchar", "rpc_address inet", "rpc_port int",
			"schema_version uuid", "tokens set(varchar)", "truncated_at map(uuid, blob)"},
		"system.peers": {"peer inet", "data_center varchar", "host_id uuid", "preferred_ip inet", "rack varchar",
			"release_version varchar", "rpc_address inet", "schema_version uuid", "tokens set(varchar)"},
		"system.peers_v2": {"peer inet", "peer_port int", "data_center varchar", "host_id uuid", "native_address inet",
			"native_port int", "preferred_ip inet", "preferred_port int", "rack varchar", "release_version varchar",
			"schema_version uuid", "tokens set(varchar)"},
		"system_schema.keyspaces": {"keyspace_name varchar", "durable_writes boolean", "replication map(varchar, varchar)"},
		"system_schema.tables": cat([]string{"keyspace_name varchar", "table_name varchar"}, auditTableParams,
			[]string{"flags set(varchar)"}, auditTableParamsRest),
		"system_schema.columns": {"keyspace_name varchar", "table_name varchar", "column_name varchar",
			"clustering_order varchar", "column_name_bytes blob", "kind varchar", "position int", "type varchar"},
		"system_schema.dropped_columns": {"keyspace_name varchar", "table_name varchar", "column_name varchar",
			"dropped_time timestamp", "kind varchar", "type varchar"},
		"system_schema.types": {"keyspace_name varchar", "type_name varchar", "field_names list(varchar)", "field_types list(varchar)"},
		"system_schema.functions": {"keyspace_name varchar", "function_name varchar", "argument_types list(varchar)",
			"argument_names list(varchar)", "body varchar", "called_on_null_input boolean", "language varchar", "return_type varchar"},
		"system_schema.aggregates": {"keyspace_name varchar", "aggregate_name varchar", "argument_types list(varchar)",
			"final_func varchar", "initcond varchar", "return_type varchar", "state_func varchar", "state_type varchar"},
		"system_schema.indexes": {"keyspace_name varchar", "table_name varchar", "index_name varchar", "kind varchar",
			"options map(varchar, varchar)"},
		"system_schema.triggers": {"keyspace_name varchar", "table_name varchar", "trigger_name varchar",
			"options map(varchar, varchar)"},
		"system_virtual_schema.keyspaces": {"keyspace_name varchar"},
		"system_virtual_schema.tables":    {"keyspace_name varchar", "table_name varchar", "comment varchar"},
		"system_virtual_schema.columns": {"keyspace_name varchar", "table_name varchar", "column_name varchar",
			"clustering_order varchar", "column_name_bytes blob", "kind varchar", "position int", "type varchar"},
	}
	// Views have the table parameters and their own columns, all by name.
	views := slices.Concat(auditTableParams, auditTableParamsRest, []string{"base_table_id uuid", "base_table_name varchar",
		"include_all_columns boolean", "where_clause varchar"})
	slices.Sort(views)
	want["system_schema.views"] = append([]string{"keyspace_name varchar", "view_name varchar"}, views...)
	for table, cols := range want {
		if got := columnsOf(t, s, "SELECT * FROM "+table); !slices.Equal(got, cols) {
			t.Errorf("SELECT * FROM %s:\n got %q\nwant %q", table, got, cols)
		}
	}
}

// TestSystemAuditTables: a table's row in system_schema.tables holds
// addTableParamsToRowBuilder's values for a default table and the options
// set, flags compound and counter.
func TestSystemAuditTables(t *testing.T) {
	s := systemAuditEnv(t)
	type row struct {
		flags                             []string
		bloom, crc, dcRR, rr              float64
		caching, compaction, compression  map[string]string
		cdc                               *bool
		comment, spec, awp, readRepair    string
		ttl, grace, maxIdx, flush, minIdx int
		extensions                        map[string][]byte
		id                                gocql.UUID
	}
	get := func(table string) row {
		t.Helper()
		var r row
		err := s.Query(`SELECT flags, bloom_filter_fp_chance, crc_check_chance, dclocal_read_repair_chance, read_repair_chance,
			caching, compaction, compression, cdc, comment, speculative_retry, additional_write_policy, read_repair,
			default_time_to_live, gc_grace_seconds, max_index_interval, memtable_flush_period_in_ms, min_index_interval,
			extensions, id FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = ?`, table).
			Scan(&r.flags, &r.bloom, &r.crc, &r.dcRR, &r.rr, &r.caching, &r.compaction, &r.compression, &r.cdc,
				&r.comment, &r.spec, &r.awp, &r.readRepair, &r.ttl, &r.grace, &r.maxIdx, &r.flush, &r.minIdx,
				&r.extensions, &r.id)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		return r
	}
	// Cassandra 4.0 on a default node (cdc_enabled off) leaves cdc null.
	p := get("plain")
	if p.cdc != nil {
		t.Errorf("plain: cdc %v, want null", *p.cdc)
	}
	if !slices.Equal(p.flags, []string{"compound"}) || p.bloom != 0.01 || p.crc != 1 || p.dcRR != 0 || p.rr != 0 ||
		p.comment != "" || p.spec != "99p" || p.awp != "99p" || p.readRepair != "BLOCKING" || p.ttl != 0 ||
		p.grace != 864000 || p.maxIdx != 2048 || p.flush != 0 || p.minIdx != 128 || len(p.extensions) != 0 ||
		p.id == (gocql.UUID{}) {
		t.Errorf("plain: %+v", p)
	}
	wantMap := func(name string, got, want map[string]string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %v, want %v", name, got, want)
			}
		}
	}
	wantMap("caching", p.caching, map[string]string{"keys": "ALL", "rows_per_partition": "NONE"})
	wantMap("compaction", p.compaction, map[string]string{"class": "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy",
		"max_threshold": "32", "min_threshold": "4"})
	wantMap("compression", p.compression, map[string]string{"chunk_length_in_kb": "16", "class": "org.apache.cassandra.io.compress.LZ4Compressor"})

	tt := get("t")
	if tt.cdc == nil || !*tt.cdc || tt.comment != "hi" || tt.grace != 7 || !slices.Equal(tt.flags, []string{"compound"}) {
		t.Errorf("t: cdc %v comment %q grace %d flags %q", tt.cdc, tt.comment, tt.grace, tt.flags)
	}
	if c := get("cnt"); !slices.Equal(c.flags, []string{"compound", "counter"}) {
		t.Errorf("cnt: flags %q", c.flags)
	}
}

// TestSystemAuditColumns: every column kind in system_schema.columns, by
// name as bytes: position -1 for regular and static columns, clustering
// order none/asc/desc, the base type of a DESC column, user types by name.
func TestSystemAuditColumns(t *testing.T) {
	s := systemAuditEnv(t)
	it := s.Query(`SELECT column_name, kind, position, clustering_order, type, column_name_bytes
		FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 't'`).Iter()
	var got []string
	var name, kind, order, typ string
	var pos int
	var nameBytes []byte
	for it.Scan(&name, &kind, &pos, &order, &typ, &nameBytes) {
		if string(nameBytes) != name {
			t.Errorf("%s: column_name_bytes %x", name, nameBytes)
		}
		got = append(got, strings.Join([]string{name, kind, strconv.Itoa(pos), order, typ}, "|"))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	wantRows(t, got,
		"Quoted|regular|-1|none|int",
		"c1|clustering|0|desc|int",
		"c2|clustering|1|asc|timeuuid",
		"fl|regular|-1|none|frozen<list<int>>",
		"m|regular|-1|none|map<text, int>",
		"na|regular|-1|none|addr",
		"p1|partition_key|0|none|int",
		"p2|partition_key|1|none|text",
		"s|static|-1|none|int",
	)
	wantRows(t, rowsOf(t, s, 0, `SELECT column_name, kind, type FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 'cnt'`),
		"k|partition_key|int", "n|regular|counter")
	wantRows(t, rowsOf(t, s, 0, `SELECT type_name, field_names, field_types FROM system_schema.types WHERE keyspace_name = 'ks'`),
		"addr|[street nums]|[text frozen<list<int>>]")
}

// TestSystemAuditDroppedColumns: a dropped column's time in milliseconds,
// its kind, and its type with user types expanded to tuples, as
// TableMetadata.Builder.recordColumnDrop records it; a column dropped twice
// is one row (the table is keyed by column), its last drop. DESCRIBE WITH
// INTERNALS replays the drop with the same type.
func TestSystemAuditDroppedColumns(t *testing.T) {
	s := systemAuditEnv(t)
	dropped := func(table string) []string {
		t.Helper()
		it := s.Query(`SELECT column_name, dropped_time, kind, type FROM system_schema.dropped_columns
			WHERE keyspace_name = 'ks' AND table_name = ?`, table).Iter()
		var got []string
		var name, kind, typ string
		var at time.Time
		for it.Scan(&name, &at, &kind, &typ) {
			got = append(got, strings.Join([]string{name, at.UTC().Format(time.RFC3339Nano), kind, typ}, "|"))
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	wantRows(t, dropped("t"),
		"a|2023-11-14T22:13:20.999Z|regular|frozen<tuple<text, frozen<list<int>>>>",
		"v|2023-11-14T22:13:20.123Z|regular|text",
	)
	wantRows(t, dropped("plain"), "v|2020-09-13T12:26:40.5Z|regular|int")
	it := s.Query("DESCRIBE TABLE ks.t WITH INTERNALS").Iter()
	var ks, typ2, tname, stmt string
	if !it.Scan(&ks, &typ2, &tname, &stmt) {
		t.Fatalf("DESCRIBE WITH INTERNALS: %v", it.Close())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"    a frozen<tuple<text, frozen<list<int>>>>,\n",
		"ALTER TABLE ks.t DROP a USING TIMESTAMP 1700000000999000;"} {
		if !strings.Contains(stmt, want) {
			t.Errorf("DESCRIBE WITH INTERNALS lacks %q:\n%s", want, stmt)
		}
	}
}

// TestSystemAuditKeyspaces: replication with the full class name; the
// local system keyspaces with LocalStrategy.
func TestSystemAuditKeyspaces(t *testing.T) {
	s := systemAuditEnv(t)
	got := map[string]string{}
	it := s.Query(`SELECT keyspace_name, durable_writes, replication FROM system_schema.keyspaces`).Iter()
	var name string
	var durable bool
	var repl map[string]string
	for it.Scan(&name, &durable, &repl) {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range repl {
				if !yield(k) {
					return
				}
			}
		})
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+repl[k])
		}
		got[name] = strings.Join(parts, ",") + "|" + map[bool]string{true: "durable", false: "not durable"}[durable]
		repl = nil
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"system":        "class=org.apache.cassandra.locator.LocalStrategy|durable",
		"system_schema": "class=org.apache.cassandra.locator.LocalStrategy|durable",
		"ks":            "class=org.apache.cassandra.locator.SimpleStrategy,replication_factor=1|durable",
		"nts":           "class=org.apache.cassandra.locator.NetworkTopologyStrategy,dc1=3|not durable",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("keyspace %s: %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("keyspaces %v, want %v", got, want)
	}
}

// TestSystemAuditLocal: system.local's values whose form is Cassandra's;
// addresses, host ID and tokens are Sediment's own, checked for form.
func TestSystemAuditLocal(t *testing.T) {
	s := systemAuditEnv(t)
	var (
		bootstrapped, cqlVersion, nativeVersion string
		broadcast, listen, rpc                  net.IP
		broadcastPort, listenPort, gossipGen    int
		truncated                               map[gocql.UUID][]byte
		hostID                                  gocql.UUID
		tokens                                  []string
	)
	err := s.Query(`SELECT bootstrapped, cql_version, native_protocol_version, broadcast_address, listen_address, rpc_address,
		broadcast_port, listen_port, gossip_generation, truncated_at, host_id, tokens FROM system.local WHERE key = 'local'`).
		Scan(&bootstrapped, &cqlVersion, &nativeVersion, &broadcast, &listen, &rpc, &broadcastPort, &listenPort, &gossipGen,
			&truncated, &hostID, &tokens)
	if err != nil {
		t.Fatal(err)
	}
	if bootstrapped != "COMPLETED" || cqlVersion != "3.4.5" || nativeVersion != "5" {
		t.Errorf("bootstrapped %q cql_version %q native_protocol_version %q", bootstrapped, cqlVersion, nativeVersion)
	}
	if !broadcast.Equal(rpc) || !listen.Equal(rpc) || rpc.To4() == nil {
		t.Errorf("addresses %v %v %v", broadcast, listen, rpc)
	}
	if broadcastPort != 7000 || listenPort != 7000 || gossipGen <= 0 || len(truncated) != 0 {
		t.Errorf("ports %d %d, gossip_generation %d, truncated_at %v", broadcastPort, listenPort, gossipGen, truncated)
	}
	if hostID.Version() == 0 || len(tokens) == 0 {
		t.Errorf("host_id %v, tokens %q", hostID, tokens)
	}
}

// TestSystemAuditVirtualSchema: system_virtual_schema lists itself, its
// tables with their comments and its columns as system_schema.columns does.
func TestSystemAuditVirtualSchema(t *testing.T) {
	s := systemAuditEnv(t)
	wantRows(t, rowsOf(t, s, 0, `SELECT * FROM system_virtual_schema.keyspaces`), "system_virtual_schema")
	wantRows(t, rowsOf(t, s, 0, `SELECT * FROM system_virtual_schema.tables`),
		"system_virtual_schema|columns|virtual column definitions",
		"system_virtual_schema|keyspaces|virtual keyspace definitions",
		"system_virtual_schema|tables|virtual table definitions",
	)
	wantRows(t, rowsOf(t, s, 0, `SELECT table_name, column_name, clustering_order, kind, position, type
		FROM system_virtual_schema.columns WHERE table_name = 'tables'`),
		"tables|comment|none|regular|-1|text",
		"tables|keyspace_name|none|partition_key|0|text",
		"tables|table_name|asc|clustering|0|text",
	)
}

// TestSystemAuditSystemTableRows: the system tables' own rows in
// system_schema.tables: IDs as TableId.forSystemTable derives them, the
// grace and memtable flush period of SystemKeyspace and SchemaKeyspace,
// default compression, flags compound.
func TestSystemAuditSystemTableRows(t *testing.T) {
	s := systemAuditEnv(t)
	for _, c := range []struct {
		ks, table, id, comment string
		grace                  int
	}{
		{"system", "local", "7ad54392-bcdd-35a6-8417-4e047860b377", "information about the local node", 0},
		{"system", "peers", "37f71aca-7dc2-383b-a706-72528af04d4f", "information about known peers in the cluster", 0},
		{"system_schema", "keyspaces", "abac5682-dea6-31c5-b535-b3d6cffd0fb6", "keyspace definitions", 604800},
	} {
		var (
			id                gocql.UUID
			comment           string
			grace, flush      int
			flags             []string
			compression, comp map[string]string
		)
		err := s.Query(`SELECT id, comment, gc_grace_seconds, memtable_flush_period_in_ms, flags, compression, compaction
			FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?`, c.ks, c.table).
			Scan(&id, &comment, &grace, &flush, &flags, &compression, &comp)
		if err != nil {
			t.Fatalf("%s.%s: %v", c.ks, c.table, err)
		}
		if id.String() != c.id || comment != c.comment || grace != c.grace || flush != 3600000 ||
			!slices.Equal(flags, []string{"compound"}) || compression["class"] != "org.apache.cassandra.io.compress.LZ4Compressor" ||
			compression["chunk_length_in_kb"] != "16" || comp["class"] != "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy" {
			t.Errorf("%s.%s: id %s comment %q grace %d flush %d flags %q compression %v compaction %v",
				c.ks, c.table, id, comment, grace, flush, flags, compression, comp)
		}
	}
}
