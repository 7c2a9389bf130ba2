package exec_test

import (
	"maps"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltest"
)

// The audit of CREATE and ALTER TABLE against Cassandra 4.0/4.1
// (CreateTableStatement, AlterTableStatement, CompactionParams,
// CompressionParams): each case is an answer that differed, with
// Cassandra's code and message.

func TestAuditCreateTableErrors(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TYPE u (x int)")
	for stmt, want := range map[string]struct {
		code int
		msg  string
	}{
		// Primary key checks, in CreateTableStatement's order and words.
		"CREATE TABLE x (k int, v int, PRIMARY KEY (z))":           {codeInvalid, "Unknown column 'z' referenced in PRIMARY KEY for table 'x'"},
		"CREATE TABLE ks.x (k int, v int, PRIMARY KEY ((k, k)))":   {codeInvalid, "Duplicate column 'k' in PRIMARY KEY clause for table 'x'"},
		"CREATE TABLE x (k int, c int, PRIMARY KEY (k, c, k))":     {codeInvalid, "Duplicate column 'k' in PRIMARY KEY clause for table 'x'"},
		"CREATE TABLE x (k list<int> PRIMARY KEY)":                 {codeInvalid, "Invalid non-frozen collection type list<int> for PRIMARY KEY column 'k'"},
		"CREATE TABLE x (k int, c set<int>, PRIMARY KEY (k, c))":   {codeInvalid, "Invalid non-frozen collection type set<int> for PRIMARY KEY column 'c'"},
		"CREATE TABLE x (k u PRIMARY KEY)":                         {codeInvalid, "Invalid non-frozen user-defined type u for PRIMARY KEY column 'k'"},
		"CREATE TABLE x (k int, s int static PRIMARY KEY, c int)":  {codeInvalid, "Static column 's' cannot be part of the PRIMARY KEY"},
		"CREATE TABLE x (k int, c int static, PRIMARY KEY (k, c))": {codeInvalid, "Static column 'c' cannot be part of the PRIMARY KEY"},
		// CLUSTERING ORDER BY: a prefix, in order; nothing beyond the
		// clustering columns; no column twice.
		"CREATE TABLE x (k int PRIMARY KEY) WITH CLUSTERING ORDER BY (k ASC)":                                 {codeInvalid, "Only clustering columns can be defined in CLUSTERING ORDER directive"},
		"CREATE TABLE x (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c ASC, k DESC)":          {codeInvalid, "Only clustering columns can be defined in CLUSTERING ORDER directive"},
		"CREATE TABLE x (k int, c int, d int, PRIMARY KEY (k, c, d)) WITH CLUSTERING ORDER BY (v ASC)":        {codeInvalid, "Missing CLUSTERING ORDER for column c"},
		"CREATE TABLE x (k int, c int, d int, PRIMARY KEY (k, c, d)) WITH CLUSTERING ORDER BY (d ASC)":        {codeInvalid, "Missing CLUSTERING ORDER for column c"},
		"CREATE TABLE x (k int, c int, d int, PRIMARY KEY (k, c, d)) WITH CLUSTERING ORDER BY (c ASC, c ASC)": {codeInvalid, "Duplicate column 'c' in CLUSTERING ORDER BY clause for table 'x'"},
		// TableMetadata.validate: the name after the definition, as a
		// ConfigurationException naming the table.
		`CREATE TABLE "My Table" (k int PRIMARY KEY)`:                                         {codeConfig, `ks.My Table: Table name must not be empty, more than 48 characters long, or contain non-alphanumeric-underscore characters (got "My Table")`},
		"CREATE TABLE a123456789b123456789c123456789d123456789e123456789 (k int PRIMARY KEY)": {codeConfig, "Table name must not be empty, more than 48 characters long"},
		`CREATE TABLE "My Table" (k int, PRIMARY KEY (z))`:                                    {codeInvalid, "Unknown column 'z' referenced in PRIMARY KEY for table 'My Table'"},
		// Option values of the wrong kind.
		"CREATE TABLE x (k int PRIMARY KEY) WITH comment = {'a': 'b'}":                                                                    {codeSyntax, "Invalid value for property 'comment'. It should be a string"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH cdc = 'maybe'":                                                                           {codeSyntax, "Invalid boolean value maybe for 'cdc'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'."},
		"CREATE TABLE x (k int PRIMARY KEY) WITH id = 5a1c395e-b41f-11e5-9f22-ba0be0483c18":                                               {codeConfig, "The 'id' option is not supported: Sediment assigns table ids"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'min_threshold': '4'}":                                                     {codeConfig, "Missing sub-option 'class' for the 'compaction' option"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'Nope'}":                                                          {codeConfig, "Unable to find compaction strategy class 'org.apache.cassandra.db.compaction.Nope'"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'com.example.Nope'}":                                              {codeConfig, "Unable to find compaction strategy class 'com.example.Nope'"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy', 'foo': 'bar'}":                       {codeConfig, "Properties specified [foo] are not understood by LeveledCompactionStrategy"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'sstable_size_in_mb': '160'}":     {codeConfig, "Properties specified [sstable_size_in_mb] are not understood by SizeTieredCompactionStrategy"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 'big'}":        {codeConfig, "big is not a parsable int (base10) for sstable_size_in_mb"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 0}":            {codeConfig, "sstable_size_in_mb must be larger than 0, but was 0"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy', 'fanout_size': 'x'}":                 {codeConfig, "1 is not a parsable int (base10) for fanout_size"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy', 'fanout_size': -2, 'foo': 1}":        {codeConfig, "fanout_size must be larger than 0, but was -2"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'min_sstable_size': 'x'}":         {codeConfig, "x is not a parsable int (base10) for min_sstable_size"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'TimeWindowCompactionStrategy', 'min_sstable_size': -1}":          {codeConfig, "min_sstable_size must be non negative: -1"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'bucket_low': 'x'}":               {codeConfig, "x is not a parsable float for bucket_low"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy', 'bucket_high': 0.5}":                 {codeConfig, "bucket_high value (0.5) is less than or equal to the bucket_low value (0.5)"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'min_threshold': 'x'}":            {codeConfig, "Invalid value x for 'min_threshold' compaction sub-option - must be an integer"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'max_threshold': '-3'}":           {codeConfig, "Invalid value -3 for 'max_threshold' compaction sub-option - must be an integer"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'min_threshold': 1}":              {codeConfig, "Min compaction threshold cannot be less than 2 (got 1)"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'min_threshold': 40}":             {codeConfig, "Min compaction threshold (got 40) cannot be greater than max compaction threshold (got 32)"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy', 'max_threshold': 0}":                 {codeConfig, "Disabling compaction by setting compaction thresholds to 0 has been removed, set the compaction option 'enabled' to false instead."},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'Nope'}":                                                         {codeConfig, "Could not create Compression for type org.apache.cassandra.io.compress.Nope"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'chunk_length_in_kb': 64}":                                                {codeConfig, "Missing sub-option 'class' for the 'compression' option."},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'enabled': false, 'class': 'LZ4Compressor'}":                              {codeConfig, "If the 'enabled' option is set to false no other options must be specified"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': ''}":                                                             {codeConfig, "The 'class' option must not be empty. To disable compression use 'enabled' : false"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'sstable_compression': 'LZ4Compressor'}":        {codeConfig, "The 'sstable_compression' option must not be used if the compression algorithm is already specified by the 'class' option"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 4, 'chunk_length_kb': 4}": {codeConfig, "The 'chunk_length_kb' option must not be used if the chunk length is already specified by the 'chunk_length_in_kb' option"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 'x'}":                     {codeConfig, "Invalid value for chunk_length_in_kb"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 4194304}":                 {codeConfig, "Value of chunk_length_in_kb is too large (4194304)"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 0}":                       {codeConfig, "Invalid negative or null chunk_length_in_kb"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'compression_level': 3}":                        {codeConfig, "Unknown compression options compression_level"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'SnappyCompressor', 'lz4_compressor_type': 'fast'}":              {codeConfig, "Unknown compression options lz4_compressor_type"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'lz4_compressor_type': 'slow'}":                 {codeConfig, "Invalid compressor type 'slow' specified for LZ4 parameter 'lz4_compressor_type'. Valid options are [high, fast]."},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'lz4_high_compressor_level': 18}":               {codeConfig, "Invalid value [18] for parameter 'lz4_high_compressor_level'. Value must be between 1 and 17."},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'ZstdCompressor', 'compression_level': 23}":                      {codeConfig, "ZstdCompressor.create() threw an error: java.lang.IllegalArgumentException compression_level=23 is invalid"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'ZstdCompressor', 'compression_level': 'x'}":                     {codeConfig, `ZstdCompressor.create() threw an error: java.lang.NumberFormatException For input string: "x"`},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'crc_check_chance': 0.5, 'enabled': 'no'}":                                {codeConfig, "If the 'enabled' option is set to false no other options must be specified"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'min_compress_ratio': 0.5}":                     {codeConfig, "min_compress_ratio can either be 0 or greater than or equal to 1"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'min_compress_ratio': 'x'}":                     {codeConfig, "min_compress_ratio must be a number (got x)"},
		"CREATE TABLE x (k int PRIMARY KEY) WITH compression = {'sstable_compression': '', 'chunk_length_kb': 4, 'foo': 'bar'}":           {codeConfig, "Unknown compression options ([foo]) since no compression class found"},
	} {
		wantErr(t, s, stmt, want.code, want.msg)
	}
}

