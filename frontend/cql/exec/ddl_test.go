package exec_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/internal/cqltest"
)

// wantErr runs stmt and checks that it fails with the protocol error code
// and a message containing msg.
func wantErr(t *testing.T, s *gocql.Session, stmt string, code int, msg string) {
	t.Helper()
	checkErr(t, s, stmt, code, msg, strings.Contains)
}

// wantExactErr runs stmt and wants the error code and exactly the message.
func wantExactErr(t *testing.T, s *gocql.Session, stmt string, code int, msg string) {
	t.Helper()
	checkErr(t, s, stmt, code, msg, func(got, want string) bool { return got == want })
}

// checkErr runs stmt and wants the error code and a message that match
// accepts.
func checkErr(t *testing.T, s *gocql.Session, stmt string, code int, msg string, match func(got, want string) bool) {
	t.Helper()
	err := s.Query(stmt).Exec()
	var re gocql.RequestError
	if !errors.As(err, &re) {
		t.Errorf("%s: got %v, want error %#x %q", stmt, err, code, msg)
		return
	}
	if re.Code() != code || !match(re.Message(), msg) {
		t.Errorf("%s:\n got %#x %q\nwant %#x %q", stmt, re.Code(), re.Message(), code, msg)
	}
}

const (
	codeSyntax   = 0x2000
	codeUnauth   = 0x2100
	codeInvalid  = 0x2200
	codeConfig   = 0x2300
	codeExists   = 0x2400
	codeTruncate = 0x1003
)

func TestKeyspaceDDL(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "")
	cqltest.Exec(t, s,
		"CREATE KEYSPACE k1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE KEYSPACE IF NOT EXISTS k1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE KEYSPACE k2 WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': '2'} AND durable_writes = false",
	)
	var repl map[string]string
	var durable bool
	if err := s.Query("SELECT replication, durable_writes FROM system_schema.keyspaces WHERE keyspace_name = 'k1'").Scan(&repl, &durable); err != nil {
		t.Fatal(err)
	}
	if repl["class"] != "org.apache.cassandra.locator.SimpleStrategy" || repl["replication_factor"] != "3" || !durable {
		t.Errorf("k1: replication %v durable %v", repl, durable)
	}
	if err := s.Query("SELECT replication, durable_writes FROM system_schema.keyspaces WHERE keyspace_name = ?", "k2").Scan(&repl, &durable); err != nil {
		t.Fatal(err)
	}
	if repl["class"] != "org.apache.cassandra.locator.NetworkTopologyStrategy" || repl["dc1"] != "3" || repl["dc2"] != "2" || durable {
		t.Errorf("k2: replication %v durable %v", repl, durable)
	}

	err := s.Query("CREATE KEYSPACE k1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").Exec()
	var ae *gocql.RequestErrAlreadyExists
	if !errors.As(err, &ae) || ae.Keyspace != "k1" || ae.Table != "" {
		t.Errorf("second CREATE KEYSPACE k1: %v (%#v)", err, ae)
	}
	wantErr(t, s, "CREATE KEYSPACE k3 WITH replication = {'class': 'SimpleStrategy'}", codeConfig, "SimpleStrategy requires a replication_factor strategy option.")
	wantErr(t, s, "CREATE KEYSPACE k3 WITH replication = {'class': 'Nope'}", codeConfig, "Unable to find replication strategy class 'org.apache.cassandra.locator.Nope'")
	wantErr(t, s, "CREATE KEYSPACE k3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 'x'}", codeConfig, `For input string: "x"`)
	wantErr(t, s, "CREATE KEYSPACE k3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1, 'dc1': 1}", codeConfig, "Unrecognized strategy option {dc1}")
	wantErr(t, s, "CREATE KEYSPACE k3 WITH replication = {'replication_factor': 1}", codeConfig, "Missing replication strategy class")
	wantErr(t, s, "CREATE KEYSPACE k3 WITH durable_writes = true", codeConfig, "Missing mandatory option 'replication'")
	wantErr(t, s, "CREATE KEYSPACE k3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND foo = 1", codeSyntax, "Unknown property 'foo'")
	wantErr(t, s, "CREATE KEYSPACE system_schema WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", codeInvalid, "system keyspace")
	wantErr(t, s, `CREATE KEYSPACE "a-b" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`, codeConfig, "Keyspace name must not be empty, more than 48 characters long")

	cqltest.Exec(t, s, "ALTER KEYSPACE k1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND durable_writes = false")
	if err := s.Query("SELECT replication, durable_writes FROM system_schema.keyspaces WHERE keyspace_name = 'k1'").Scan(&repl, &durable); err != nil {
		t.Fatal(err)
	}
	if repl["replication_factor"] != "1" || durable {
		t.Errorf("after ALTER, k1: replication %v durable %v", repl, durable)
	}
	wantErr(t, s, "ALTER KEYSPACE nope WITH durable_writes = true", codeInvalid, "Keyspace 'nope' doesn't exist")
	cqltest.Exec(t, s, "ALTER KEYSPACE IF EXISTS nope WITH durable_writes = true")
	wantErr(t, s, "ALTER KEYSPACE system WITH durable_writes = true", codeUnauth, "not user-modifiable")

	cqltest.Exec(t, s, "DROP KEYSPACE k2", "DROP KEYSPACE IF EXISTS k2")
	wantErr(t, s, "DROP KEYSPACE k2", codeInvalid, "Keyspace 'k2' doesn't exist")
	var n int
	if err := s.Query("SELECT count(*) FROM system_schema.keyspaces WHERE keyspace_name IN ('k1', 'k2')").Scan(&n); err != nil || n != 1 {
		t.Errorf("keyspaces k1 and k2 after dropping k2: %d (%v)", n, err)
	}

	// USE.
	if _, err := srv.Executor.Query(t.Context(), exec.NewSession(), "USE nope", &exec.Params{}); err == nil || !strings.Contains(err.Error(), "Keyspace 'nope' does not exist") {
		t.Errorf("USE nope: %v", err)
	}
}

