package vfs

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemFS is an in-memory file system that remembers what a power loss would
// keep. A file's data is durable up to its last Sync; a name (created,
// renamed, removed, linked, or a new directory) is durable once its parent
// directory has been synced with SyncDir. CrashClone returns a new MemFS
// holding only that durable state, so tests can "pull the plug" at any moment
// and check what recovery finds.
//
// Paths are slash-separated; relative paths are taken from the root. A MemFS
// is safe for concurrent use.
type MemFS struct {
	mu   sync.Mutex
	root *memNode
}

var _ FS = (*MemFS)(nil)

// memNode is a file or a directory. Files and directories are guarded by the
// MemFS mutex.
type memNode struct {
	dir bool

	// Files. data is the live content and synced the durable content, in
	// arrays of their own; data[:dirty] equals synced[:dirty], so a sync
	// copies only what changed since the last one.
	data   []byte
	synced []byte
	dirty  int

	// Directories: the live entries and those a crash would keep.
	children map[string]*memNode
	durable  map[string]*memNode

	modTime time.Time
}

func newMemDir() *memNode {
	return &memNode{dir: true, children: map[string]*memNode{}, durable: map[string]*memNode{}, modTime: time.Now()}
}

// NewMem returns an empty in-memory file system.
func NewMem() *MemFS { return &MemFS{root: newMemDir()} }

// CrashClone returns a new MemFS holding only the durable state of fs, as the
// disk would look after a power loss: unsynced data and unsynced names are
// gone. Files linked under several names stay linked in the clone.
func (m *MemFS) CrashClone() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*memNode]*memNode{}
	var clone func(n *memNode) *memNode
	clone = func(n *memNode) *memNode {
		if c, ok := seen[n]; ok {
			return c
		}
		if !n.dir {
			c := &memNode{data: slices.Clone(n.synced), synced: slices.Clone(n.synced), dirty: len(n.synced), modTime: n.modTime}
			seen[n] = c
			return c
		}
		c := newMemDir()
		seen[n] = c
		for name, child := range n.durable {
			cc := clone(child)
			c.children[name] = cc
			c.durable[name] = cc
		}
		return c
	}
	return &MemFS{root: clone(m.root)}
}

// split cleans name into its path elements below the root.
func split(name string) []string {
	name = filepath.ToSlash(filepath.Clean("/" + name))
	if name == "/" {
		return nil
	}
	return strings.Split(name[1:], "/")
}

// walk returns the directory holding the last element of name, and that
// element. It fails if an intermediate directory is missing.
func (m *MemFS) walk(op, name string) (*memNode, string, error) {
	parts := split(name)
	if len(parts) == 0 {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	dir := m.root
	for _, p := range parts[:len(parts)-1] {
		next, ok := dir.children[p]
		if !ok {
			return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		if !next.dir {
			return nil, "", &fs.PathError{Op: op, Path: name, Err: errNotDir}
		}
		dir = next
	}
	return dir, parts[len(parts)-1], nil
}

// lookup returns the node named name.
func (m *MemFS) lookup(op, name string) (*memNode, error) {
	if len(split(name)) == 0 {
		return m.root, nil
	}
	dir, base, err := m.walk(op, name)
	if err != nil {
		return nil, err
	}
	n, ok := dir.children[base]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return n, nil
}

var (
	errNotDir = errors.New("vfs: not a directory")
	errIsDir  = errors.New("vfs: is a directory")
)

// Create creates or truncates the named file for writing.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.walk("create", name)
	if err != nil {
		return nil, err
	}
	n, ok := dir.children[base]
	switch {
	case !ok:
		n = &memNode{}
		dir.children[base] = n
	case n.dir:
		return nil, &fs.PathError{Op: "create", Path: name, Err: errIsDir}
	default:
		n.truncate(0)
	}
	n.modTime = time.Now()
	return &memFile{fs: m, n: n, name: name, write: true}, nil
}

// CreateExclusive creates the named file, failing if it exists.
func (m *MemFS) CreateExclusive(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.walk("create", name)
	if err != nil {
		return nil, err
	}
	if _, ok := dir.children[base]; ok {
		return nil, &fs.PathError{Op: "create", Path: name, Err: fs.ErrExist}
	}
	n := &memNode{modTime: time.Now()}
	dir.children[base] = n
	return &memFile{fs: m, n: n, name: name, write: true}, nil
}

// Open opens the named file for reading.
func (m *MemFS) Open(name string) (File, error) {
	return m.openFile(name, false)
}

// OpenAppend opens an existing file for reading and appending.
func (m *MemFS) OpenAppend(name string) (File, error) {
	return m.openFile(name, true)
}

// openFile opens an existing regular file, for appending if appendable.
func (m *MemFS) openFile(name string, appendable bool) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup("open", name)
	if err != nil {
		return nil, err
	}
	if n.dir {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errIsDir}
	}
	return &memFile{fs: m, n: n, name: name, write: appendable, append: appendable}, nil
}

