package manifest

import (
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestEmbeddedRequiresItsPassword: the embedded server refuses clients
// without credentials or with a wrong password, keeps its generated
// password readable by its owner alone, and keeps it across restarts.
func TestEmbeddedRequiresItsPassword(t *testing.T) {
	dir := t.TempDir()
	srv, err := StartEmbedded(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	addr := "nats://" + srv.Addr()
	for name, opts := range map[string][]nats.Option{
		"no credentials": nil,
		"wrong password": {nats.UserInfo(EmbeddedUser, "guess")},
		"other user":     {nats.UserInfo("admin", "admin")},
	} {
		if nc, err := nats.Connect(addr, opts...); err == nil {
			nc.Close()
			t.Errorf("%s: connected", name)
		} else if !strings.Contains(err.Error(), "Authorization") {
			t.Errorf("%s: %v, want an authorization error", name, err)
		}
	}
	fi, err := os.Stat(EmbeddedPasswordFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("password file mode %v, want 0600", fi.Mode().Perm())
	}
	data, err := os.ReadFile(EmbeddedPasswordFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(data))
	if len(password) < 32 || strings.Contains(srv.Addr(), password) {
		t.Fatalf("password %d characters long; address %s", len(password), srv.Addr())
	}
	srv.Shutdown()

	srv, err = StartEmbedded(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	c := defaultConfig()
	c.NATSURL = "nats://" + srv.Addr()
	c.User, c.PasswordFile = EmbeddedUser, EmbeddedPasswordFile(dir)
	nc, err := c.Connect("")
	if err != nil {
		t.Fatalf("with the kept password after a restart: %v", err)
	}
	nc.Close()
	c.PasswordFile, c.Password = "", "guess"
	if _, err := c.Connect(""); err == nil || strings.Contains(err.Error(), "guess") {
		t.Fatalf("wrong password: %v, want a refusal that does not show it", err)
	}
	c.Password = ""
	if _, err := c.Connect("nats://" + EmbeddedUser + ":guess@" + srv.Addr()); err == nil || strings.Contains(err.Error(), "guess") {
		t.Fatalf("wrong password in the URL: %v, want a refusal that does not show it", err)
	}
}