// TestAuditCreateTableIfNotExists: Cassandra looks for the table before it
// reads the definition, so IF NOT EXISTS on an existing table succeeds
// whatever the definition.
func TestAuditCreateTableIfNotExists(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		"CREATE TABLE t (k int PRIMARY KEY)",
		"CREATE TABLE IF NOT EXISTS t (k int, PRIMARY KEY (nope))",
	)
	wantErr(t, s, "CREATE TABLE IF NOT EXISTS t2 (k int, PRIMARY KEY (nope))", codeInvalid, "Unknown column 'nope' referenced in PRIMARY KEY for table 't2'")
}

func TestAuditCreateTableStored(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		// A CLUSTERING ORDER BY of a prefix: the rest stay ASC.
		"CREATE TABLE p (k int, c int, d int, e int, PRIMARY KEY (k, c, d, e)) WITH CLUSTERING ORDER BY (c DESC, d DESC)",
		"CREATE TABLE off1 (k int PRIMARY KEY) WITH compression = {'enabled': false}",
		"CREATE TABLE off2 (k int PRIMARY KEY) WITH compression = {'enabled': 'no'}", // Boolean.parseBoolean
		"CREATE TABLE off3 (k int PRIMARY KEY) WITH compression = {}",
		"CREATE TABLE snap (k int PRIMARY KEY) WITH compression = {'class': 'SnappyCompressor'}",
		"CREATE TABLE old (k int PRIMARY KEY) WITH compression = {'sstable_compression': 'DeflateCompressor', 'chunk_length_kb': '032'}",
		"CREATE TABLE lz (k int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor', 'lz4_compressor_type': 'high', 'lz4_high_compressor_level': 12, 'min_compress_ratio': 2}",
		"CREATE TABLE zs (k int PRIMARY KEY) WITH compression = {'class': 'org.apache.cassandra.io.compress.ZstdCompressor', 'compression_level': -5}",
		"CREATE TABLE tw (k int PRIMARY KEY) WITH compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'DAYS', 'compaction_window_size': 1, 'min_threshold': 6}",
	)
	iter := s.Query("SELECT column_name, clustering_order FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 'p'").Iter()
	order := map[string]string{}
	var name, o string
	for iter.Scan(&name, &o) {
		order[name] = o
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"k": "none", "c": "desc", "d": "desc", "e": "asc"}; !maps.Equal(order, want) {
		t.Errorf("clustering orders %v, want %v", order, want)
	}

	const lz4, zstd, snappy, deflate = "org.apache.cassandra.io.compress.LZ4Compressor", "org.apache.cassandra.io.compress.ZstdCompressor",
		"org.apache.cassandra.io.compress.SnappyCompressor", "org.apache.cassandra.io.compress.DeflateCompressor"
	for table, want := range map[string]map[string]string{
		"off1": {"enabled": "false"},
		"off2": {"enabled": "false"},
		"off3": {"enabled": "false"},
		"snap": {"class": snappy, "chunk_length_in_kb": "16"},
		"old":  {"class": deflate, "chunk_length_in_kb": "32"},
		"lz":   {"class": lz4, "chunk_length_in_kb": "16", "lz4_compressor_type": "high", "lz4_high_compressor_level": "12", "min_compress_ratio": "2.0"},
		"zs":   {"class": zstd, "chunk_length_in_kb": "16", "compression_level": "-5"},
	} {
		var got map[string]string
		if err := s.Query("SELECT compression FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = ?", table).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("compression of %s: %v, want %v", table, got, want)
		}
	}
	var compaction map[string]string
	if err := s.Query("SELECT compaction FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 'tw'").Scan(&compaction); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"class": "org.apache.cassandra.db.compaction.TimeWindowCompactionStrategy",
		"compaction_window_unit": "DAYS", "compaction_window_size": "1", "min_threshold": "6"}; !maps.Equal(compaction, want) {
		t.Errorf("compaction of tw: %v, want %v", compaction, want)
	}
}

