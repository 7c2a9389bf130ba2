package vfs

import (
	"os"
	"slices"
)

// Default is the operating system's file system.
var Default FS = osFS{}

type osFS struct{}

var _ FS = osFS{}

// osFile adds SyncData to an *os.File.
type osFile struct{ *os.File }

func (f osFile) SyncData() error { return fdatasync(f.File) }

func wrapFile(f *os.File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Create(name string) (File, error) { return wrapFile(os.Create(name)) }

func (osFS) CreateExclusive(name string) (File, error) {
	return wrapFile(os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644))
}

func (osFS) Open(name string) (File, error) { return wrapFile(os.Open(name)) }

func (osFS) OpenAppend(name string) (File, error) {
	return wrapFile(os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0))
}

func (osFS) Remove(name string) error                 { return os.Remove(name) }
func (osFS) RemoveAll(name string) error              { return os.RemoveAll(name) }
func (osFS) Rename(oldname, newname string) error     { return os.Rename(oldname, newname) }
func (osFS) Truncate(name string, n int64) error      { return os.Truncate(name, n) }
func (osFS) Link(oldname, newname string) error       { return os.Link(oldname, newname) }
func (osFS) MkdirAll(dir string, p os.FileMode) error { return os.MkdirAll(dir, p) }
func (osFS) Stat(name string) (os.FileInfo, error)    { return os.Stat(name) }

func (osFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	slices.Sort(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
