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

// DefaultDiskBytes is the default bound of the disk cache: 2 GiB, room for
// the hot blocks of a laptop's data set, and well inside any disk a server
// has; Terraform sizes it from the frontends' volume.
const DefaultDiskBytes = 2 << 30

// RegisterFlags registers the cache flags in f, with their defaults.
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	f.Int64Var(&c.MemoryBytes, "cache.memory-bytes", 256<<20, "Bytes of SSTable blocks to keep in memory; 0 disables the memory cache.")
	// The disk cache is on by default: a frontend that restarts, or a
	// working set larger than memory, would otherwise read every block
	// from the bucket again, each a billed GET of tens of milliseconds.
	f.Int64Var(&c.DiskBytes, "cache.disk-bytes", DefaultDiskBytes, "Bytes of SSTable blocks to keep on local disk, at most; the least recently used go first. 0 disables the disk cache.")
	f.StringVar(&c.DiskDir, "cache.disk-dir", "", "Directory of the disk cache, used by one process at a time; empty: <data.dir>/cache.")
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
		if cfg.DiskDir == "" {
			// The frontend defaults it to <data.dir>/cache.
			return nil, errors.New("cache: the disk cache needs a directory")
		}
		d, err := OpenDisk(fsys, cfg.DiskDir, cfg.DiskBytes, o)
		if err != nil {
			return nil, err
		}
		tiers = append(tiers, d)
	}
	return Stack(tiers...), nil
}
