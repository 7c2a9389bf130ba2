package exec_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltest"
	"github.com/sedimentdb/sediment/manifest"
)

func TestSystemLocal(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "")
	var (
		key, cluster, release, partitioner, dc, rack string
		hostID, schemaVersion                        gocql.UUID
		rpcPort                                      int
		tokens                                       []string
	)
	err := s.Query("SELECT key, cluster_name, release_version, partitioner, data_center, rack, host_id, schema_version, rpc_port, tokens FROM system.local WHERE key = 'local'").
		Scan(&key, &cluster, &release, &partitioner, &dc, &rack, &hostID, &schemaVersion, &rpcPort, &tokens)
	if err != nil {
		t.Fatal(err)
	}
	if key != "local" || cluster != "test" || release != "4.0.11" || partitioner != "org.apache.cassandra.dht.Murmur3Partitioner" ||
		dc != "datacenter1" || rack != "rack1" || strconv.Itoa(rpcPort) != portOf(srv.Addr) {
		t.Errorf("system.local: %q %q %q %q %q %q port %d", key, cluster, release, partitioner, dc, rack, rpcPort)
	}
	if schemaVersion.String() != srv.View.SchemaVersion().String() {
		t.Errorf("schema_version %s, want the view's %s", schemaVersion, srv.View.SchemaVersion())
	}
	if len(tokens) != 16 {
		t.Errorf("%d tokens, want 16", len(tokens))
	}
	// One frontend reports the whole ring: its tokens are evenly spread.
	var toks []int64
	for _, tok := range tokens {
		n, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, n)
	}
	slices.Sort(toks)
	if toks[0] > -1<<62 || toks[len(toks)-1] < 1<<62 {
		t.Errorf("tokens do not span the ring: %v", toks)
	}
	var n int
	if err := s.Query("SELECT count(*) FROM system.peers").Scan(&n); err != nil || n != 0 {
		t.Errorf("peers of a lone frontend: %d %v", n, err)
	}
	wantErr(t, s, "SELECT * FROM system.nope", codeInvalid, "unconfigured table nope")
	wantErr(t, s, "SELECT nope FROM system.local", codeInvalid, "Undefined column name nope")
	wantErr(t, s, "INSERT INTO system.local (key) VALUES ('x')", codeInvalid, "system")
}

func portOf(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[i+1:]
		}
	}
	return ""
}

