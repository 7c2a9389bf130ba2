package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/internal/vfs"
)

func openDisk(t *testing.T, fsys vfs.FS, dir string, limit int64) *Disk {
	t.Helper()
	d, err := OpenDisk(fsys, dir, limit, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// files lists the files under dir (relative names) with their sizes.
func files(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := make(map[string]int64)
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDiskHitAndRestart(t *testing.T) {
	dir := t.TempDir()
	d := openDisk(t, vfs.Default, dir, 1<<20)
	var src counting
	keys := []Key{
		{Object: "a/b/c.sst", Offset: 0, Length: 32 << 10},
		{Object: "a/b/c.sst", Offset: 32 << 10, Length: 1},
		{Object: "other", Offset: 7, Length: 0},
	}
	for range 2 {
		for _, k := range keys {
			v, err := d.Get(t.Context(), k, src.load(k))
			checkValue(t, k, v, err)
		}
	}
	if n := src.loads.Load(); n != int64(len(keys)) {
		t.Fatalf("%d loads, want %d", n, len(keys))
	}
	s := d.Stats()
	if s.Hits != 3 || s.Misses != 3 || s.Entries != 3 {
		t.Fatalf("stats %+v", s)
	}
	var onDisk int64
	for _, size := range files(t, dir) {
		onDisk += size
	}
	if onDisk != s.Bytes {
		t.Fatalf("files hold %d bytes, index says %d", onDisk, s.Bytes)
	}

	// A new Disk on the same directory finds every entry.
	d2 := openDisk(t, vfs.Default, dir, 1<<20)
	if s2 := d2.Stats(); s2.Entries != 3 || s2.Bytes != s.Bytes {
		t.Fatalf("reopened stats %+v, want %d entries of %d bytes", s2, 3, s.Bytes)
	}
	for _, k := range keys {
		v, err := d2.Get(t.Context(), k, func(context.Context) ([]byte, error) {
			return nil, errors.New("loaded after restart")
		})
		checkValue(t, k, v, err)
	}
}

func TestDiskCorruptEntryIsRefetched(t *testing.T) {
	cases := map[string]func(b []byte) []byte{
		"flip value byte": func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b },
		"flip crc":        func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"flip key":        func(b []byte) []byte { b[entryHeaderLen+2] ^= 1; return b },
		"truncate":        func(b []byte) []byte { return b[:len(b)-10] },
		"zero":            func(b []byte) []byte { clear(b); return b },
		"empty":           func(b []byte) []byte { return nil },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			var log bytes.Buffer
			d, err := OpenDisk(vfs.Default, t.TempDir(), 1<<20, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			k := Key{Object: "obj", Offset: 1 << 20, Length: 5000}
			var src counting
			v, err := d.Get(t.Context(), k, src.load(k))
			checkValue(t, k, v, err)

			p := d.path(digestOf(k))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			v, err = d.Get(t.Context(), k, src.load(k))
			checkValue(t, k, v, err)
			if src.loads.Load() != 2 {
				t.Fatalf("%d loads, want the damaged entry refetched", src.loads.Load())
			}
			if s := d.Stats(); s.Corrupt != 1 || s.Entries != 1 {
				t.Fatalf("stats %+v, want one corrupt entry and the refetched one held", s)
			}
			if !strings.Contains(log.String(), "dropping corrupt cache entry") {
				t.Fatalf("corruption not logged; log: %q", log.String())
			}
			// The refetched entry was rewritten and now hits.
			v, err = d.Get(t.Context(), k, src.load(k))
			checkValue(t, k, v, err)
			if src.loads.Load() != 2 {
				t.Fatal("the refetched entry was not cached again")
			}
		})
	}
}

// TestDiskForeignKeyIsNotServed puts one key's intact file under another
// key's name, as a digest collision would: it must read as a miss.
func TestDiskForeignKeyIsNotServed(t *testing.T) {
	dir := t.TempDir()
	d := openDisk(t, vfs.Default, dir, 1<<20)
	a, b := Key{Object: "a", Length: 100}, Key{Object: "b", Length: 100}
	var src counting
	for _, k := range []Key{a, b} {
		d.Get(t.Context(), k, src.load(k))
	}
	if err := os.Rename(d.path(digestOf(a)), d.path(digestOf(b))); err != nil {
		t.Fatal(err)
	}
	v, err := d.Get(t.Context(), b, src.load(b))
	checkValue(t, b, v, err)
	if src.loads.Load() != 3 {
		t.Fatalf("%d loads, want b loaded again", src.loads.Load())
	}
}

// crashFS simulates a process that dies while writing a cache file: the
// write at which it crashes stores only half its bytes, and every operation
// after that fails, so nothing is cleaned up.
type crashFS struct {
	vfs.FS
	crashed atomic.Bool
}

var errCrashed = errors.New("crashed")

type crashFile struct {
	vfs.File
	fs *crashFS
}

func (c *crashFS) Create(name string) (vfs.File, error) {
	if c.crashed.Load() {
		return nil, errCrashed
	}
	f, err := c.FS.Create(name)
	return &crashFile{f, c}, err
}

func (c *crashFS) Rename(from, to string) error {
	if c.crashed.Load() {
		return errCrashed
	}
	return c.FS.Rename(from, to)
}

func (c *crashFS) Remove(name string) error {
	if c.crashed.Load() {
		return errCrashed
	}
	return c.FS.Remove(name)
}

func (f *crashFile) Write(p []byte) (int, error) {
	f.fs.crashed.Store(true)
	n, _ := f.File.Write(p[:len(p)/2])
	return n, errCrashed
}

func TestDiskCrashMidWrite(t *testing.T) {
	dir := t.TempDir()
	d := openDisk(t, vfs.Default, dir, 1<<20)
	var src counting
	kept := Key{Object: "kept", Length: 3000}
	d.Get(t.Context(), kept, src.load(kept))

	crash := &crashFS{FS: vfs.Default}
	d = openDisk(t, crash, dir, 1<<20)
	lost := Key{Object: "lost", Length: 3000}
	v, err := d.Get(t.Context(), lost, src.load(lost))
	checkValue(t, lost, v, err) // the caller still gets its bytes
	var temps int
	for name := range files(t, dir) {
		if strings.HasSuffix(name, tempSuffix) {
			temps++
		}
	}
	if temps != 1 {
		t.Fatalf("%d temporary files after the crash, want 1", temps)
	}

	// A process that also left a stray, too-short entry (data never synced).
	stray := filepath.Join(dir, "ab", strings.Repeat("ab", 16))
	if err := os.WriteFile(stray, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	d = openDisk(t, vfs.Default, dir, 1<<20)
	left := files(t, dir)
	if len(left) != 1 {
		t.Fatalf("after reopen the directory holds %v, want only the kept entry", left)
	}
	if s := d.Stats(); s.Entries != 1 || s.Corrupt != 1 {
		t.Fatalf("stats %+v", s)
	}
	loads := src.loads.Load()
	for _, k := range []Key{kept, lost} {
		v, err := d.Get(t.Context(), k, src.load(k))
		checkValue(t, k, v, err)
	}
	if got := src.loads.Load() - loads; got != 1 {
		t.Fatalf("%d loads after reopen, want 1 (only the lost entry)", got)
	}
}

func TestDiskIgnoresForeignFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "00"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"00/README", "00/" + strings.Repeat("AB", 16), "00/" + strings.Repeat("ab", 16)} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, 100), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := openDisk(t, vfs.Default, dir, 1<<20)
	if s := d.Stats(); s.Entries != 0 {
		t.Fatalf("indexed foreign files: %+v", s)
	}
	if n := len(files(t, dir)); n != 3 {
		t.Fatalf("foreign files touched: %d left", n)
	}
}

