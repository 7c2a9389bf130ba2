package cache

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/internal/vfs"
	"gopkg.in/yaml.v3"
)

func TestConfigFlagsAndYAML(t *testing.T) {
	var c Config
	f := flag.NewFlagSet("test", flag.ContinueOnError)
	c.RegisterFlags(f)
	if c.MemoryBytes != 256<<20 || c.DiskBytes != DefaultDiskBytes || c.DiskDir != "" {
		t.Fatalf("defaults %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if err := f.Parse([]string{"-cache.memory-bytes=1024", "-cache.disk-bytes=4096", "-cache.disk-dir=/tmp/x"}); err != nil {
		t.Fatal(err)
	}
	if c != (Config{MemoryBytes: 1024, DiskBytes: 4096, DiskDir: "/tmp/x"}) {
		t.Fatalf("parsed %+v", c)
	}

	dec := yaml.NewDecoder(strings.NewReader("memory_bytes: 10\ndisk_bytes: 20\ndisk_dir: /d\n"))
	dec.KnownFields(true)
	var y Config
	if err := dec.Decode(&y); err != nil {
		t.Fatal(err)
	}
	if y != (Config{MemoryBytes: 10, DiskBytes: 20, DiskDir: "/d"}) {
		t.Fatalf("decoded %+v", y)
	}
	var out bytes.Buffer
	if err := yaml.NewEncoder(&out).Encode(y); err != nil || !strings.Contains(out.String(), "disk_dir: /d") {
		t.Fatalf("encoded %q, %v", out.String(), err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c       Config
		wantErr string
	}{
		{Config{}, ""},
		{Config{MemoryBytes: 1, DiskBytes: 1, DiskDir: "d"}, ""},
		{Config{MemoryBytes: -1}, "memory-bytes must not be negative"},
		{Config{DiskBytes: -1, DiskDir: "d"}, "disk-bytes must not be negative"},
		{Config{DiskBytes: 1}, ""}, // the directory defaults to <data.dir>/cache
		{Config{DiskDir: "d"}, "disk-bytes is 0"},
	} {
		err := tc.c.Validate()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.c, err, tc.wantErr)
		}
	}
}

func TestNewBuildsTiers(t *testing.T) {
	if _, err := New(Config{MemoryBytes: -1}, vfs.Default, Options{}); err == nil {
		t.Fatal("New accepted an invalid config")
	}
	if _, err := New(Config{DiskBytes: 1}, vfs.Default, Options{}); err == nil || !strings.Contains(err.Error(), "needs a directory") {
		t.Fatalf("New of a disk cache without a directory: %v", err)
	}
	tier, err := New(Config{MemoryBytes: 1 << 20, DiskBytes: 1 << 20, DiskDir: t.TempDir()}, vfs.Default, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, ok := tier.(stack)
	if !ok || len(s) != 2 {
		t.Fatalf("tiers %T %v", tier, tier)
	}
	if _, ok := s[0].(*Memory); !ok {
		t.Fatalf("first tier %T, want memory", s[0])
	}
	if _, ok := s[1].(*Disk); !ok {
		t.Fatalf("second tier %T, want disk", s[1])
	}
	var src counting
	k := Key{Object: "o", Length: 64}
	for range 3 {
		v, err := tier.Get(context.Background(), k, src.load(k))
		checkValue(t, k, v, err)
	}
	if src.loads.Load() != 1 {
		t.Fatalf("%d loads, want 1", src.loads.Load())
	}
}
