package vfs

import "path/filepath"

// WriteFileAtomic makes data durable as dir/name through a temporary file,
// fsync, rename and a sync of dir, so that a crash leaves either the old file
// or the whole new one, never a part.
func WriteFileAtomic(fs FS, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		fs.Remove(tmp) // best effort: the next attempt truncates it anyway
		return err
	}
	return fs.SyncDir(dir)
}
