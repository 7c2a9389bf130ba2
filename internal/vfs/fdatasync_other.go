//go:build !linux

package vfs

import "os"

// fdatasync falls back to a full sync where the system call is missing.
func fdatasync(f *os.File) error { return f.Sync() }