func TestTableDDL(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		"CREATE TYPE addr (street text, zip int, tags set<text>)",
		`CREATE TABLE t (
			a int, b text, c timeuuid, d bigint, s text static,
			v1 ascii, v2 blob, v3 boolean, v4 date, v5 decimal, v6 double, v7 duration, v8 float,
			v9 inet, v10 smallint, v11 time, v12 timestamp, v13 tinyint, v14 uuid, v15 varchar, v16 varint,
			l list<int>, st set<text>, m map<text, frozen<list<int>>>, fm frozen<map<int, text>>,
			tu tuple<int, text>, u addr, fu frozen<addr>,
			PRIMARY KEY ((a, b), c, d)
		) WITH CLUSTERING ORDER BY (c DESC, d ASC) AND comment = 'hello' AND default_time_to_live = 60
		  AND gc_grace_seconds = 3600 AND compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '160'}
		  AND compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': 64}
		  AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'} AND bloom_filter_fp_chance = 0.01`,
		"CREATE TABLE IF NOT EXISTS t (x int PRIMARY KEY)",
		"CREATE TABLE c (k int PRIMARY KEY, n counter, m counter)",
	)

	type col struct {
		kind, order, typ string
		pos              int
	}
	cols := map[string]col{}
	iter := s.Query("SELECT column_name, kind, clustering_order, type, position FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 't'").Iter()
	var name string
	var c col
	for iter.Scan(&name, &c.kind, &c.order, &c.typ, &c.pos) {
		cols[name] = c
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]col{
		"a":  {"partition_key", "none", "int", 0},
		"b":  {"partition_key", "none", "text", 1},
		"c":  {"clustering", "desc", "timeuuid", 0},
		"d":  {"clustering", "asc", "bigint", 1},
		"s":  {"static", "none", "text", -1},
		"v7": {"regular", "none", "duration", -1},
		"m":  {"regular", "none", "map<text, frozen<list<int>>>", -1},
		"fm": {"regular", "none", "frozen<map<int, text>>", -1},
		"tu": {"regular", "none", "frozen<tuple<int, text>>", -1},
		"u":  {"regular", "none", "addr", -1},
		"fu": {"regular", "none", "frozen<addr>", -1},
	} {
		if cols[name] != want {
			t.Errorf("column %s: %+v, want %+v", name, cols[name], want)
		}
	}
	if len(cols) != 28 {
		t.Errorf("%d columns, want 28", len(cols))
	}

	var (
		comment                 string
		ttl, gc                 int
		compaction, compression map[string]string
		flags                   []string
		fp                      float64
	)
	if err := s.Query("SELECT comment, default_time_to_live, gc_grace_seconds, compaction, compression, flags, bloom_filter_fp_chance FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 't'").
		Scan(&comment, &ttl, &gc, &compaction, &compression, &flags, &fp); err != nil {
		t.Fatal(err)
	}
	if comment != "hello" || ttl != 60 || gc != 3600 || fp != 0.01 ||
		compaction["class"] != "org.apache.cassandra.db.compaction.LeveledCompactionStrategy" || compaction["sstable_size_in_mb"] != "160" ||
		compression["class"] != "org.apache.cassandra.io.compress.ZstdCompressor" || compression["chunk_length_in_kb"] != "64" ||
		len(flags) != 1 || flags[0] != "compound" {
		t.Errorf("options of t: %q %d %d %v %v %v %v", comment, ttl, gc, compaction, compression, flags, fp)
	}
	if err := s.Query("SELECT flags FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 'c'").Scan(&flags); err != nil || len(flags) != 2 || flags[1] != "counter" {
		t.Errorf("flags of the counter table: %v %v", flags, err)
	}

	// gocql's metadata, built from system_schema.
	md, err := s.KeyspaceMetadata("ks")
	if err != nil {
		t.Fatal(err)
	}
	tm := md.Tables["t"]
	if tm == nil || len(tm.PartitionKey) != 2 || len(tm.ClusteringColumns) != 2 || tm.ClusteringColumns[0].ClusteringOrder != "desc" {
		t.Fatalf("gocql metadata of t: %+v", tm)
	}
	if u := md.UserTypes["addr"]; u == nil || len(u.FieldNames) != 3 || u.FieldNames[2] != "tags" {
		t.Errorf("gocql metadata of addr: %+v", md.UserTypes["addr"])
	}

	err = s.Query("CREATE TABLE t (k int PRIMARY KEY)").Exec()
	var ae *gocql.RequestErrAlreadyExists
	if !errors.As(err, &ae) || ae.Keyspace != "ks" || ae.Table != "t" {
		t.Errorf("second CREATE TABLE t: %v", err)
	}
	for stmt, want := range map[string]struct {
		code int
		msg  string
	}{
		"CREATE TABLE x (k int PRIMARY KEY) WITH foo = 1":                                                                        {codeSyntax, "Unknown property 'foo'"},
		"CREATE TABLE x (k int PRIMARY KEY, v counter, w int)":                                                                   {codeInvalid, "Cannot mix counter and non counter columns in the same table"},
		"CREATE TABLE x (k int PRIMARY KEY, s int static)":                                                                       {codeInvalid, "Static columns are only useful"},
		"CREATE TABLE x (k int, v int, PRIMARY KEY (z))":                                                                         {codeInvalid, "Unknown column 'z' referenced in PRIMARY KEY for table 'x'"},
		"CREATE TABLE x (k int PRIMARY KEY, k text)":                                                                             {codeInvalid, "Duplicate column 'k'"},
		"CREATE TABLE x (k list<int> PRIMARY KEY)":                                                                               {codeInvalid, "Invalid non-frozen collection type"},
		"CREATE TABLE x (k duration PRIMARY KEY)":                                                                                {codeInvalid, "duration type is not supported for PRIMARY KEY column 'k'"},
		"CREATE TABLE x (k counter PRIMARY KEY)":                                                                                 {codeInvalid, "counter type is not supported for PRIMARY KEY column 'k'"},
		"CREATE TABLE x (k int, c int, d int, PRIMARY KEY (k, c, d)) WITH CLUSTERING ORDER BY (d ASC, c ASC)":                    {codeInvalid, "must match that of the clustering columns"},
		"CREATE TABLE x (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (k ASC)":                                     {codeInvalid, "Missing CLUSTERING ORDER for column c"},
		"CREATE TABLE x (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c ASC, k ASC)":                              {codeInvalid, "Only clustering columns can be defined in CLUSTERING ORDER directive"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH COMPACT STORAGE":                                                                {codeInvalid, "Compact tables are not allowed"},
		"CREATE TABLE x (k int PRIMARY KEY, v nosuch)":                                                                           {codeInvalid, "nosuch"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH gc_grace_seconds = -1":                                                          {codeConfig, "gc_grace_seconds must be greater than or equal to 0"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH default_time_to_live = 630720001":                                               {codeConfig, "default_time_to_live must be less than or equal to 630720000"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'Nope'}":                                                 {codeConfig, "Unable to find compaction strategy class 'org.apache.cassandra.db.compaction.Nope'"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'UnifiedCompactionStrategy', 'scaling_parameters': 'Q'}": {codeConfig, "Invalid compaction options"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'chunk_length_in_kb': 3, 'class': 'LZ4Compressor'}":              {codeConfig, "chunk_length_in_kb must be a power of 2"},
		"CREATE TABLE c2 (k int PRIMARY KEY, n counter) WITH default_time_to_live = 5":                                           {codeInvalid, "Cannot set default_time_to_live on a table with counters"},
		"CREATE TABLE nope.x (k int PRIMARY KEY)":                                                                                {codeInvalid, "Keyspace 'nope' doesn't exist"},
		"CREATE TABLE system.x (k int PRIMARY KEY)":                                                                              {codeUnauth, "system keyspace is not user-modifiable"},
	} {
		wantErr(t, s, stmt, want.code, want.msg)
	}
}

func TestAlterTable(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		"CREATE TABLE t (k int, c int, v text, w int, PRIMARY KEY (k, c))",
		"ALTER TABLE t ADD x list<int>",
		"ALTER TABLE t ADD (y text, z int static)",
		"ALTER TABLE t ADD IF NOT EXISTS y text",
		"ALTER TABLE t DROP w",
		"ALTER TABLE t DROP IF EXISTS w",
		"ALTER TABLE t RENAME c TO cc AND k TO kk",
		"ALTER TABLE t WITH comment = 'altered' AND gc_grace_seconds = 10",
		"ALTER TABLE IF EXISTS nope ADD q int",
	)
	var names []string
	iter := s.Query("SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 't'").Iter()
	var n string
	for iter.Scan(&n) {
		names = append(names, n)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	// In system_schema's clustering order: by name.
	if got := strings.Join(names, ","); got != "cc,kk,v,x,y,z" {
		t.Errorf("columns after ALTER: %s", got)
	}
	var comment string
	var gc int
	if err := s.Query("SELECT comment, gc_grace_seconds FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 't'").Scan(&comment, &gc); err != nil || comment != "altered" || gc != 10 {
		t.Errorf("options after ALTER WITH: %q %d %v", comment, gc, err)
	}
	var dropped, typ string
	if err := s.Query("SELECT column_name, type FROM system_schema.dropped_columns WHERE keyspace_name = 'ks' AND table_name = 't'").Scan(&dropped, &typ); err != nil || dropped != "w" || typ != "int" {
		t.Errorf("dropped_columns: %q %q %v", dropped, typ, err)
	}
	for stmt, want := range map[string]struct {
		code int
		msg  string
	}{
		"ALTER TABLE t ADD v int":            {codeInvalid, "Column with name 'v' already exists"},
		"ALTER TABLE t ADD w text":           {codeInvalid, "Cannot re-add previously dropped column 'w' of type text, incompatible with previous type int"},
		"ALTER TABLE t ADD n counter":        {codeConfig, "ks.t: Cannot have a counter column (\"n\") in a non counter table"},
		"ALTER TABLE t DROP kk":              {codeInvalid, "Cannot drop PRIMARY KEY column kk"},
		"ALTER TABLE t DROP nope":            {codeInvalid, "Column nope was not found in table 'ks.t'"},
		"ALTER TABLE t RENAME v TO vv":       {codeInvalid, "Cannot rename non PRIMARY KEY column v"},
		"ALTER TABLE t RENAME cc TO v":       {codeInvalid, "another column with that name already exists"},
		"ALTER TABLE t WITH foo = 'bar'":     {codeSyntax, "Unknown property 'foo'"},
		"ALTER TABLE nope ADD q int":         {codeInvalid, "Table 'ks.nope' doesn't exist"},
		"ALTER TABLE t ALTER v TYPE blob":    {codeInvalid, "Altering column types is no longer supported"},
		"ALTER TABLE system.local ADD q int": {codeUnauth, "not user-modifiable"},
	} {
		wantErr(t, s, stmt, want.code, want.msg)
	}
}

func TestTypeDDL(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		"CREATE TYPE a (x int, y text)",
		"CREATE TYPE IF NOT EXISTS a (z int)",
		"CREATE TYPE b (inner frozen<a>, many list<frozen<a>>)",
		"CREATE TABLE t (k int PRIMARY KEY, v frozen<b>)",
	)
	var names, types []string
	if err := s.Query("SELECT field_names, field_types FROM system_schema.types WHERE keyspace_name = 'ks' AND type_name = 'b'").Scan(&names, &types); err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "inner,many" || strings.Join(types, ",") != "frozen<a>,frozen<list<frozen<a>>>" {
		t.Errorf("type b: %v %v", names, types)
	}
	wantErr(t, s, "CREATE TYPE a (q int)", codeInvalid, "A user type with name 'a' already exists")
	wantErr(t, s, "CREATE TYPE c (q int, q text)", codeInvalid, "Duplicate field name 'q' in type 'c'")
	wantErr(t, s, "CREATE TYPE c (q counter)", codeInvalid, "A user type cannot contain counters")
	wantErr(t, s, "CREATE TYPE int (q int)", codeInvalid, "is reserved")
	wantErr(t, s, "DROP TYPE a", codeInvalid, "Cannot drop user type 'ks.a' as it is still used by")
	wantErr(t, s, "DROP TYPE b", codeInvalid, "Cannot drop user type 'ks.b' as it is still used by tables t")
	wantErr(t, s, "DROP TYPE nope", codeInvalid, "Type 'ks.nope' doesn't exist")
	cqltest.Exec(t, s, "DROP TABLE t", "DROP TYPE b", "DROP TYPE a", "DROP TYPE IF EXISTS a")
	var n int
	if err := s.Query("SELECT count(*) FROM system_schema.types WHERE keyspace_name = 'ks'").Scan(&n); err != nil || n != 0 {
		t.Errorf("types left: %d %v", n, err)
	}
}