// TestDiskBound runs a random workload and checks after every Get that
// neither the index nor the files in the directory exceed the bound.
func TestDiskBound(t *testing.T) {
	dir := t.TempDir()
	const limit = 300 << 10
	d := openDisk(t, vfs.Default, dir, limit)
	rng := rand.New(rand.NewPCG(3, 4))
	var src counting
	ops := 1500
	if testing.Short() {
		ops = 300
	}
	for i := range ops {
		off := rng.IntN(64)
		k := Key{Object: fmt.Sprintf("obj-%d", off%4), Offset: int64(off) << 15, Length: int64(off*617 + 1)}
		v, err := d.Get(t.Context(), k, src.load(k))
		checkValue(t, k, v, err)
		s := d.Stats()
		if s.Bytes > limit {
			t.Fatalf("op %d: index holds %d bytes, bound %d", i, s.Bytes, limit)
		}
		if i%50 == 0 {
			var onDisk int64
			for _, size := range files(t, dir) {
				onDisk += size
			}
			if onDisk != s.Bytes {
				t.Fatalf("op %d: files hold %d bytes, index %d", i, onDisk, s.Bytes)
			}
		}
	}
	if s := d.Stats(); s.Evictions == 0 || s.Hits == 0 {
		t.Fatalf("workload did not exercise eviction and hits: %+v", s)
	}
	// Reopening with a smaller bound evicts the oldest files.
	d = openDisk(t, vfs.Default, dir, limit/3)
	var onDisk int64
	for _, size := range files(t, dir) {
		onDisk += size
	}
	if s := d.Stats(); s.Bytes > limit/3 || onDisk != s.Bytes {
		t.Fatalf("after shrinking: index %d bytes, files %d, bound %d", s.Bytes, onDisk, limit/3)
	}
}

