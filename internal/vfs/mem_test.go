package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/sedimentdb/sediment/internal/testwait"
)

func writeFile(t *testing.T, fsys FS, name, data string, sync bool) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, fsys FS, name string) (string, error) {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

func mustRead(t *testing.T, fsys FS, name, want string) {
	t.Helper()
	got, err := readFile(t, fsys, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	if got != want {
		t.Fatalf("%s = %q, want %q", name, got, want)
	}
}

func mustNotExist(t *testing.T, fsys FS, name string) {
	t.Helper()
	if _, err := fsys.Stat(name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat %s: err = %v, want ErrNotExist", name, err)
	}
}

func TestMemBasics(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, m, "/a/b/f", "hello", false)
	mustRead(t, m, "a/b/f", "hello") // relative paths start at the root
	if _, err := m.CreateExclusive("/a/b/f"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateExclusive existing: %v", err)
	}
	if _, err := m.Create("/missing/f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Create in missing dir: %v", err)
	}

	f, err := m.OpenAppend("/a/b/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(" world")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if n, err := f.ReadAt(buf, 6); n != 5 || err != nil || string(buf) != "world" {
		t.Fatalf("ReadAt = %d %v %q", n, err, buf)
	}
	if n, err := f.ReadAt(buf, 8); n != 3 || err != io.EOF {
		t.Fatalf("ReadAt past end = %d %v", n, err)
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != 11 || fi.Name() != "f" || fi.IsDir() {
		t.Fatalf("Stat = %v %v", fi, err)
	}
	f.Close()
	if _, err := f.Write([]byte("x")); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}

	r, _ := m.Open("/a/b/f")
	if _, err := r.Write([]byte("x")); err == nil {
		t.Fatal("write to read-only file succeeded")
	}
	r.Close()

	if err := m.Truncate("/a/b/f", 5); err != nil {
		t.Fatal(err)
	}
	mustRead(t, m, "/a/b/f", "hello")
	if err := m.Link("/a/b/f", "/a/g"); err != nil {
		t.Fatal(err)
	}
	if err := m.Link("/a/b/f", "/a/g"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Link to existing: %v", err)
	}
	if err := m.Rename("/a/g", "/a/h"); err != nil {
		t.Fatal(err)
	}
	mustRead(t, m, "/a/h", "hello")
	mustNotExist(t, m, "/a/g")
	names, err := m.ReadDir("/a")
	if err != nil || !slices.Equal(names, []string{"b", "h"}) {
		t.Fatalf("ReadDir = %v %v", names, err)
	}
	if err := m.Remove("/a/b"); err == nil {
		t.Fatal("removed a non-empty directory")
	}
	if err := m.RemoveAll("/a/b"); err != nil {
		t.Fatal(err)
	}
	if err := m.RemoveAll("/nope/x"); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, m, "/a/b/f")
	mustRead(t, m, "/a/h", "hello") // the link keeps the data
}

func TestMemCrashCloneDropsUnsyncedData(t *testing.T) {
	m := NewMem()
	f, err := m.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("durable"))
	f.Sync()
	f.Write([]byte("+lost"))
	mustRead(t, m, "/f", "durable+lost")
	c := m.CrashClone()
	mustRead(t, c, "/f", "durable")

	// The clone is independent of the original and durable on its own.
	writeFile(t, c, "/f", "new", true)
	mustRead(t, m, "/f", "durable+lost")
	mustRead(t, c.CrashClone(), "/f", "new")

	// An unsynced truncation is undone by a crash; a synced one is kept.
	if err := m.Truncate("/f", 3); err != nil {
		t.Fatal(err)
	}
	mustRead(t, m.CrashClone(), "/f", "durable")
	f.Sync()
	mustRead(t, m.CrashClone(), "/f", "dur")

	// Data written after a sync into the same backing array must not leak
	// into the durable view, nor may overwriting the start of a file.
	f.Write([]byte("ABC"))
	mustRead(t, m.CrashClone(), "/f", "dur")
	g, _ := m.Create("/f")
	g.Write([]byte("xy"))
	mustRead(t, m.CrashClone(), "/f", "dur")
	mustRead(t, m, "/f", "xy")
}

func TestMemCrashCloneDropsUnsyncedNames(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	writeFile(t, m, "/d/a", "A", true)
	// Neither the directory nor the file name has been made durable.
	mustNotExist(t, m.CrashClone(), "/d")
	m.SyncDir("/")
	mustNotExist(t, m.CrashClone(), "/d/a")
	m.SyncDir("/d")
	mustRead(t, m.CrashClone(), "/d/a", "A")

	// An unsynced rename is undone.
	if err := m.Rename("/d/a", "/d/b"); err != nil {
		t.Fatal(err)
	}
	c := m.CrashClone()
	mustRead(t, c, "/d/a", "A")
	mustNotExist(t, c, "/d/b")
	m.SyncDir("/d")
	c = m.CrashClone()
	mustNotExist(t, c, "/d/a")
	mustRead(t, c, "/d/b", "A")

	// An unsynced removal is undone; a link survives as a link.
	m.Link("/d/b", "/d/c")
	m.SyncDir("/d")
	m.Remove("/d/b")
	c = m.CrashClone()
	mustRead(t, c, "/d/b", "A")
	f, _ := c.OpenAppend("/d/b")
	f.Write([]byte("Z"))
	f.Close()
	mustRead(t, c, "/d/c", "AZ")

	// A file created and synced but whose name was never synced is lost
	// with its data.
	writeFile(t, m, "/d/new", "data", true)
	mustNotExist(t, m.CrashClone(), "/d/new")
}

