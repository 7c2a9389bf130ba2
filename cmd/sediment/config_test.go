package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeYAML(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sediment.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPrecedence(t *testing.T) {
	file := writeYAML(t, "target: ingest\ndata_dir: /from/yaml\nlog:\n  level: warn\n  format: json\n")
	env := map[string]string{"SEDIMENT_LOG_LEVEL": "error", "SEDIMENT_DATA_DIR": "/from/env"}
	var c Config
	err := c.Load([]string{"-config.file", file, "-data.dir=/from/flag"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Flag beats environment beats YAML beats default.
	if c.DataDir != "/from/flag" || c.Log.Level != "error" || c.Log.Format != "json" || c.Target != "ingest" {
		t.Fatalf("got data_dir=%q level=%q format=%q target=%q", c.DataDir, c.Log.Level, c.Log.Format, c.Target)
	}
	if c.HTTP.ListenAddress != "127.0.0.1:9180" {
		t.Fatalf("default http address lost: %q", c.HTTP.ListenAddress)
	}
	if c.ObjectStore.Dir != "/from/flag/objects" {
		t.Fatalf("file object store under %q, want it under the data directory", c.ObjectStore.Dir)
	}
}

func TestLoadRejectsUnknownYAMLKeys(t *testing.T) {
	file := writeYAML(t, "target: all\nlog:\n  levle: debug\n")
	var c Config
	err := c.Load([]string{"-config.file=" + file}, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "levle") {
		t.Fatalf("error = %v, want one naming the unknown key", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"-target=frontend,ingest"}, ""},
		{[]string{"-target=frontend,storage"}, `unknown target "storage"`},
		{[]string{"-log.level=loud"}, "-log.level"},
		{[]string{"-log.format=xml"}, "-log.format"},
		{[]string{"-data.dir="}, "-data.dir"},
	} {
		var c Config
		if err := c.Load(tc.args, func(string) string { return "" }); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		err := c.Validate()
		if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%v: Validate() = %v, want error containing %q", tc.args, err, tc.wantErr)
		}
	}
}

func TestRolesOfAll(t *testing.T) {
	c := Config{Target: "all,ingest"}
	roles, err := c.Roles()
	if err != nil || strings.Join(roles, ",") != "compactor,frontend,ingest" {
		t.Fatalf("Roles() = %v, %v", roles, err)
	}
}

func TestSecretFromEnvironmentStaysOutOfHelp(t *testing.T) {
	t.Setenv("SEDIMENT_OBJECTSTORE_SECRET_ACCESS_KEY", "s3cr3t")
	var c Config
	if err := c.Load([]string{"-objectstore.backend=minio", "-objectstore.bucket=b", "-objectstore.endpoint=127.0.0.1:9000", "-objectstore.access-key-id=k"}, os.Getenv); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ObjectStore.SecretAccessKey != "s3cr3t" {
		t.Fatalf("secret = %q, want it from the environment", c.ObjectStore.SecretAccessKey)
	}
	var help strings.Builder
	Usage(&help)
	if strings.Contains(help.String(), "s3cr3t") {
		t.Fatal("-help shows the secret")
	}
	var printed strings.Builder
	if err := printConfig(&printed, c); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(printed.String(), "s3cr3t") || !strings.Contains(printed.String(), "secret_access_key: <redacted>") {
		t.Fatalf("-config.print shows:\n%s", printed.String())
	}
}

func TestLoadRejectsBadEnvironmentValue(t *testing.T) {
	var c Config
	err := c.Load(nil, func(k string) string {
		if k == "SEDIMENT_CONFIG_PRINT" {
			return "maybe"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "SEDIMENT_CONFIG_PRINT") {
		t.Fatalf("error = %v, want one naming the variable", err)
	}
}

func TestLoadManifestSection(t *testing.T) {
	file := writeYAML(t, "data_dir: /d\nmanifest:\n  cluster_name: prod-1\n  embedded_port: 0\n")
	var c Config
	if err := c.Load([]string{"-config.file", file}, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Manifest.ClusterName != "prod-1" || c.Manifest.EmbeddedPort != 0 || c.Manifest.EmbeddedDir != "/d/nats" {
		t.Fatalf("manifest config = %+v", c.Manifest)
	}
	var printed strings.Builder
	if err := printConfig(&printed, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(printed.String(), "manifest:\n") || !strings.Contains(printed.String(), "cluster_name: prod-1") {
		t.Fatalf("-config.print lacks the manifest section:\n%s", printed.String())
	}
	c.Manifest.ClusterName = "bad_name"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "cluster name") {
		t.Fatalf("Validate with a bad cluster name = %v", err)
	}
}

func TestLoadIngestAndNodeSections(t *testing.T) {
	file := writeYAML(t, "data_dir: /d\nnode:\n  address: 10.0.0.7:9180\ningest:\n  shards: 3\n  ranges: 8\n  rpc_address: 10.0.0.7:9190\n  leave_on_stop: true\n  commitlog:\n    sync_mode: periodic\n")
	var c Config
	if err := c.Load([]string{"-config.file", file, "-ingest.memtable-size=1048576"}, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	in := c.Ingest
	if in.Shards != 3 || in.Ranges != 8 || in.RPCAddress != "10.0.0.7:9190" || !in.LeaveOnStop || in.MemtableSize != 1<<20 || in.Commitlog.SyncMode != "periodic" || in.Commitlog.Dir != "/d/commitlog" {
		t.Fatalf("ingest config = %+v", in)
	}
	if c.Node.Address != "10.0.0.7:9180" || c.Node.HeartbeatInterval != 5*time.Second {
		t.Fatalf("node config = %+v", c.Node)
	}
	var printed strings.Builder
	if err := printConfig(&printed, c); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"ingest:\n", "    ranges: 8\n", "    leave_on_stop: true\n", "    shards: 3\n", "        dir: /d/commitlog\n", "    address: 10.0.0.7:9180\n"} {
		if !strings.Contains(printed.String(), line) {
			t.Fatalf("-config.print lacks %q:\n%s", line, printed.String())
		}
	}
	for _, tc := range []struct{ flag, wantErr string }{
		{"-ingest.ranges=0", "-ingest.ranges"},
		{"-ingest.ranges=65537", "-ingest.ranges"},
		{"-ingest.shards=0", "shards"},
		{"-node.heartbeat-interval=0s", "-node.heartbeat-interval"},
		{"-node.address=10.0.0.7", "-node.address"},
		{"-ingest.rpc-address=9190", "-ingest.rpc-address"},
	} {
		var c Config
		if err := c.Load([]string{tc.flag}, func(string) string { return "" }); err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tc.flag, err, tc.wantErr)
		}
	}
}

// TestLoadRefusesRenamedSpellings checks that the spellings the compactor
// had before it was named once (flags -compaction.*, the YAML section
// compaction, their environment variables) are refused with the new name,
// and that the new ones load.
func TestLoadRefusesRenamedSpellings(t *testing.T) {
	none := func(string) string { return "" }
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		wantErr string
	}{
		{args: []string{"-compaction.workers=2"}, wantErr: "-compaction.workers is now -compactor.workers"},
		{args: []string{"--compaction.ack-wait", "5s"}, wantErr: "-compaction.ack-wait is now -compactor.ack-wait"},
		{args: []string{"-compaction.plan-interval=1s"}, wantErr: "-compactor.plan-interval"},
		{env: map[string]string{"SEDIMENT_COMPACTION_READ_AHEAD": "1"}, wantErr: "$SEDIMENT_COMPACTION_READ_AHEAD is now $SEDIMENT_COMPACTOR_READ_AHEAD"},
		{args: []string{"-config.file=" + writeYAML(t, "compaction:\n  workers: 2\n")}, wantErr: "the section compaction is now called compactor"},
	} {
		getenv := none
		if tc.env != nil {
			getenv = func(k string) string { return tc.env[k] }
		}
		var c Config
		if err := c.Load(tc.args, getenv); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Load(%q, %v) = %v, want an error containing %q", tc.args, tc.env, err, tc.wantErr)
		}
	}
	var c Config
	file := writeYAML(t, "compactor:\n  workers: 3\n  planner:\n    plan_interval: 2s\n")
	if err := c.Load([]string{"-config.file=" + file, "-compactor.ack-wait=7s"}, none); err != nil {
		t.Fatal(err)
	}
	if c.Compactor.Workers != 3 || c.Compactor.Planner.Interval != 2*time.Second || c.Compactor.AckWait != 7*time.Second {
		t.Fatalf("compactor section = %+v", c.Compactor)
	}
}