// TestSystemPeers registers other frontends as members: each frontend
// lists the others as peers, and the frontends' tokens split the ring.
func TestSystemPeers(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	ctx := context.Background()
	for _, m := range []manifest.Member{
		{ID: "fe-2", Roles: []string{exec.RoleFrontend}, Addr: "127.0.0.2:9042"},
		{ID: "fe-3", Roles: []string{exec.RoleFrontend}, Addr: "127.0.0.3:9142"},
		{ID: "ingest-1", Roles: []string{"ingest"}, Addr: "127.0.0.4:7000"},
	} {
		if err := srv.Manifest.Heartbeat(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The server's own ingest node and frontend are members too.
	if err := srv.View.WaitFor(wctx, func(v *manifest.View) bool { return len(v.Members()) == 5 }); err != nil {
		t.Fatal(err)
	}
	s := srv.Session(t, "")
	all := map[string]bool{}
	var local []string
	if err := s.Query("SELECT tokens FROM system.local").Scan(&local); err != nil {
		t.Fatal(err)
	}
	for _, tok := range local {
		all[tok] = true
	}
	iter := s.Query("SELECT peer, host_id, rpc_address, tokens FROM system.peers").Iter()
	var (
		peer, rpc string
		host      gocql.UUID
		tokens    []string
		peers     []string
	)
	for iter.Scan(&peer, &host, &rpc, &tokens) {
		peers = append(peers, peer)
		if host.String() != exec.HostIDOf("fe-"+peer[len(peer)-1:]).String() {
			t.Errorf("peer %s has host_id %s", peer, host)
		}
		for _, tok := range tokens {
			if all[tok] {
				t.Errorf("token %s reported twice", tok)
			}
			all[tok] = true
		}
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(peers)
	if !slices.Equal(peers, []string{"127.0.0.2", "127.0.0.3"}) {
		t.Errorf("peers %v", peers)
	}
	if len(all) != 48 {
		t.Errorf("%d distinct tokens, want 3 × 16", len(all))
	}
	var port int
	if err := s.Query("SELECT native_port FROM system.peers_v2 WHERE peer = '127.0.0.3'").Scan(&port); err != nil || port != 9142 {
		t.Errorf("peers_v2 native_port of 127.0.0.3: %d %v", port, err)
	}
}

func TestSystemSchemaEmptyTables(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	for _, table := range []string{"functions", "aggregates", "indexes", "views", "triggers"} {
		var n int
		if err := s.Query("SELECT count(*) FROM system_schema." + table + " WHERE keyspace_name = 'ks'").Scan(&n); err != nil || n != 0 {
			t.Errorf("system_schema.%s: %d rows, %v", table, n, err)
		}
	}
	// Selected columns, aliases, IN, LIMIT and bound values.
	iter := s.Query("SELECT table_name AS t FROM system_schema.tables WHERE keyspace_name IN ? LIMIT ?", []string{"system_schema"}, 3).Iter()
	var names []string
	var name string
	for iter.Scan(&name) {
		names = append(names, name)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"aggregates", "columns", "dropped_columns"}) {
		t.Errorf("tables of system_schema, first 3: %v", names)
	}
	var vks string
	if err := s.Query("SELECT keyspace_name FROM system_virtual_schema.keyspaces").Scan(&vks); err != nil || vks != "system_virtual_schema" {
		t.Errorf("system_virtual_schema.keyspaces: %q %v", vks, err)
	}
	var n int
	if err := s.Query("SELECT count(*) FROM system_virtual_schema.columns WHERE keyspace_name = 'system_virtual_schema' AND table_name = 'tables'").Scan(&n); err != nil || n != 3 {
		t.Errorf("columns of system_virtual_schema.tables: %d %v", n, err)
	}
}

func TestPrepared(t *testing.T) {
	srv := cqltest.Start(t, cqltest.Options{})
	s := srv.Session(t, "ks")
	cqltest.Exec(t, s, "CREATE TABLE t (a int, b text, c int, v text, PRIMARY KEY ((b, a), c))")
	ctx := context.Background()
	sess := exec.NewSession()
	sess.SetKeyspace("ks")
	p, err := srv.Executor.Prepare(ctx, sess, "INSERT INTO t (c, a, v, b) VALUES (?, ?, ?, ?)", "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.PKIndexes, []uint16{3, 1}) {
		t.Errorf("PK indexes %v, want [3 1] (b is marker 3, a marker 1)", p.PKIndexes)
	}
	if len(p.Binds) != 4 || p.Binds[0].Name != "c" || p.Binds[0].Keyspace != "ks" || p.Binds[0].Table != "t" {
		t.Errorf("binds %+v", p.Binds)
	}
	for text, want := range map[string][]uint16{
		"INSERT INTO t (c, a, v, b) VALUES (:cc, :aa, :vv, :bb)": {3, 1},
		"SELECT v FROM t WHERE b = :x AND a = :y AND c = 1":      {0, 1},
		"UPDATE t SET v = ? WHERE a = :y AND b = :x AND c = :z":  {2, 1},
		"DELETE FROM t WHERE a = ? AND b = ? AND c = ?":          {1, 0},
		"SELECT v FROM t WHERE b = ? AND a IN (1, 2) AND c = 1":  nil,
		"INSERT INTO t (c, a, v, b) VALUES (1, 2, 'x', ?)":       nil,
	} {
		np, err := srv.Executor.Prepare(ctx, sess, text, "")
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if !slices.Equal(np.PKIndexes, want) {
			t.Errorf("%s: PK indexes %v, want %v", text, np.PKIndexes, want)
		}
	}
	again, err := srv.Executor.Prepare(ctx, sess, "INSERT INTO t (c, a, v, b) VALUES (?, ?, ?, ?)", "")
	if err != nil || string(again.ID) != string(p.ID) {
		t.Errorf("preparing twice gave ids %x and %x (%v)", p.ID, again.ID, err)
	}

	// An unknown id is Unprepared, with the id.
	_, err = srv.Executor.Execute(ctx, sess, []byte("nope"), &exec.Params{})
	if e, ok := err.(*exec.Error); !ok || e.Code != wire.CodeUnprepared || string(e.ID) != "nope" {
		t.Errorf("EXECUTE of an unknown id: %v", err)
	}
	// A wrong value type is Invalid.
	_, err = srv.Executor.Execute(ctx, sess, p.ID, &exec.Params{Values: [][]byte{{1}, {0, 0, 0, 1}, []byte("v"), []byte("b")}})
	if e, ok := err.(*exec.Error); !ok || e.Code != wire.CodeInvalid {
		t.Errorf("EXECUTE with a 1-byte int: %v", err)
	}

	// Prepared through the driver, then the table changes: the statement
	// is planned again.
	sel := "SELECT v FROM t WHERE b = ? AND a = ? AND c = ?"
	cqltest.Exec(t, s, "INSERT INTO t (a, b, c, v) VALUES (1, 'x', 2, 'one')")
	var v string
	if err := s.Query(sel, "x", 1, 2).Scan(&v); err != nil || v != "one" {
		t.Fatalf("prepared SELECT: %q %v", v, err)
	}
	cqltest.Exec(t, s, "ALTER TABLE t ADD w int")
	if err := s.Query(sel, "x", 1, 2).Scan(&v); err != nil || v != "one" {
		t.Errorf("prepared SELECT after ALTER: %q %v", v, err)
	}
	cqltest.Exec(t, s, "ALTER TABLE t DROP v")
	if err := s.Query(sel, "x", 1, 2).Scan(&v); err == nil {
		t.Error("prepared SELECT of a dropped column succeeded")
	}
}