func TestDiskConcurrent(t *testing.T) {
	dir := t.TempDir()
	const limit = 256 << 10
	d := openDisk(t, vfs.Default, dir, limit)
	var src counting
	var wg sync.WaitGroup
	ops := 400
	if testing.Short() {
		ops = 100
	}
	for g := range 6 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range ops {
				k := Key{Object: "obj", Offset: int64(rng.IntN(24)) << 15, Length: 16 << 10}
				v, err := d.Get(t.Context(), k, src.load(k))
				checkValue(t, k, v, err)
				if s := d.Stats(); s.Bytes > limit {
					t.Errorf("holding %d bytes, bound %d", s.Bytes, limit)
					return
				}
			}
		})
	}
	wg.Wait()
	var onDisk int64
	for name, size := range files(t, dir) {
		if strings.HasSuffix(name, tempSuffix) {
			t.Errorf("temporary file %s left", name)
		}
		onDisk += size
	}
	if s := d.Stats(); onDisk != s.Bytes || s.Corrupt != 0 {
		t.Fatalf("files hold %d bytes; stats %+v", onDisk, s)
	}
}

func TestDiskSingleFlight(t *testing.T) {
	d := openDisk(t, vfs.Default, t.TempDir(), 1<<20)
	k := Key{Object: "obj", Length: 100}
	var loads atomic.Int32
	release := make(chan struct{})
	const n = 32
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			v, err := d.Get(t.Context(), k, func(context.Context) ([]byte, error) {
				loads.Add(1)
				<-release
				return valueOf(k), nil
			})
			checkValue(t, k, v, err)
		})
	}
	testwait.For(t, "every reader to miss", func() bool { return d.Stats().Misses >= n })
	close(release)
	testwait.Wait(t, "the readers", &wg)
	if loads.Load() != 1 {
		t.Fatalf("%d loads, want 1", loads.Load())
	}
}

func TestOpenDiskErrors(t *testing.T) {
	if _, err := OpenDisk(vfs.Default, t.TempDir(), 0, Options{}); err == nil {
		t.Fatal("opened a disk tier of size 0")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDisk(vfs.Default, file, 1<<20, Options{}); err == nil {
		t.Fatal("opened a disk tier in a regular file")
	}
}

func TestDiskReopenEvictsOldestWrites(t *testing.T) {
	dir := t.TempDir()
	d := openDisk(t, vfs.Default, dir, 1<<20)
	var src counting
	keys := []Key{{Object: "new", Length: 1000}, {Object: "old", Length: 1000}, {Object: "mid", Length: 1000}}
	base := time.Now().Add(-time.Hour)
	for i, age := range []time.Duration{1, 3, 2} { // minutes before base
		k := keys[i]
		d.Get(t.Context(), k, src.load(k))
		mtime := base.Add(-age * time.Minute)
		if err := os.Chtimes(d.path(digestOf(k)), mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	// Room for two entries: the oldest write goes.
	d = openDisk(t, vfs.Default, dir, 2*entryLen(keys[0], 1000))
	for _, k := range keys {
		_, err := os.Stat(d.path(digestOf(k)))
		if gone := errors.Is(err, fs.ErrNotExist); gone != (k.Object == "old") {
			t.Errorf("%s: stat after reopen: %v", k.Object, err)
		}
	}
	if s := d.Stats(); s.Entries != 2 || s.Evictions != 1 {
		t.Fatalf("stats %+v, want 2 entries after 1 eviction", s)
	}
}

// failingFS fails every Open and Create, like a dead disk.
type failingFS struct{ vfs.FS }

func (failingFS) Open(string) (vfs.File, error)   { return nil, errors.New("input/output error") }
func (failingFS) Create(string) (vfs.File, error) { return nil, errors.New("no space left on device") }

func TestDiskFailingDiskStillServes(t *testing.T) {
	dir := t.TempDir()
	d := openDisk(t, vfs.Default, dir, 1<<20)
	var src counting
	k := Key{Object: "o", Length: 2000}
	d.Get(t.Context(), k, src.load(k))

	d = openDisk(t, failingFS{vfs.Default}, dir, 1<<20)
	for range 2 {
		v, err := d.Get(t.Context(), k, src.load(k))
		checkValue(t, k, v, err)
	}
	// An I/O error may be transient: the entry is kept, not counted corrupt.
	if s := d.Stats(); s.Entries != 1 || s.Corrupt != 0 || s.Hits != 0 || src.loads.Load() != 3 {
		t.Fatalf("stats %+v, loads %d: want every read loaded", s, src.loads.Load())
	}
}
