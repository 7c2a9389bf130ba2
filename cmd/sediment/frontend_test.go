package main

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend"
	"github.com/sedimentdb/sediment/manifest"
)

// nodeMembers returns the members that are nodes, without the frontends'
// CQL endpoints.
func nodeMembers(mems []manifest.Member) []manifest.Member {
	return slices.DeleteFunc(slices.Clone(mems), func(m manifest.Member) bool { return strings.HasSuffix(m.ID, frontend.MemberSuffix) })
}

// cqlSession connects gocql to a process's CQL port.
func cqlSession(t *testing.T, p *process, keyspace string) *gocql.Session {
	t.Helper()
	host, port, err := net.SplitHostPort(p.s.frontend.Addr())
	if err != nil {
		t.Fatalf("no CQL address: %v", err)
	}
	c := gocql.NewCluster(host)
	c.Port, _ = strconv.Atoi(port)
	// Only p's frontend, though it lists the others as peers: a test that
	// speaks through p must not be routed to another process.
	c.HostFilter = gocql.HostFilterFunc(func(h *gocql.HostInfo) bool {
		return h.ConnectAddress().String() == host && h.Port() == c.Port
	})
	c.Keyspace = keyspace
	c.Consistency = gocql.One
	c.Timeout = 20 * time.Second
	c.ConnectTimeout = 10 * time.Second
	s, err := c.CreateSession()
	if err != nil {
		t.Fatalf("connecting to %s: %v\n%s", p.s.frontend.Addr(), err, p.log)
	}
	t.Cleanup(s.Close)
	return s
}

