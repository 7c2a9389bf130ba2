package loadgen

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	if c := DefaultConfig(); c.Validate() != nil {
		t.Fatalf("defaults: %v", c.Validate())
	}
	for _, c := range []struct {
		tune func(*Config)
		want string
	}{
		{func(c *Config) { c.Workload = "delete" }, `unknown workload "delete"`},
		{func(c *Config) { c.Distribution = "gauss" }, `unknown key distribution "gauss"`},
		{func(c *Config) { c.Distribution, c.ZipfS = Zipfian, 0.99 }, "zipf exponent 0.99 must be > 1"},
		{func(c *Config) { c.ReadRatio = 1.5 }, "read ratio 1.5"},
		{func(c *Config) { c.RowSize = -1 }, "row size -1"},
		{func(c *Config) { c.ClusteringRows = 0 }, "clustering rows 0"},
		{func(c *Config) { c.Partitions = 0 }, "partitions 0"},
		{func(c *Config) { c.Partitions, c.ClusteringRows = 1<<40, 1<<30 }, "overflow the key space"},
		{func(c *Config) { c.Concurrency = 0 }, "concurrency 0"},
		{func(c *Config) { c.Connections = 0 }, "connections 0"},
		{func(c *Config) { c.Duration, c.Count = 0, 0 }, "a duration or a count is needed"},
		{func(c *Config) { c.Rate = -1 }, "rate -1"},
		{func(c *Config) { c.Hosts = nil }, "no hosts"},
		{func(c *Config) { c.Table = "Bench" }, "lower-case identifiers"},
		{func(c *Config) { c.Keyspace = "ks; DROP" }, "lower-case identifiers"},
		{func(c *Config) { c.Timeout = 0 }, "timeout 0s"},
		{func(c *Config) { c.CeilingCommitlog = "/tmp" }, "a ceiling commitlog without the ceiling"},
	} {
		cfg := DefaultConfig()
		c.tune(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error with %q", err, c.want)
		}
	}
	c := DefaultConfig()
	c.Hosts = nil
	c.Ceiling = true
	if err := c.Validate(); err != nil {
		t.Fatalf("ceiling needs no hosts: %v", err)
	}
}
