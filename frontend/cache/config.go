package cache

import (
	"errors"
	"flag"
	"fmt"

	"github.com/sedimentdb/sediment/internal/vfs"
)

// Config sizes the block caches of a process.
type Config struct {
	MemoryBytes int64  `yaml:"memory_bytes"`
	DiskBytes   int64  `yaml:"disk_bytes"`
	DiskDir     string `yaml:"disk_dir"`
}

// RegisterFlags registers the cache flags in f, with their defaults.
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	f.Int64Var(&c.MemoryBytes, "cache.memory-bytes", 256<<20, "Bytes of SSTable blocks to keep in memory; 0 disables the memory cache.")
	f.Int64Var(&c.DiskBytes, "cache.disk-bytes", 0, "Bytes of SSTable blocks to keep on local disk; 0 disables the disk cache.")
	f.StringVar(&c.DiskDir, "cache.disk-dir", "", "Directory of the disk cache, used by one process at a time.")
}

// Validate reports a configuration that cannot work.
func (c *Config) Validate() error {
	var errs []error
	if c.MemoryBytes < 0 {
		errs = append(errs, fmt.Errorf("cache: -cache.memory-bytes must not be negative, got %d", c.MemoryBytes))
	}
	if c.DiskBytes < 0 {
		errs = append(errs, fmt.Errorf("cache: -cache.disk-bytes must not be negative, got %d", c.DiskBytes))
	}
	if c.DiskBytes > 0 && c.DiskDir == "" {
		errs = append(errs, errors.New("cache: -cache.disk-bytes needs -cache.disk-dir"))
	}
	if c.DiskBytes == 0 && c.DiskDir != "" {
		errs = append(errs, errors.New("cache: -cache.disk-dir is set but -cache.disk-bytes is 0"))
	}
	return errors.Join(errs...)
}

// New builds the tiers cfg asks for: memory in front of disk. With neither,
// the returned tier calls load on every Get.
func New(cfg Config, fsys vfs.FS, o Options) (Tier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var tiers []Tier
	if cfg.MemoryBytes > 0 {
		tiers = append(tiers, NewMemory(cfg.MemoryBytes, o))
	}
	if cfg.DiskBytes > 0 {
		d, err := OpenDisk(fsys, cfg.DiskDir, cfg.DiskBytes, o)
		if err != nil {
			return nil, err
		}
		tiers = append(tiers, d)
	}
	return Stack(tiers...), nil
}
