package main

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// TestRunPasswordAuthenticator starts a process with
// -cql.authenticator=password: the default superuser is created and logs
// in, and a driver without credentials is refused. (Roles and grants are
// tested in cql/exec; bcrypt at Cassandra's cost is slow under -race, so
// this test hashes as little as it can.)
func TestRunPasswordAuthenticator(t *testing.T) {
	p := startProcess(t, t.TempDir(), "-node.heartbeat-interval=50ms", "-cql.authenticator=password")
	p.waitReady(t)
	if !strings.Contains(p.log.String(), "default superuser") {
		t.Errorf("no warning about the default superuser in the log:\n%s", p.log)
	}
	connect := func(user, password string) (*gocql.Session, error) {
		host, port, err := net.SplitHostPort(p.s.cqlAddr)
		if err != nil {
			t.Fatalf("no CQL address: %v", err)
		}
		c := gocql.NewCluster(host)
		c.Port, _ = strconv.Atoi(port)
		c.Consistency = gocql.One
		c.Timeout = 20 * time.Second
		c.ConnectTimeout = 10 * time.Second
		c.Authenticator = gocql.PasswordAuthenticator{Username: user, Password: password}
		s, err := c.CreateSession()
		if err == nil {
			t.Cleanup(s.Close)
		}
		return s, err
	}
	// A driver without credentials is refused at the handshake.
	host, port, _ := net.SplitHostPort(p.s.cqlAddr)
	c := gocql.NewCluster(host)
	c.Port, _ = strconv.Atoi(port)
	c.ConnectTimeout = 10 * time.Second
	if s, err := c.CreateSession(); err == nil {
		s.Close()
		t.Fatal("connected without credentials")
	}
	admin, err := connect("cassandra", "cassandra")
	if err != nil {
		t.Fatalf("default superuser: %v\n%s", err, p.log)
	}
	var n int
	if err := admin.Query("SELECT count(*) FROM system.local").Scan(&n); err != nil || n != 1 {
		t.Fatalf("system.local as cassandra: %d %v", n, err)
	}
}