func TestDropAndTruncateRemoveData(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TABLE t (k int PRIMARY KEY, v text)")
	for i := range 10 {
		if err := s.Query("INSERT INTO t (k, v) VALUES (?, ?)", i, "x").Exec(); err != nil {
			t.Fatal(err)
		}
	}
	srv.Flush(t, "ks", "t")
	if err := s.Query("INSERT INTO t (k, v) VALUES (100, 'memtable')").Exec(); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		var n int
		if err := s.Query("SELECT count(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 11 {
		t.Fatalf("%d rows before TRUNCATE, want 11", n)
	}
	cqltest.Exec(t, s, "TRUNCATE t")
	if n := count(); n != 0 {
		t.Errorf("%d rows after TRUNCATE", n)
	}
	if len(srv.View.SSTables(srv.View.Table("ks", "t").ID)) != 0 {
		t.Error("SSTables left after TRUNCATE")
	}
	wantErr(t, s, "TRUNCATE nope", codeInvalid, "unconfigured table nope")

	// DROP TABLE, then a table of the same name starts empty.
	cqltest.Exec(t, s, "INSERT INTO t (k, v) VALUES (1, 'again')", "DROP TABLE t", "DROP TABLE IF EXISTS t")
	wantErr(t, s, "DROP TABLE t", codeInvalid, "Table 'ks.t' doesn't exist")
	cqltest.Exec(t, s, "CREATE TABLE t (k int PRIMARY KEY, v text)")
	if n := count(); n != 0 {
		t.Errorf("%d rows in a new table of a dropped one's name", n)
	}
	cqltest.Exec(t, s, "INSERT INTO t (k, v) VALUES (1, 'x')", "DROP KEYSPACE ks")
	wantErr(t, s, "SELECT * FROM ks.t", codeInvalid, "Keyspace ks does not exist")
}

