// Package errorfs wraps a vfs.FS so tests can make chosen operations fail:
// a failing fsync, a full disk on write, a directory that cannot be listed.
//
// An Injector decides, for every operation and path, whether it fails. Rule
// covers the common cases (operation kinds, a path predicate, after N
// matching calls, at most M times); InjectorFunc covers the rest.
//
//	fs := errorfs.Wrap(vfs.NewMem(), &errorfs.Rule{Ops: errorfs.OpSync, After: 3})
package errorfs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/sedimentdb/sediment/internal/vfs"
)

// ErrInjected is the error a Rule returns when it has no Err of its own.
var ErrInjected = errors.New("errorfs: injected error")

// Op is a kind of file-system operation. Ops combine as a bit set.
type Op uint32

// The operations an Injector is asked about. File operations (Read, ReadAt,
// Write, Sync, Close, Stat on a File) carry the path the file was opened with.
const (
	OpCreate Op = 1 << iota // Create and CreateExclusive
	OpOpen                  // Open and OpenAppend
	OpRemove                // Remove and RemoveAll
	OpRename
	OpTruncate
	OpLink
	OpMkdirAll
	OpReadDir
	OpStat // FS.Stat and File.Stat
	OpSyncDir
	OpRead // File.Read and File.ReadAt
	OpWrite
	OpSync
	OpClose

	// OpAll matches every operation.
	OpAll Op = 1<<iota - 1
)

var opNames = []string{"create", "open", "remove", "rename", "truncate", "link", "mkdirall",
	"readdir", "stat", "syncdir", "read", "write", "sync", "close"}

func (o Op) String() string {
	var names []string
	for i, n := range opNames {
		if o&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("Op(%#x)", uint32(o))
	}
	return strings.Join(names, "|")
}

// Injector decides whether an operation fails: a non-nil error is returned
// to the caller in place of performing the operation.
type Injector interface {
	Inject(op Op, path string) error
}

// InjectorFunc adapts a function to an Injector.
type InjectorFunc func(op Op, path string) error

// Inject calls f.
func (f InjectorFunc) Inject(op Op, path string) error { return f(op, path) }

// Rule fails operations of the kinds in Ops whose path satisfies Path (any
// path if nil), once After matching calls have succeeded, at most Times
// times (0 means without limit). A Rule must not be copied after first use.
type Rule struct {
	Ops   Op
	Path  func(path string) bool
	After int64
	Times int64
	Err   error // ErrInjected if nil

	calls  atomic.Int64
	failed atomic.Int64
}

var _ Injector = (*Rule)(nil)

// Inject implements Injector.
func (r *Rule) Inject(op Op, path string) error {
	if r.Ops&op == 0 || (r.Path != nil && !r.Path(path)) {
		return nil
	}
	if r.calls.Add(1) <= r.After {
		return nil
	}
	if r.Times > 0 && r.failed.Add(1) > r.Times {
		return nil
	}
	if r.Err != nil {
		return r.Err
	}
	return ErrInjected
}

// Calls reports how many operations matched the rule's kinds and path.
func (r *Rule) Calls() int64 { return r.calls.Load() }

// FS is a vfs.FS whose operations first ask an Injector.
type FS struct {
	vfs.FS
	inj Injector
}

var _ vfs.FS = (*FS)(nil)

// Wrap returns fs with errors injected by inj.
func Wrap(fs vfs.FS, inj Injector) *FS { return &FS{FS: fs, inj: inj} }

func (fs *FS) inject(op Op, path string) error {
	if err := fs.inj.Inject(op, path); err != nil {
		return &os.PathError{Op: op.String(), Path: path, Err: err}
	}
	return nil
}

func (fs *FS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &file{File: f, fs: fs, name: name}, nil
}

func (fs *FS) Create(name string) (vfs.File, error) {
	if err := fs.inject(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := fs.FS.Create(name)
	return fs.wrap(name, f, err)
}

func (fs *FS) CreateExclusive(name string) (vfs.File, error) {
	if err := fs.inject(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := fs.FS.CreateExclusive(name)
	return fs.wrap(name, f, err)
}

func (fs *FS) Open(name string) (vfs.File, error) {
	if err := fs.inject(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := fs.FS.Open(name)
	return fs.wrap(name, f, err)
}

func (fs *FS) OpenAppend(name string) (vfs.File, error) {
	if err := fs.inject(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := fs.FS.OpenAppend(name)
	return fs.wrap(name, f, err)
}

func (fs *FS) Remove(name string) error {
	if err := fs.inject(OpRemove, name); err != nil {
		return err
	}
	return fs.FS.Remove(name)
}

func (fs *FS) RemoveAll(name string) error {
	if err := fs.inject(OpRemove, name); err != nil {
		return err
	}
	return fs.FS.RemoveAll(name)
}

// Rename asks about the old name.
func (fs *FS) Rename(oldname, newname string) error {
	if err := fs.inject(OpRename, oldname); err != nil {
		return err
	}
	return fs.FS.Rename(oldname, newname)
}

func (fs *FS) Truncate(name string, size int64) error {
	if err := fs.inject(OpTruncate, name); err != nil {
		return err
	}
	return fs.FS.Truncate(name, size)
}

// Link asks about the new name.
func (fs *FS) Link(oldname, newname string) error {
	if err := fs.inject(OpLink, newname); err != nil {
		return err
	}
	return fs.FS.Link(oldname, newname)
}

func (fs *FS) MkdirAll(dir string, perm os.FileMode) error {
	if err := fs.inject(OpMkdirAll, dir); err != nil {
		return err
	}
	return fs.FS.MkdirAll(dir, perm)
}

func (fs *FS) ReadDir(dir string) ([]string, error) {
	if err := fs.inject(OpReadDir, dir); err != nil {
		return nil, err
	}
	return fs.FS.ReadDir(dir)
}

func (fs *FS) Stat(name string) (os.FileInfo, error) {
	if err := fs.inject(OpStat, name); err != nil {
		return nil, err
	}
	return fs.FS.Stat(name)
}

func (fs *FS) SyncDir(dir string) error {
	if err := fs.inject(OpSyncDir, dir); err != nil {
		return err
	}
	return fs.FS.SyncDir(dir)
}

// file asks the injector before each operation on an open file.
type file struct {
	vfs.File
	fs   *FS
	name string
}

var _ vfs.File = (*file)(nil)

func (f *file) Read(p []byte) (int, error) {
	if err := f.fs.inject(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.inject(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *file) Write(p []byte) (int, error) {
	if err := f.fs.inject(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *file) Sync() error {
	if err := f.fs.inject(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

// SyncData is injected as OpSync: to a caller, both make data durable.
func (f *file) SyncData() error {
	if err := f.fs.inject(OpSync, f.name); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *file) Stat() (os.FileInfo, error) {
	if err := f.fs.inject(OpStat, f.name); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

// Close always closes the underlying file, so an injected failure does not
// leak it, and then reports the injected error.
func (f *file) Close() error {
	err := f.File.Close()
	if ierr := f.fs.inject(OpClose, f.name); ierr != nil {
		return ierr
	}
	return err
}