// Remove removes a file or an empty directory.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.walk("remove", name)
	if err != nil {
		return err
	}
	n, ok := dir.children[base]
	if !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if n.dir && len(n.children) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: errors.New("vfs: directory not empty")}
	}
	delete(dir.children, base)
	return nil
}

// RemoveAll removes name and everything below it.
func (m *MemFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.walk("removeall", name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	delete(dir.children, base)
	return nil
}

// Rename renames oldname to newname, replacing a file at newname.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	odir, obase, err := m.walk("rename", oldname)
	if err != nil {
		return err
	}
	n, ok := odir.children[obase]
	if !ok {
		return &fs.PathError{Op: "rename", Path: oldname, Err: fs.ErrNotExist}
	}
	ndir, nbase, err := m.walk("rename", newname)
	if err != nil {
		return err
	}
	if old, ok := ndir.children[nbase]; ok && old.dir != n.dir {
		return &fs.PathError{Op: "rename", Path: newname, Err: fs.ErrExist}
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	return nil
}

// Truncate changes the size of the named file.
func (m *MemFS) Truncate(name string, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup("truncate", name)
	if err != nil {
		return err
	}
	if n.dir {
		return &fs.PathError{Op: "truncate", Path: name, Err: errIsDir}
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: name, Err: fs.ErrInvalid}
	}
	n.truncate(size)
	return nil
}

// truncate resizes a file.
func (n *memNode) truncate(size int64) {
	n.dirty = min(n.dirty, len(n.data), int(size))
	if size <= int64(len(n.data)) {
		n.data = n.data[:size]
	} else {
		n.data = append(n.data, make([]byte, size-int64(len(n.data)))...)
	}
	n.modTime = time.Now()
}

// sync makes the file's data durable.
func (n *memNode) sync() {
	from := min(n.dirty, len(n.data), len(n.synced))
	n.synced = append(n.synced[:from], n.data[from:]...)
	n.dirty = len(n.data)
}

// Link makes newname another name of the file oldname.
func (m *MemFS) Link(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup("link", oldname)
	if err != nil {
		return err
	}
	if n.dir {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: errIsDir}
	}
	dir, base, err := m.walk("link", newname)
	if err != nil {
		return err
	}
	if _, ok := dir.children[base]; ok {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: fs.ErrExist}
	}
	dir.children[base] = n
	return nil
}

// MkdirAll creates dir and any missing parents. Each new directory's name is
// durable only after its parent is synced, as on a real disk.
func (m *MemFS) MkdirAll(dir string, _ os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, p := range split(dir) {
		next, ok := n.children[p]
		if !ok {
			next = newMemDir()
			n.children[p] = next
		}
		if !next.dir {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: errNotDir}
		}
		n = next
	}
	return nil
}

// ReadDir lists the names in dir, sorted.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup("readdir", dir)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: errNotDir}
	}
	return slices.Sorted(maps.Keys(n.children)), nil
}

// Stat describes the named file.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return n.info(name), nil
}

// SyncDir makes the current entries of dir durable.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup("syncdir", dir)
	if err != nil {
		return err
	}
	if !n.dir {
		return &fs.PathError{Op: "syncdir", Path: dir, Err: errNotDir}
	}
	n.durable = maps.Clone(n.children)
	return nil
}

func (n *memNode) info(name string) os.FileInfo {
	fi := memInfo{name: filepath.Base(name), size: int64(len(n.data)), mod: n.modTime, mode: 0o644}
	if n.dir {
		fi.size, fi.mode = 0, fs.ModeDir|0o755
	}
	return fi
}

// memFile is an open file of a MemFS. Its node may be renamed or removed while
// open, as with an open file descriptor.
type memFile struct {
	fs     *MemFS
	n      *memNode
	name   string
	pos    int64
	write  bool
	append bool
	closed bool
}

var _ File = (*memFile)(nil)

func (f *memFile) check(op string, write bool) error {
	if f.closed {
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	}
	if write && !f.write {
		return &fs.PathError{Op: op, Path: f.name, Err: errors.New("vfs: file not open for writing")}
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if f.pos >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[f.pos:])
	f.pos += int64(k)
	return k, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[off:])
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if f.append {
		f.pos = int64(len(f.n.data))
	}
	f.n.writeAt(p, f.pos)
	f.pos += int64(len(p))
	return len(p), nil
}

func (n *memNode) writeAt(p []byte, off int64) {
	if off > int64(len(n.data)) {
		n.data = append(n.data, make([]byte, off-int64(len(n.data)))...)
	}
	n.dirty = min(n.dirty, int(off))
	k := copy(n.data[off:], p)
	n.data = append(n.data, p[k:]...)
	n.modTime = time.Now()
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("sync", false); err != nil {
		return err
	}
	f.n.sync()
	return nil
}

// SyncData is Sync: a MemFS keeps no metadata that a crash could lose.
func (f *memFile) SyncData() error { return f.Sync() }

func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("stat", false); err != nil {
		return nil, err
	}
	return f.n.info(f.name), nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("close", false); err != nil {
		return err
	}
	f.closed = true
	return nil
}

type memInfo struct {
	name string
	size int64
	mode fs.FileMode
	mod  time.Time
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }
