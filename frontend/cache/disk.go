package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sedimentdb/sediment/internal/vfs"
)

const tempSuffix = ".tmp"

// Disk is a byte-bounded tier of files in a local directory, with CLOCK
// eviction, an approximation of least recently used. Each entry is one
// checksummed file (see the package comment); a file that fails verification
// is removed and loaded again, never served. Files are written under a
// temporary name and renamed into place, so a crash leaves at worst a
// temporary file, which OpenDisk removes. A directory must be used by one
// Disk at a time.
type Disk struct {
	fs     vfs.FS
	dir    string
	limit  int64
	logger *slog.Logger
	flight flight[Key]
	tmpSeq atomic.Uint64

	hits, misses, loadErrors, corrupt atomic.Uint64
	lastWarn                          atomic.Int64 // unix nanoseconds

	// mu guards index and evictions. It is held across every rename into and
	// removal of a cache file, so a file is never removed by an eviction just
	// after another load renamed a fresh copy to its name.
	mu        sync.Mutex
	index     *clock[digest, int64] // file sizes
	evictions uint64
}

var _ Tier = (*Disk)(nil)

// OpenDisk opens the disk tier in dir, creating it if needed, holding at most
// maxBytes of files. It indexes the files a previous run left, oldest first,
// removes temporary files of writes a crash interrupted, and evicts the
// oldest files if they exceed maxBytes. Files are verified when read, not
// here, so opening a large cache costs a directory listing and a stat per file.
func OpenDisk(fsys vfs.FS, dir string, maxBytes int64, o Options) (*Disk, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("cache: disk tier needs a positive size, got %d", maxBytes)
	}
	d := &Disk{fs: fsys, dir: dir, limit: maxBytes, logger: o.logger().With("component", "cache", "tier", "disk", "cache", o.Name)}
	d.index = newClock(maxBytes, d.evict)

	type found struct {
		digest digest
		size   int64
		mtime  time.Time
	}
	var files []found
	for i := range 256 {
		sub := filepath.Join(dir, fmt.Sprintf("%02x", i))
		if err := fsys.MkdirAll(sub, 0o755); err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		names, err := fsys.ReadDir(sub)
		if err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		for _, name := range names {
			p := filepath.Join(sub, name)
			if strings.HasSuffix(name, tempSuffix) {
				if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("cache: removing interrupted write: %w", err)
				}
				continue
			}
			dg, ok := parseDigest(name)
			if !ok || dg[0] != byte(i) {
				d.logger.Warn("ignoring foreign file in cache directory", "file", p)
				continue
			}
			info, err := fsys.Stat(p)
			if err != nil {
				return nil, fmt.Errorf("cache: %w", err)
			}
			if info.Size() < minEntryLen {
				// A crash before the data reached the disk, or damage.
				d.corrupt.Add(1)
				d.logger.Warn("dropping corrupt cache entry", "file", p, "size", info.Size())
				if err := fsys.Remove(p); err != nil {
					return nil, fmt.Errorf("cache: removing corrupt entry: %w", err)
				}
				continue
			}
			files = append(files, found{dg, info.Size(), info.ModTime()})
		}
	}
	// Access times are not kept on disk; write times order the rebuilt index.
	slices.SortStableFunc(files, func(a, b found) int { return a.mtime.Compare(b.mtime) })
	d.mu.Lock()
	for _, f := range files {
		if !d.index.add(f.digest, f.size, f.size) {
			d.evict(f.digest, f.size) // larger than the whole tier
		}
	}
	d.mu.Unlock()
	registerMetrics(o.Registerer, "disk", o, d.Stats)
	return d, nil
}

func (d *Disk) path(dg digest) string {
	name := dg.name()
	return filepath.Join(d.dir, name[:2], name)
}

// Get implements Tier.
func (d *Disk) Get(ctx context.Context, key Key, load LoadFunc) ([]byte, error) {
	dg := digestOf(key)
	if v, ok := d.read(key, dg); ok {
		d.hits.Add(1)
		return v, nil
	}
	d.misses.Add(1)
	return d.flight.do(ctx, key, func(ctx context.Context) ([]byte, error) {
		if v, ok := d.read(key, dg); ok { // written by a load that finished after our lookup
			return v, nil
		}
		v, err := load(ctx)
		if err != nil {
			if ctx.Err() == nil { // not abandoned by every caller
				d.loadErrors.Add(1)
			}
			return nil, err
		}
		d.store(key, dg, v)
		return v, nil
	})
}