// TestTableOptions: every Cassandra 4.0 table option is stored, shown by
// system_schema.tables and DESCRIBE, changed by ALTER TABLE, and checked
// with Cassandra's messages.
func TestTableOptions(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		`CREATE TABLE o (k int PRIMARY KEY, v int) WITH caching = {'keys': 'none', 'rows_per_partition': '100'}
		  AND bloom_filter_fp_chance = 0.1 AND crc_check_chance = 0.5 AND min_index_interval = 64
		  AND max_index_interval = 1024 AND memtable_flush_period_in_ms = 60000 AND speculative_retry = '95.5PERCENTILE'
		  AND additional_write_policy = 'max(99p, 20ms)' AND read_repair = 'none' AND cdc = true
		  AND extensions = {'ext': 0x0a0b} AND dclocal_read_repair_chance = 0.1 AND read_repair_chance = 0`,
		"CREATE TABLE d (k int PRIMARY KEY)",
	)
	type opts struct {
		caching               map[string]string
		fp, crc               float64
		minIdx, maxIdx, flush int
		spec, awp, rr         string
		cdc                   bool
		ext                   map[string][]byte
	}
	read := func(table string) opts {
		t.Helper()
		var o opts
		err := s.Query(`SELECT caching, bloom_filter_fp_chance, crc_check_chance, min_index_interval, max_index_interval,
			memtable_flush_period_in_ms, speculative_retry, additional_write_policy, read_repair, cdc, extensions
			FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = ?`, table).
			Scan(&o.caching, &o.fp, &o.crc, &o.minIdx, &o.maxIdx, &o.flush, &o.spec, &o.awp, &o.rr, &o.cdc, &o.ext)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	want := opts{map[string]string{"keys": "NONE", "rows_per_partition": "100"}, 0.1, 0.5, 64, 1024, 60000,
		"95.5p", "MAX(99p,20ms)", "NONE", true, map[string][]byte{"ext": {0x0a, 0x0b}}}
	if got := read("o"); !reflect.DeepEqual(got, want) {
		t.Errorf("options of o:\n%+v\nwant\n%+v", got, want)
	}
	def := opts{map[string]string{"keys": "ALL", "rows_per_partition": "NONE"}, 0.01, 1, 128, 2048, 0,
		"99p", "99p", "BLOCKING", false, map[string][]byte{}}
	if got := read("d"); !reflect.DeepEqual(got, def) {
		t.Errorf("options of d:\n%+v\nwant\n%+v", got, def)
	}
	ddl := describeRows(t, s, "DESCRIBE TABLE ks.o")[0][3]
	for _, w := range []string{
		"additional_write_policy = 'MAX(99p,20ms)'", "bloom_filter_fp_chance = 0.1",
		"caching = {'keys': 'NONE', 'rows_per_partition': '100'}", "cdc = true", "crc_check_chance = 0.5",
		"extensions = {'ext': 0x0a0b}", "max_index_interval = 1024", "memtable_flush_period_in_ms = 60000",
		"min_index_interval = 64", "read_repair = 'NONE'", "speculative_retry = '95.5p'",
	} {
		if !strings.Contains(ddl, w) {
			t.Errorf("DESCRIBE lacks %q:\n%s", w, ddl)
		}
	}
	// DESCRIBE's statement recreates the options exactly.
	cqltest.Exec(t, s, "DROP TABLE o", ddl)
	if got := read("o"); !reflect.DeepEqual(got, want) {
		t.Errorf("options of o recreated from DESCRIBE:\n%+v\nwant\n%+v", got, want)
	}

	// ALTER changes only the options given.
	cqltest.Exec(t, s, "ALTER TABLE d WITH speculative_retry = '50ms' AND caching = {'rows_per_partition': 'ALL'} AND cdc = false AND crc_check_chance = 0")
	want = def
	want.spec, want.caching, want.crc = "50ms", map[string]string{"keys": "NONE", "rows_per_partition": "ALL"}, 0
	if got := read("d"); !reflect.DeepEqual(got, want) {
		t.Errorf("options of d after ALTER:\n%+v\nwant\n%+v", got, want)
	}
	cqltest.Exec(t, s, "ALTER TABLE d WITH speculative_retry = 'always' AND additional_write_policy = 'NEVER'")
	if got := read("d"); got.spec != "ALWAYS" || got.awp != "NEVER" {
		t.Errorf("ALWAYS/NEVER read as %q %q", got.spec, got.awp)
	}

	for stmt, want := range map[string]struct {
		code int
		msg  string
	}{
		"bloom_filter_fp_chance = 1.5":           {codeConfig, "bloom_filter_fp_chance must be larger than 6.71E-5 and less than or equal to 1.0 (got 1.5)"},
		"bloom_filter_fp_chance = 0.0000001":     {codeConfig, "(got 1.0E-7)"},
		"crc_check_chance = 2":                   {codeConfig, "crc_check_chance must be larger than or equal to 0 and smaller than or equal to 1.0 (got 2.0)"},
		"min_index_interval = 0":                 {codeConfig, "min_index_interval must be greater than or equal to 1 (got 0)"},
		"max_index_interval = 100":               {codeConfig, "max_index_interval must be greater than or equal to min_index_interval (128) (got 100)"},
		"memtable_flush_period_in_ms = -1":       {codeConfig, "memtable_flush_period_in_ms must be greater than or equal to 0 (got -1)"},
		"caching = {'keys': 'some'}":             {codeConfig, "Invalid value 'some' for caching sub-option 'keys': only 'ALL' and 'NONE' are allowed"},
		"caching = {'rows_per_partition': 'x'}":  {codeConfig, "Invalid value 'x' for caching sub-option 'rows_per_partition': only 'ALL', 'NONE', and integer values are allowed"},
		"caching = {'keys': 'ALL', 'rows': '1'}": {codeConfig, "Invalid caching sub-options [rows]: only 'keys' and 'rows_per_partition' are allowed"},
		"caching = 'ALL'":                        {codeSyntax, "Invalid value for property 'caching'. It should be a map."},
		"speculative_retry = 'sometimes'":        {codeConfig, "Invalid value sometimes for option 'speculative_retry'"},
		"speculative_retry = '100p'":             {codeConfig, "Invalid value 100p for PERCENTILE option 'speculative_retry': must be between (0.0 and 100.0)"},
		"speculative_retry = 'MIN(10ms,20ms)'":   {codeConfig, "Invalid value MIN(10ms,20ms) for option 'speculative_retry'"},
		"additional_write_policy = '5x'":         {codeConfig, "Invalid value 5x for option 'speculative_retry'"},
		"read_repair = 'sometimes'":              {codeConfig, "No enum constant org.apache.cassandra.service.reads.repair.ReadRepairStrategy.SOMETIMES"},
		"cdc = 'maybe'":                          {codeSyntax, "Invalid boolean value maybe for 'cdc'"},
		"bloom_filter_fp_chance = 'x'":           {codeSyntax, "Invalid double value x for 'bloom_filter_fp_chance'"},
		"memtable = 'x'":                         {codeSyntax, "Unknown property 'memtable'"},
		"comment = 'a' AND comment = 'b'":        {codeSyntax, "Multiple definition for property 'comment'"},
	} {
		wantErr(t, s, "CREATE TABLE x (k int PRIMARY KEY) WITH "+stmt, want.code, want.msg)
		wantErr(t, s, "ALTER TABLE d WITH "+stmt, want.code, want.msg)
	}
}

