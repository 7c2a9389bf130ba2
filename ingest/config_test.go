package ingest

import (
	"flag"
	"runtime"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestConfigDefaults(t *testing.T) {
	c := DefaultConfig()
	if c.Shards != runtime.GOMAXPROCS(0) {
		t.Fatalf("shards default %d, want GOMAXPROCS", c.Shards)
	}
	// The commitlog directory has no default here: the server derives it
	// from its data directory.
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "commitlog dir") {
		t.Fatalf("validating an empty commitlog dir: %v", err)
	}
	c.Commitlog.Dir = "/data/commitlog"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	tc := testConfig()
	if err := tc.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigFlagsAndYAML(t *testing.T) {
	var c Config
	f := flag.NewFlagSet("", flag.ContinueOnError)
	c.RegisterFlags(f)
	if err := f.Parse([]string{"-ingest.shards=3", "-ingest.memtable-size=1048576", "-ingest.commitlog.sync-mode=periodic", "-ingest.commitlog.dir=/data/cl"}); err != nil {
		t.Fatal(err)
	}
	if c.Shards != 3 || c.MemtableSize != 1<<20 || c.Commitlog.SyncMode != "periodic" || c.Commitlog.Dir != "/data/cl" {
		t.Fatalf("flags gave %+v", c)
	}
	if err := yaml.Unmarshal([]byte("flush_age: 30s\nmemory_limit: 4194304\ncommitlog:\n  segment_size: 2097152\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.FlushAge != 30*time.Second || c.MemoryLimit != 4<<20 || c.Commitlog.SegmentSize != 2<<20 || c.Shards != 3 {
		t.Fatalf("yaml gave %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Shards = 0 }, "shards"},
		{func(c *Config) { c.MemtableSize = 1 }, "memtable size"},
		{func(c *Config) { c.MemtableSize = 2 << 30 }, "memtable size"},
		{func(c *Config) { c.FlushAge = 0 }, "flush age"},
		{func(c *Config) { c.MemoryLimit = c.MemtableSize }, "memory limit"},
		{func(c *Config) { c.WriteTimeout = 0 }, "write timeout"},
		{func(c *Config) { c.FlushMaxBackoff = c.FlushMinBackoff / 2 }, "backoff"},
		{func(c *Config) { c.Commitlog.SegmentSize = 100 }, "segment size"},
		{func(c *Config) { c.Commitlog.SyncMode = "never" }, "sync mode"},
		{func(c *Config) { c.Commitlog.SyncPeriod = 0 }, "sync period"},
		{func(c *Config) { c.Commitlog.Dir = "" }, "commitlog dir"},
	} {
		c := DefaultConfig()
		c.Commitlog.Dir = "/data/commitlog"
		tc.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error about %s", err, tc.want)
		}
	}
}