func TestMemConcurrent(t *testing.T) {
	m := NewMem()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("/f%d", i)
			f, err := m.Create(name)
			if err != nil {
				t.Error(err)
				return
			}
			for j := range 100 {
				f.Write([]byte{byte(j)})
				if j%10 == 0 {
					f.Sync()
					m.SyncDir("/")
					m.CrashClone()
				}
			}
			f.Close()
		})
	}
	testwait.Wait(t, "the writers", &wg)
	for i := range 8 {
		got, err := readFile(t, m, fmt.Sprintf("/f%d", i))
		if err != nil || len(got) != 100 || !bytes.Equal([]byte(got[:3]), []byte{0, 1, 2}) {
			t.Fatalf("f%d = %d bytes, %v", i, len(got), err)
		}
	}
}

// TestSameAsOS runs one sequence of operations against the OS file system
// and the MemFS and checks they agree, so the fake behaves like the real
// thing where storage code can observe it.
func TestSameAsOS(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   FS
		root string
	}{
		{"os", Default, t.TempDir()},
		{"mem", NewMem(), "/root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, p := tc.fs, func(name string) string { return tc.root + "/" + name }
			if err := fsys.MkdirAll(p("d/e"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, fsys, p("d/a"), "0123456789", true)
			if err := fsys.Truncate(p("d/a"), 4); err != nil {
				t.Fatal(err)
			}
			mustRead(t, fsys, p("d/a"), "0123")
			if err := fsys.Truncate(p("d/a"), 6); err != nil {
				t.Fatal(err)
			}
			mustRead(t, fsys, p("d/a"), "0123\x00\x00")
			if err := fsys.Truncate(p("d/missing"), 1); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("truncate missing: %v", err)
			}
			f, err := fsys.OpenAppend(p("d/a"))
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("xy"))
			// Appending leaves the offset at the end of the file.
			buf := make([]byte, 3)
			if n, err := f.Read(buf); n != 0 || err != io.EOF {
				t.Fatalf("read after append: %d %v", n, err)
			}
			if n, err := f.ReadAt(buf, 1); n != 3 || err != nil || string(buf) != "123" {
				t.Fatalf("ReadAt on append handle: %d %v %q", n, err, buf)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			mustRead(t, fsys, p("d/a"), "0123\x00\x00xy")
			if _, err := fsys.CreateExclusive(p("d/a")); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("CreateExclusive: %v", err)
			}
			if _, err := fsys.OpenAppend(p("d/none")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("OpenAppend missing: %v", err)
			}
			if err := fsys.Link(p("d/a"), p("d/e/b")); err != nil {
				t.Fatal(err)
			}
			if err := fsys.Rename(p("d/e/b"), p("d/c")); err != nil {
				t.Fatal(err)
			}
			names, err := fsys.ReadDir(p("d"))
			if err != nil || !slices.Equal(names, []string{"a", "c", "e"}) {
				t.Fatalf("ReadDir = %v %v", names, err)
			}
			fi, err := fsys.Stat(p("d/c"))
			if err != nil || fi.Size() != 8 || fi.IsDir() || fi.Name() != "c" {
				t.Fatalf("Stat = %v %v", fi, err)
			}
			if fi, err := fsys.Stat(p("d/e")); err != nil || !fi.IsDir() {
				t.Fatalf("Stat dir = %v %v", fi, err)
			}
			if err := fsys.SyncDir(p("d")); err != nil {
				t.Fatal(err)
			}
			if err := fsys.Remove(p("d/a")); err != nil {
				t.Fatal(err)
			}
			mustNotExist(t, fsys, p("d/a"))
			mustRead(t, fsys, p("d/c"), "0123\x00\x00xy")
			if err := fsys.Remove(p("d/a")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("second remove: %v", err)
			}
			if err := fsys.RemoveAll(p("d")); err != nil {
				t.Fatal(err)
			}
			mustNotExist(t, fsys, p("d"))
		})
	}
}

// TestSyncData checks that data appended to a synced file is
// durable after SyncData and lost without it, on MemFS and on the OS alike.
func TestSyncData(t *testing.T) {
	for _, fsys := range []FS{NewMem(), Default} {
		name := "/f"
		if fsys == Default {
			name = t.TempDir() + "/f"
		}
		f, err := fsys.CreateExclusive(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(make([]byte, 8)); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := fsys.SyncDir(filepath.Dir(name)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		f, err = fsys.OpenAppend(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("xyz")); err != nil {
			t.Fatal(err)
		}
		if mem, ok := fsys.(*MemFS); ok {
			if got, _ := readFile(t, mem.CrashClone(), name); got != string(make([]byte, 8)) {
				t.Fatalf("unsynced append survived a crash: %q", got)
			}
		}
		if err := f.SyncData(); err != nil {
			t.Fatal(err)
		}
		want := "\x00\x00\x00\x00\x00\x00\x00\x00xyz"
		if got, _ := readFile(t, fsys, name); got != want {
			t.Fatalf("file holds %q, want %q", got, want)
		}
		if mem, ok := fsys.(*MemFS); ok {
			if got, _ := readFile(t, mem.CrashClone(), name); got != want {
				t.Fatalf("after SyncData a crash keeps %q, want %q", got, want)
			}
		}
		f.Close()
	}
}