// read returns the value of key if its file is indexed and verifies.
func (d *Disk) read(key Key, dg digest) ([]byte, bool) {
	d.mu.Lock()
	size, ok := d.index.get(dg)
	d.mu.Unlock()
	if !ok {
		return nil, false
	}
	p := d.path(dg)
	k, v, err := d.readFile(p, size)
	switch {
	case err == nil && k == key:
		return v, true
	case err == nil:
		return nil, false // a digest collision: the file belongs to another key
	case errors.Is(err, fs.ErrNotExist):
		return nil, false // evicted since the lookup
	case !errors.Is(err, ErrCorrupt):
		// Perhaps transient (out of file descriptors): keep the entry.
		d.warn("reading cache entry", "file", p, "err", err)
		return nil, false
	}
	d.corrupt.Add(1)
	d.warn("dropping corrupt cache entry", "file", p, "err", err)
	d.mu.Lock()
	if d.index.remove(dg) {
		if err := d.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.warn("removing corrupt cache entry", "file", p, "err", err)
		}
	}
	d.mu.Unlock()
	return nil, false
}

func (d *Disk) readFile(p string, size int64) (Key, []byte, error) {
	f, err := d.fs.Open(p)
	if err != nil {
		return Key{}, nil, err
	}
	defer f.Close()
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil {
		if errors.Is(err, io.EOF) {
			return Key{}, nil, fmt.Errorf("%w: truncated to fewer than %d bytes", ErrCorrupt, size)
		}
		return Key{}, nil, err
	}
	return decodeEntry(buf)
}

// store writes value to key's file and indexes it. A failure only costs a
// future hit, so it is logged rather than returned.
func (d *Disk) store(key Key, dg digest, value []byte) {
	size := entryLen(key, len(value))
	if size > d.limit {
		return
	}
	final := d.path(dg)
	// Unique per write: a load abandoned by its callers may still be writing
	// when the next load of the same key starts.
	tmp := fmt.Sprintf("%s.%d%s", final, d.tmpSeq.Add(1), tempSuffix)
	if err := d.writeFile(tmp, encodeEntry(key, value)); err != nil {
		d.warn("writing cache entry", "file", tmp, "err", err)
		if err := d.fs.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.warn("removing failed cache write", "file", tmp, "err", err)
		}
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fs.Rename(tmp, final); err != nil {
		d.warn("renaming cache entry", "file", tmp, "err", err)
		if err := d.fs.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.warn("removing failed cache write", "file", tmp, "err", err)
		}
		return
	}
	d.index.add(dg, size, size)
}

// writeFile writes b to a new file. It does not sync: a file a power loss
// damages fails its checksum and is dropped, and durability of a cache is
// only worth a future hit, not an fsync on every miss.
func (d *Disk) writeFile(p string, b []byte) error {
	f, err := d.fs.Create(p)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// evict removes an evicted entry's file; it runs with mu held.
func (d *Disk) evict(dg digest, _ int64) {
	d.evictions++
	p := d.path(dg)
	if err := d.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.warn("removing evicted cache entry", "file", p, "err", err)
	}
}

// warn logs at most one warning a second: a failing disk would otherwise log
// on every read.
func (d *Disk) warn(msg string, args ...any) {
	now, last := time.Now().UnixNano(), d.lastWarn.Load()
	if now-last < int64(time.Second) || !d.lastWarn.CompareAndSwap(last, now) {
		return
	}
	d.logger.Warn(msg, args...)
}

// Stats returns the tier's counters. Bytes is the sum of the sizes of the
// files held.
func (d *Disk) Stats() Stats {
	d.mu.Lock()
	s := Stats{Evictions: d.evictions, Bytes: d.index.size, Entries: int64(d.index.len())}
	d.mu.Unlock()
	s.Hits, s.Misses = d.hits.Load(), d.misses.Load()
	s.LoadErrors, s.Corrupt = d.loadErrors.Load(), d.corrupt.Load()
	return s
}

// MaxBytes returns the bound on the bytes of files the tier holds.
func (d *Disk) MaxBytes() int64 { return d.limit }
