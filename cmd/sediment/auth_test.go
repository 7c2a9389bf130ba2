package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/sedimentdb/sediment/manifest"
)

// TestRunPasswordAuthenticator starts a process with
// -cql.authenticator=password: the default superuser is created and logs
// in, and a driver without credentials is refused. (Roles and grants are
// tested in cql/exec; bcrypt at Cassandra's cost is slow under -race, so
// this test checks a cheap hash.)
func TestRunPasswordAuthenticator(t *testing.T) {
	p := startProcess(t, t.TempDir(), "-node.heartbeat-interval=50ms", "-cql.authenticator=password",
		"-cql.auth.failure-burst=4", "-cql.auth.failure-refill=1h")
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
	if v := gaugeValue(t, p.s.reg, "sediment_cql_default_superuser_password"); v != 1 {
		t.Errorf("sediment_cql_default_superuser_password = %v while cassandra/cassandra is in use", v)
	}
	if w := statusPage(t, p)["warning"]; !strings.Contains(w, "cassandra still has the password cassandra") {
		t.Errorf("status page warning %q, want one about the default password", w)
	}

	// Guessing passwords from one address is throttled: past the burst
	// even the right password is refused, without a bcrypt comparison.
	for i := 0; counterValue(t, p.s.reg, "sediment_cql_auth_failures_total") < 4; i++ {
		if i == 20 {
			t.Fatalf("20 wrong passwords, and %v failures counted", counterValue(t, p.s.reg, "sediment_cql_auth_failures_total"))
		}
		if _, err := connect("cassandra", fmt.Sprint("guess", i)); err == nil {
			t.Fatal("a wrong password logged in")
		}
	}
	if _, err := connect("cassandra", "cassandra"); err == nil {
		t.Fatal("the right password logged in past the failure burst")
	}
	if !strings.Contains(p.log.String(), "login throttled") {
		t.Errorf("no log line about the throttled login:\n%s", p.log)
	}
}

// gaugeValue is the value of the gauge name in reg.
func gaugeValue(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// TestRunConfiguredSuperuser: with -cql.auth.superuser and a password
// file, the first start creates that superuser, and no cassandra role.
func TestRunConfiguredSuperuser(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("from-a-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, t.TempDir(), "-node.heartbeat-interval=50ms", "-cql.authenticator=password",
		"-cql.auth.superuser=root", "-cql.auth.superuser-password-file="+pwFile)
	p.waitReady(t)
	if r := p.s.view.Role("root"); r == nil || !r.Superuser || !r.Login {
		t.Fatalf("configured superuser: %+v", r)
	}
	if p.s.view.Role("cassandra") != nil || strings.Contains(p.log.String(), "default superuser") {
		t.Fatalf("the default superuser was created too:\n%s", p.log)
	}
	if v := gaugeValue(t, p.s.reg, "sediment_cql_default_superuser_password"); v != 0 {
		t.Errorf("sediment_cql_default_superuser_password = %v without a cassandra role", v)
	}
	if w, ok := statusPage(t, p)["warning"]; ok {
		t.Errorf("status page warning %q without a cassandra role", w)
	}
	if strings.Contains(p.log.String(), "from-a-secret") {
		t.Errorf("the log shows the password:\n%s", p.log)
	}
	p.stop(t)
}