func execCQL(t *testing.T, s *gocql.Session, stmts ...string) {
	t.Helper()
	for _, st := range stmts {
		if err := s.Query(st).Exec(); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
}

// TestRunFrontendAllInOne starts every role in one process, as `go run
// ./cmd/sediment` does, and uses it through gocql.
func TestRunFrontendAllInOne(t *testing.T) {
	dataDir := t.TempDir()
	p := startProcess(t, dataDir, "-node.heartbeat-interval=50ms",
		"-cql.batch-size-warn-threshold=30", "-cql.batch-size-fail-threshold=200")
	p.waitReady(t)
	if !strings.Contains(p.log.String(), "CQL server listening") || !strings.Contains(p.log.String(), "engine=local") {
		t.Fatalf("the log does not say where CQL listens, over the local engine:\n%s", p.log)
	}
	s := cqlSession(t, p, "")
	execCQL(t, s,
		"CREATE KEYSPACE app WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE app.kv (k text PRIMARY KEY, v int)",
	)
	for i := range 20 {
		if err := s.Query("INSERT INTO app.kv (k, v) VALUES (?, ?)", fmt.Sprint("k", i), i).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	var v int
	if err := s.Query("SELECT v FROM app.kv WHERE k = ?", "k7").Scan(&v); err != nil || v != 7 {
		t.Fatalf("SELECT k7: %d %v", v, err)
	}
	// The batch thresholds' flags reach the executor: two rows of 20
	// bytes (16 per cell plus its 4-byte value) pass 30 and warn; twelve
	// pass 200 and are refused.
	it := s.Query("BEGIN BATCH INSERT INTO app.kv (k, v) VALUES ('b1', 1); INSERT INTO app.kv (k, v) VALUES ('b2', 2); APPLY BATCH").Iter()
	warnings := it.Warnings()
	if err := it.Close(); err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "exceeding specified threshold of 30") {
		t.Fatalf("batch over the warn threshold: %v, warnings %q", err, warnings)
	}
	big := "BEGIN BATCH "
	for i := range 12 {
		big += fmt.Sprintf("INSERT INTO app.kv (k, v) VALUES ('big%d', %d); ", i, i)
	}
	if err := s.Query(big + "APPLY BATCH").Exec(); err == nil || !strings.Contains(err.Error(), "Batch too large") {
		t.Fatalf("batch over the fail threshold: %v", err)
	}
	// The frontend's member carries its CQL address; it is not its own peer.
	var n int
	if err := s.Query("SELECT count(*) FROM system.peers").Scan(&n); err != nil || n != 0 {
		t.Errorf("peers of the lone frontend: %d %v", n, err)
	}
	mems := p.s.view.Members()
	i := slices.IndexFunc(mems, func(m manifest.Member) bool { return m.ID == p.s.ingester.NodeID()+frontend.MemberSuffix })
	if i < 0 || mems[i].Addr != p.s.frontend.Addr() || !slices.Equal(mems[i].Roles, []string{Frontend}) {
		t.Fatalf("members %+v lack the CQL endpoint %s\n%s", mems, p.s.frontend.Addr(), p.log)
	}
	p.stop(t)
	if ln, err := net.Listen("tcp", p.s.frontend.Addr()); err != nil {
		t.Fatalf("CQL address still in use after stop: %v", err)
	} else {
		ln.Close()
	}

	// The data and the schema survive a restart.
	p2 := startProcess(t, dataDir)
	p2.waitReady(t)
	s2 := cqlSession(t, p2, "app")
	if err := s2.Query("SELECT v FROM kv WHERE k = 'k19'").Scan(&v); err != nil || v != 19 {
		t.Fatalf("SELECT after restart: %d %v", v, err)
	}
	p2.stop(t)
}

// TestRunFrontendRemote runs the frontend role in a process of its own: it
// writes and reads through the ingest node of another process, and the two
// frontends list each other as peers.
func TestRunFrontendRemote(t *testing.T) {
	ingestDir := t.TempDir()
	node := startProcess(t, ingestDir, "-node.heartbeat-interval=50ms")
	node.waitReady(t)
	fe := startProcess(t, t.TempDir(), append(node.natsFlags(), "-target=frontend", "-node.heartbeat-interval=50ms",
		"-objectstore.dir="+filepath.Join(ingestDir, "objects"))...)
	fe.waitReady(t)
	if !strings.Contains(fe.log.String(), "engine=remote") {
		t.Fatalf("the frontend-only process does not use the remote engine:\n%s", fe.log)
	}
	s := cqlSession(t, fe, "")
	execCQL(t, s,
		"CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE r.t (k int, c int, v text, PRIMARY KEY (k, c))",
		"INSERT INTO r.t (k, c, v) VALUES (1, 1, 'through the remote frontend')",
	)
	// The other process's frontend sees the schema and the row.
	s2 := cqlSession(t, node, "r")
	var v string
	if err := s2.Query("SELECT v FROM t WHERE k = 1 AND c = 1").Scan(&v); err != nil || v != "through the remote frontend" {
		t.Fatalf("read through the ingest process's frontend: %q %v", v, err)
	}
	// Each lists the other as a peer, with its CQL address. The driver
	// spreads queries over the peers it finds, so ask the node's frontend
	// alone.
	_, fePort, _ := net.SplitHostPort(fe.s.frontend.Addr())
	_, nodePort, _ := net.SplitHostPort(node.s.frontend.Addr())
	c := gocql.NewCluster("127.0.0.1")
	c.Port, _ = strconv.Atoi(nodePort)
	c.Timeout, c.ConnectTimeout = 20*time.Second, 10*time.Second
	c.HostFilter = gocql.HostFilterFunc(func(h *gocql.HostInfo) bool { return strconv.Itoa(h.Port()) == nodePort })
	own, err := c.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var (
			peer  string
			port  int
			seen  []string
			found bool
		)
		it := own.Query("SELECT peer, native_port FROM system.peers_v2").Iter()
		for it.Scan(&peer, &port) {
			seen = append(seen, net.JoinHostPort(peer, strconv.Itoa(port)))
			found = found || (peer == "127.0.0.1" && strconv.Itoa(port) == fePort)
		}
		err := it.Close()
		if err == nil && found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("peers_v2 of the ingest process's frontend (itself at %s): %q, want 127.0.0.1:%s (%v); members %+v", node.s.frontend.Addr(), seen, fePort, err, node.s.view.Members())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// TRUNCATE through the frontend without a node reaches the node.
	execCQL(t, s, "TRUNCATE r.t")
	var n int
	if err := s2.Query("SELECT count(*) FROM t").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows after TRUNCATE through the remote frontend: %d %v", n, err)
	}
	fe.stop(t)
	node.stop(t)
}
