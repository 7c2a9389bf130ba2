package objectstore_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sedimentdb/sediment/objectstore"
)

func TestConfigFlags(t *testing.T) {
	var cfg objectstore.Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	err := fs.Parse([]string{
		"-objectstore.backend=s3", "-objectstore.bucket=b", "-objectstore.prefix=c1",
		"-objectstore.endpoint=localhost:9000", "-objectstore.region=eu-west-1",
		"-objectstore.access-key-id=id", "-objectstore.secret-access-key=secret",
		"-objectstore.path-style", "-objectstore.insecure", "-objectstore.part-size=8388608",
		"-objectstore.upload-concurrency=2", "-objectstore.timeout=5s", "-objectstore.retry.max-retries=2",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Backend != "s3" || cfg.Bucket != "b" || cfg.Prefix != "c1" || !cfg.PathStyle || !cfg.Insecure ||
		cfg.PartSize != 8<<20 || cfg.UploadConcurrency != 2 || cfg.Timeout != 5*time.Second ||
		cfg.Retry.MaxRetries != 2 || cfg.SecretAccessKey != "secret" || cfg.Region != "eu-west-1" {
		t.Fatalf("parsed %+v", cfg)
	}
}

func TestConfigYAML(t *testing.T) {
	cfg := objectstore.DefaultConfig()
	dec := yaml.NewDecoder(strings.NewReader("backend: minio\nbucket: b\nendpoint: 127.0.0.1:9000\nretry:\n  max_retries: 1\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Backend != "minio" || cfg.Retry.MaxRetries != 1 || cfg.PartSize != 16<<20 {
		t.Fatalf("decoded %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dec = yaml.NewDecoder(strings.NewReader("backend: file\nbuckit: typo\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err == nil {
		t.Fatal("unknown YAML key accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	for name, mutate := range map[string]func(*objectstore.Config){
		"unknown backend":   func(c *objectstore.Config) { c.Backend = "gcs" },
		"file without dir":  func(c *objectstore.Config) { c.Dir = "" },
		"s3 without bucket": func(c *objectstore.Config) { c.Backend = "s3" },
		"minio without endpoint": func(c *objectstore.Config) {
			c.Backend, c.Bucket = "minio", "b"
		},
		"half the keys": func(c *objectstore.Config) {
			c.Backend, c.Bucket, c.AccessKeyID, c.SecretAccessKey = "s3", "b", "id", ""
		},
		"small part":        func(c *objectstore.Config) { c.PartSize = 1 << 20 },
		"no concurrency":    func(c *objectstore.Config) { c.UploadConcurrency = 0 },
		"bad prefix":        func(c *objectstore.Config) { c.Prefix = "/abs" },
		"dotdot prefix":     func(c *objectstore.Config) { c.Prefix = "a/../b" },
		"negative timeout":  func(c *objectstore.Config) { c.Timeout = -time.Second },
		"backoff inverted":  func(c *objectstore.Config) { c.Retry.MinBackoff, c.Retry.MaxBackoff = time.Second, time.Millisecond },
		"negative retries":  func(c *objectstore.Config) { c.Retry.MaxRetries = -1 },
		"page size too big": func(c *objectstore.Config) { c.ListPageSize = 1001 },
	} {
		cfg := objectstore.DefaultConfig()
		cfg.SecretAccessKey = ""
		mutate(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, cfg)
		}
	}
	cfg := objectstore.DefaultConfig()
	if err := cfg.Validate(); err == nil {
		t.Fatal("default config without a directory validated; the binary must supply <data.dir>/objects")
	}
	cfg.Dir = t.TempDir()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("default config with a directory: %v", err)
	}
}
