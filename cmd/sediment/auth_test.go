package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/crypto/bcrypt"

	"github.com/sedimentdb/sediment/manifest"
)

// TestRunPasswordAuthenticator starts a process with
// -cql.authenticator=password: the default superuser is created and logs
// in, and a driver without credentials is refused. (Roles and grants are
// tested in cql/exec; bcrypt at Cassandra's cost is slow under -race, so
// this test checks a cheap hash.)
func TestRunPasswordAuthenticator(t *testing.T) {
	p := startProcess(t, t.TempDir(), "-node.heartbeat-interval=50ms", "-cql.authenticator=password")
	p.waitReady(t)
	if !strings.Contains(p.log.String(), "default superuser") {
		t.Errorf("no warning about the default superuser in the log:\n%s", p.log)
	}
	connect := func(user, password string) (*gocql.Session, error) {
		host, port, err := net.SplitHostPort(p.s.frontend.Addr())
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
	// The default superuser's hash has Cassandra's cost, seconds of work
	// per check under -race: give it a cheap one (the cost is in the
	// hash) before logging in.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r := p.s.view.Role("cassandra"); r == nil || !r.Superuser || !r.Login {
		t.Fatalf("default superuser: %+v", r)
	}
	cheap, err := bcrypt.GenerateFromPassword([]byte("cassandra"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.s.manifest.AlterRole(ctx, "cassandra", func(r *manifest.Role) error { r.SaltedHash = string(cheap); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := p.s.view.WaitFor(ctx, func(v *manifest.View) bool { return v.Role("cassandra").SaltedHash == string(cheap) }); err != nil {
		t.Fatal(err)
	}

	// A driver without credentials is refused at the handshake.
	host, port, _ := net.SplitHostPort(p.s.frontend.Addr())
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
