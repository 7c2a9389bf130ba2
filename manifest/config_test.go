package manifest

import (
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"gopkg.in/yaml.v3"
)

func defaultConfig() Config {
	var c Config
	c.RegisterFlags(flag.NewFlagSet("", flag.ContinueOnError))
	return c
}

func TestConfigFlagsAndYAML(t *testing.T) {
	var c Config
	f := flag.NewFlagSet("", flag.ContinueOnError)
	c.RegisterFlags(f)
	if err := f.Parse([]string{"-manifest.cluster-name=prod-1", "-manifest.nats-url=nats://127.0.0.1:4222", "-manifest.credentials-file=/x.creds"}); err != nil {
		t.Fatal(err)
	}
	if c.ClusterName != "prod-1" || c.NATSURL != "nats://127.0.0.1:4222" || c.CredentialsFile != "/x.creds" || c.MaxAttempts != 64 {
		t.Fatalf("%+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader("cluster_name: other\ntls_ca_file: /ca.pem\nmax_attempts: 3\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.ClusterName != "other" || c.TLSCAFile != "/ca.pem" || c.MaxAttempts != 3 || c.Options().MaxAttempts != 3 {
		t.Fatalf("%+v", c)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Config)
		want string // "" for valid
	}{
		"embedded":        {func(c *Config) { c.EmbeddedDir = "/d" }, ""},
		"no dir":          {func(*Config) {}, "embedded-dir"},
		"bad cluster":     {func(c *Config) { c.EmbeddedDir = "/d"; c.ClusterName = "a_b" }, "cluster name"},
		"creds embedded":  {func(c *Config) { c.EmbeddedDir = "/d"; c.CredentialsFile = "/c" }, "external NATS"},
		"half a cert":     {func(c *Config) { c.NATSURL = "nats://h"; c.TLSCertFile = "/c" }, "tls-key-file"},
		"bad port":        {func(c *Config) { c.EmbeddedDir = "/d"; c.EmbeddedPort = 70000 }, "port"},
		"no attempts":     {func(c *Config) { c.NATSURL = "nats://h"; c.MaxAttempts = 0 }, "attempts"},
		"no timeout":      {func(c *Config) { c.NATSURL = "nats://h"; c.ConnectTimeout = 0 }, "timeout"},
		"external tls ok": {func(c *Config) { c.NATSURL = "nats://h"; c.TLSCertFile, c.TLSKeyFile, c.TLSCAFile = "/c", "/k", "/ca" }, ""},
	} {
		c := defaultConfig()
		tc.mod(&c)
		err := c.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func TestConfigConnectEmbedded(t *testing.T) {
	c := defaultConfig()
	c.EmbeddedDir = t.TempDir()
	c.EmbeddedPort = 0
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	srv, err := StartEmbedded(c.EmbeddedDir, c.EmbeddedPort)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	if !strings.HasPrefix(srv.Addr(), "127.0.0.1:") {
		t.Fatalf("embedded server at %s, want loopback", srv.Addr())
	}
	nc, err := c.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	m, err := Open(ctxT(t), js, e.store, c.ClusterName, c.Options())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CreateKeyspace(context.Background(), "ks", simple, true); err != nil {
		t.Fatal(err)
	}
	if _, err := StartEmbedded("", 0); err == nil {
		t.Fatal("embedded server without a directory started")
	}
}
