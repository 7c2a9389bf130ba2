// Package vfs is the narrow file-system interface through which Sediment's
// storage code touches local disk (commitlogs, the file object store, the disk
// cache). Tests substitute an in-memory file system that can simulate a crash
// and a wrapper that injects errors.
package vfs

import (
	"io"
	"os"
)

// File is an open file. Sync makes its written contents durable; SyncData
// does too, but may leave metadata that reading the data does not need (the
// modification time) unsynced (fdatasync).
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	Sync() error
	SyncData() error
	Stat() (os.FileInfo, error)
}

// FS is the set of file-system operations storage code may use.
// Durability follows POSIX: a created, renamed or removed name is durable only
// after the parent directory has been synced (SyncDir).
type FS interface {
	// Create creates or truncates the named file for writing.
	Create(name string) (File, error)
	// CreateExclusive creates the named file, failing with an error satisfying
	// errors.Is(err, fs.ErrExist) if it already exists.
	CreateExclusive(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// OpenAppend opens an existing file for appending.
	OpenAppend(name string) (File, error)
	Remove(name string) error
	// RemoveAll removes a directory tree; a missing path is not an error.
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	// Truncate changes the size of the named file. Like written data, the new
	// size is durable only after the file has been synced.
	Truncate(name string, size int64) error
	// Link creates newname as a hard link to oldname, failing with an error
	// satisfying errors.Is(err, fs.ErrExist) if newname exists.
	Link(oldname, newname string) error
	MkdirAll(dir string, perm os.FileMode) error
	// ReadDir lists the names in dir, sorted.
	ReadDir(dir string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the names in dir (creations, renames, removals) durable.
	SyncDir(dir string) error
}