// TestAlterType: ADD and RENAME of a user type's fields, with rows written
// before the change reading the new field as null, in frozen and non-frozen
// columns alike.
func TestAlterType(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		"CREATE TYPE addr (street text, zip int)",
		"CREATE TYPE pt (x int)",
		"CREATE TABLE t (k int PRIMARY KEY, u addr, f frozen<addr>, l list<frozen<addr>>)",
		"CREATE TABLE keyed (k frozen<pt> PRIMARY KEY, v int)",
		"INSERT INTO t (k, u, f, l) VALUES (1, {street: 'a', zip: 1}, {street: 'b', zip: 2}, [{street: 'c', zip: 3}])",
		"ALTER TYPE addr ADD city text",
		"ALTER TYPE addr ADD IF NOT EXISTS city int",
		"INSERT INTO t (k, u, f) VALUES (2, {street: 'd', zip: 4, city: 'x'}, {street: 'e', zip: 5, city: 'y'})",
	)
	// The reads below run the same statement before and after each ALTER.
	// The server plans it again and answers with the new result metadata,
	// which gocql only reads when it does not skip metadata.
	c := srv.Cluster()
	c.Keyspace, c.DisableSkipMetadata = "ks", true
	s, err := c.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	read := func(k int) (u, f map[string]any, l []map[string]any) {
		t.Helper()
		if err := s.Query("SELECT u, f, l FROM t WHERE k = ?", k).Scan(&u, &f, &l); err != nil {
			t.Fatal(err)
		}
		return u, f, l
	}
	// A value ends before the fields it lacks (trailing nulls are not
	// written, and frozen values stay as written), which gocql leaves out of
	// the map: absent or zero is null.
	null := func(m map[string]any, field string) bool { v, ok := m[field]; return !ok || v == "" }
	u, f, l := read(1)
	if u["street"] != "a" || u["zip"] != 1 || !null(u, "city") || f["street"] != "b" || !null(f, "city") ||
		len(l) != 1 || l[0]["street"] != "c" || !null(l[0], "city") {
		t.Errorf("row written before ADD: %v %v %v", u, f, l)
	}
	var city *string
	if err := s.Query("SELECT u.city FROM t WHERE k = 1").Scan(&city); err != nil || city != nil {
		t.Errorf("u.city of an old row: %v %v, want null", city, err)
	}
	if u, f, _ := read(2); u["city"] != "x" || f["city"] != "y" {
		t.Errorf("row written after ADD: %v %v", u, f)
	}
	cqltest.Exec(t, s,
		"UPDATE t SET u.city = 'z' WHERE k = 1",
		"ALTER TYPE addr RENAME street TO line AND city TO town",
		"ALTER TYPE addr RENAME IF EXISTS nope TO other",
		"ALTER TYPE IF EXISTS nope ADD q int",
	)
	if u, f, _ := read(1); u["line"] != "a" || u["town"] != "z" || f["line"] != "b" || !null(f, "town") {
		t.Errorf("row 1 after RENAME: %v %v", u, f)
	}
	var town string
	if err := s.Query("SELECT u.town FROM t WHERE k = 2").Scan(&town); err != nil || town != "x" {
		t.Errorf("u.town: %q %v", town, err)
	}
	var names []string
	if err := s.Query("SELECT field_names FROM system_schema.types WHERE keyspace_name = 'ks' AND type_name = 'addr'").Scan(&names); err != nil ||
		strings.Join(names, ",") != "line,zip,town" {
		t.Errorf("field names %v %v", names, err)
	}
	// A rename of a type in a partition key is allowed: values are positional.
	cqltest.Exec(t, s, "INSERT INTO keyed (k, v) VALUES ({x: 1}, 7)", "ALTER TYPE pt RENAME x TO y")
	var v int
	if err := s.Query("SELECT v FROM keyed WHERE k = {y: 1}").Scan(&v); err != nil || v != 7 {
		t.Errorf("keyed row after RENAME: %d %v", v, err)
	}
	for stmt, want := range map[string]struct {
		code int
		msg  string
	}{
		"ALTER TYPE addr ADD zip text":          {codeInvalid, "Cannot add field zip to type ks.addr: a field with name zip already exists"},
		"ALTER TYPE addr ADD self frozen<addr>": {codeInvalid, "Cannot add new field self of type frozen<addr> to user type ks.addr as it would create a circular reference"},
		"ALTER TYPE addr ADD n counter":         {codeInvalid, "A user type cannot contain counters"},
		"ALTER TYPE addr ADD n frozen<nosuch>":  {codeInvalid, "nosuch"},
		"ALTER TYPE pt ADD z int":               {codeInvalid, "Cannot add new field z of type int to user type ks.pt as the type is being used in partition key by the following tables: ks.keyed"},
		"ALTER TYPE addr RENAME nope TO other":  {codeInvalid, "Unkown field nope in user type ks.addr"},
		"ALTER TYPE addr RENAME line TO zip":    {codeInvalid, "Duplicate field name zip in type ks"},
		"ALTER TYPE addr ALTER zip TYPE bigint": {codeInvalid, "Altering field types is no longer supported"},
		"ALTER TYPE nope ADD q int":             {codeInvalid, "Type ks.nope doesn't exist"},
		"ALTER TYPE system.nope ADD q int":      {codeUnauth, "not user-modifiable"},
	} {
		wantErr(t, s, stmt, want.code, want.msg)
	}
}

// TestUnifiedCompactionOptions: the Unified Compaction Strategy's class and
// options are accepted and stored as given.
func TestUnifiedCompactionOptions(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, `CREATE TABLE u (k int PRIMARY KEY) WITH compaction = {'class': 'UnifiedCompactionStrategy', 'scaling_parameters': 'T4', 'target_sstable_size': '128MiB'}`)
	var m map[string]string
	if err := s.Query(`SELECT compaction FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 'u'`).Scan(&m); err != nil {
		t.Fatal(err)
	}
	if m["scaling_parameters"] != "T4" || m["target_sstable_size"] != "128MiB" || !strings.HasSuffix(m["class"], "UnifiedCompactionStrategy") {
		t.Fatalf("stored compaction options %v", m)
	}
}
