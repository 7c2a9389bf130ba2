package transport

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/testwait"
)

// gocqlSession connects the gocql driver to addr.
func gocqlSession(t testing.TB, addr string, tune func(*gocql.ClusterConfig)) (*gocql.Session, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	cluster := gocql.NewCluster(host)
	cluster.Port, _ = strconv.Atoi(port)
	cluster.Timeout = 10 * time.Second
	cluster.ConnectTimeout = 10 * time.Second
	cluster.NumConns = 1
	cluster.DisableInitialHostLookup = true
	cluster.Events.DisableSchemaEvents = true
	if tune != nil {
		tune(cluster)
	}
	s, err := cluster.CreateSession()
	if err == nil {
		t.Cleanup(s.Close)
	}
	return s, err
}

func TestGocql(t *testing.T) {
	h := newTestHandler()
	_, addr := startServer(t, testConfig(), h, nil)
	s, err := gocqlSession(t, addr, func(c *gocql.ClusterConfig) {
		c.Keyspace = "ks1"
		c.Compressor = gocql.SnappyCompressor{}
	})
	if err != nil {
		t.Fatal(err)
	}
	// The keyspace of the cluster config reached the session with USE.
	var ks, user string
	if err := s.Query("WHO").Scan(&ks, &user); err != nil || ks != "ks1" {
		t.Fatalf("WHO: %q %v", ks, err)
	}
	// gocql prepares statements with values and executes them,
	// skipping metadata.
	var a, b int
	if err := s.Query("SELECT ?, ?", 7, -3).Scan(&a, &b); err != nil || a != 7 || b != -3 {
		t.Fatalf("ECHO: %d %d %v", a, b, err)
	}
	// An unknown prepared ID makes gocql prepare again.
	before := h.prepares.Load()
	h.forget.Store(true)
	if err := s.Query("SELECT ?, ?", 1, 2).Scan(&a, &b); err != nil || a != 1 || b != 2 {
		t.Fatalf("ECHO after Unprepared: %v", err)
	}
	if h.prepares.Load() != before+1 {
		t.Fatalf("%d prepares after Unprepared, want one more than %d", h.prepares.Load(), before)
	}
	batch := s.NewBatch(gocql.UnloggedBatch)
	batch.Query("INSERT ?", 1)
	batch.Query("UPDATE ?, ?", 2, 3)
	batch.Query("DELETE")
	if err := s.ExecuteBatch(batch); err != nil || h.batches.Load() != 3 {
		t.Fatalf("batch: %v, %d statements", err, h.batches.Load())
	}
	err = s.Query("FAIL").Exec()
	if rerr, ok := err.(gocql.RequestError); !ok || rerr.Code() != 0x2200 || !strings.Contains(err.Error(), "failed as asked") {
		t.Fatalf("FAIL: %v", err)
	}
	// A large value goes through compressed frames both ways.
	big := bytes.Repeat([]byte{1, 2, 3, 4}, 1<<16)
	var back []byte
	if err := s.Query("SELECT BLOB ?", big).Scan(&back); err != nil || !bytes.Equal(back, big) {
		t.Fatalf("large value: %d bytes back, %v", len(back), err)
	}
	// Many statements in flight on the one connection.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var x int
			if err := s.Query("SELECT ?", i).Scan(&x); err != nil || x != i {
				errs <- err
			}
		}()
	}
	testwait.Wait(t, "the clients", &wg)
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent ECHO: %v", err)
	}
}

func TestGocqlPassword(t *testing.T) {
	cfg := testConfig()
	cfg.Authenticator = "password"
	_, addr := startServer(t, cfg, newTestHandler(), passwords{"alice": "secret"})
	_, err := gocqlSession(t, addr, func(c *gocql.ClusterConfig) {
		c.Authenticator = gocql.PasswordAuthenticator{Username: "alice", Password: "wrong"}
	})
	if err == nil {
		t.Fatal("connected with a wrong password")
	}
	s, err := gocqlSession(t, addr, func(c *gocql.ClusterConfig) {
		c.Authenticator = gocql.PasswordAuthenticator{Username: "alice", Password: "secret"}
	})
	if err != nil {
		t.Fatal(err)
	}
	var ks, user string
	if err := s.Query("WHO").Scan(&ks, &user); err != nil || user != "alice" {
		t.Fatalf("WHO: %q %v", user, err)
	}
}

// TestGocqlProtocolV3 has gocql speak v3.
func TestGocqlProtocolV3(t *testing.T) {
	_, addr := startServer(t, testConfig(), newTestHandler(), nil)
	s, err := gocqlSession(t, addr, func(c *gocql.ClusterConfig) { c.ProtoVersion = 3 })
	if err != nil {
		t.Fatal(err)
	}
	var a int
	if err := s.Query("SELECT ?", 5).Scan(&a); err != nil || a != 5 {
		t.Fatalf("ECHO: %d %v", a, err)
	}
}
