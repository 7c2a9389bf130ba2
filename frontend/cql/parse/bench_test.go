package parse

import "testing"

// BenchmarkParse measures parsing the statements drivers and load tools
// send unprepared most often. SetBytes makes the MB/s column the
// parser's throughput.
func BenchmarkParse(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"select", "SELECT pk, ck, v FROM scylla_bench.test WHERE pk = ? AND ck >= ? AND ck < ? LIMIT 100"},
		{"insert", `INSERT INTO keyspace1.standard1 (key, "C0", "C1", "C2", "C3", "C4") VALUES (0x4b343530, 0x11, 0x22, 0x33, 0x44, 0x55) USING TTL 3600`},
		{"update", "UPDATE counters SET c1 = c1 + 1, c2 = c2 + 1, c3 = c3 - 2 WHERE pk = 42 AND ck = 7"},
		{"system", "SELECT peer, data_center, host_id, preferred_ip, rack, release_version, rpc_address, schema_version, tokens FROM system.peers"},
		{"batch", "BEGIN UNLOGGED BATCH INSERT INTO t (a, b) VALUES (1, 'x'); INSERT INTO t (a, b) VALUES (2, 'y'); UPDATE t SET b = 'z' WHERE a = 3; APPLY BATCH"},
		{"create_table", "CREATE TABLE IF NOT EXISTS ks.t (a int, b text, c timeuuid, m map<text, frozen<list<int>>>, PRIMARY KEY ((a, b), c)) WITH CLUSTERING ORDER BY (c DESC) AND compaction = {'class': 'LeveledCompactionStrategy'} AND comment = 'x'"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Statement(c.text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