func TestAuditAlterTable(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s,
		"CREATE TYPE u (x int)",
		"CREATE TABLE t (k int, c int, v int, w int, uu u, PRIMARY KEY (k, c))",
		"CREATE TABLE n (k int PRIMARY KEY, hits counter)",
		`CREATE TABLE "Q" (k int PRIMARY KEY, v int)`,
		// Cassandra drops a column named twice once.
		"ALTER TABLE t DROP (w, w)",
		"ALTER TABLE t RENAME IF EXISTS nope TO other",
	)
	for stmt, want := range map[string]struct {
		code int
		msg  string
	}{
		"ALTER TABLE t DROP nope":                 {codeInvalid, "Column nope was not found in table 'ks.t'"},
		`ALTER TABLE "Q" DROP nope`:               {codeInvalid, `Column nope was not found in table 'ks."Q"'`},
		"ALTER TABLE t RENAME nope TO other":      {codeInvalid, "Column nope was not found in table ks.t"},
		"ALTER TABLE t RENAME c TO v":             {codeInvalid, "Cannot rename column c to v in table 'ks.t'; another column with that name already exists"},
		"ALTER TABLE t DROP uu":                   {codeInvalid, "Cannot drop non-frozen column uu of user type u"},
		"ALTER TABLE t ADD v nosuch":              {codeInvalid, "Unknown type ks.nosuch"}, // the type first, then the name
		"ALTER TABLE t ADD n counter":             {codeConfig, `ks.t: Cannot have a counter column ("n") in a non counter table`},
		"ALTER TABLE n ADD t text":                {codeConfig, `ks.n: Cannot have a non counter column ("t") in a counter table`},
		"ALTER TABLE t WITH cdc = 'x'":            {codeSyntax, "Invalid boolean value x for 'cdc'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'."},
		"ALTER TABLE t WITH comment = {'a': 'b'}": {codeSyntax, "Invalid value for property 'comment'. It should be a string"},
		"ALTER TABLE t WITH compaction = {'class': 'LeveledCompactionStrategy', 'bucket_high': '2', 'foo': '1', 'bar': '2'}": {codeConfig, "Properties specified [bar, foo] are not understood by LeveledCompactionStrategy"},
	} {
		wantErr(t, s, stmt, want.code, want.msg)
	}
	// A dropped column comes back with a type its last dropped one reads,
	// as AbstractType.isValueCompatibleWith says.
	cqltest.Exec(t, s,
		"ALTER TABLE t ADD (b blob, tx text, vi varint, ts timestamp)",
		"ALTER TABLE t DROP (b, tx, vi, ts)",
		"ALTER TABLE t ADD (b map<int, text>, tx ascii, vi bigint, ts bigint)",
		"ALTER TABLE t DROP (b, tx, vi, ts)",
	)
	for stmt, msg := range map[string]string{
		"ALTER TABLE t ADD tx int":      "Cannot re-add previously dropped column 'tx' of type int, incompatible with previous type ascii",
		"ALTER TABLE t ADD vi text":     "Cannot re-add previously dropped column 'vi' of type text, incompatible with previous type bigint",
		"ALTER TABLE t ADD w list<int>": "Cannot re-add previously dropped column 'w' of type list<int>, incompatible with previous type int",
		"ALTER TABLE t ADD ts timeuuid": "Cannot re-add previously dropped column 'ts' of type timeuuid, incompatible with previous type bigint",
	} {
		wantErr(t, s, stmt, codeInvalid, msg)
	}

	// A dropped counter column of a counter table cannot come back.
	cqltest.Exec(t, s, "ALTER TABLE n ADD more counter", "ALTER TABLE n DROP hits")
	wantErr(t, s, "ALTER TABLE n ADD hits counter", codeInvalid, "Cannot re-add previously dropped counter column hits")
	var cols []string
	iter := s.Query("SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 't'").Iter()
	var c string
	for iter.Scan(&c) {
		cols = append(cols, c)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if len(cols) != 4 {
		t.Errorf("columns of t after DROP (w, w): %v", cols)
	}
}
