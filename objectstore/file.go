package objectstore

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/maphash"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// tmpDir holds uploads in progress, inside the store's directory so that a
// rename into place never crosses file systems. Keys may not start with it.
const tmpDir = ".sediment-tmp"

// fileStore keeps each object as a file under dir; see the package comment
// for the on-disk format.
type fileStore struct {
	fs    vfs.FS
	dir   string
	req   *requester
	seed  maphash.Seed
	locks [64]sync.Mutex // striped by key: serializes the commit step per key
}

var _ Store = (*fileStore)(nil)

// NewFile returns a Store in directory dir of fsys, creating it if needed,
// with its metrics registered in reg. Creation if absent is atomic even
// between processes; replacement if the ETag matches is atomic between the
// callers of one Store, so give each directory a single Store.
func NewFile(fsys vfs.FS, dir string, reg prometheus.Registerer) (Store, error) {
	return newFileStore(fsys, dir, newMetrics(reg))
}

func newFileStore(fsys vfs.FS, dir string, m *metrics) (*fileStore, error) {
	if err := fsys.MkdirAll(filepath.Join(dir, tmpDir), 0o755); err != nil {
		return nil, fmt.Errorf("objectstore: create %s: %w", dir, err)
	}
	return &fileStore{
		fs:   fsys,
		dir:  dir,
		seed: maphash.MakeSeed(),
		// Local file errors are not transient: no retries.
		req: &requester{backend: "file", m: m, transient: func(error) bool { return false }},
	}, nil
}

func (s *fileStore) path(key string) string { return filepath.Join(s.dir, filepath.FromSlash(key)) }

func (s *fileStore) lock(key string) *sync.Mutex {
	return &s.locks[maphash.String(s.seed, key)%uint64(len(s.locks))]
}

func (s *fileStore) checkKey(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if key == tmpDir || strings.HasPrefix(key, tmpDir+"/") {
		return fmt.Errorf("%w: %q is reserved by the file backend", ErrInvalidKey, key)
	}
	return nil
}

func (s *fileStore) Put(ctx context.Context, key string, data []byte) (string, error) {
	return s.put(ctx, key, data, nil)
}

func (s *fileStore) PutIf(ctx context.Context, key string, data []byte, cond Condition) (string, error) {
	return s.put(ctx, key, data, &cond)
}

func (s *fileStore) put(ctx context.Context, key string, data []byte, cond *Condition) (etag string, err error) {
	if err := s.checkKey(key); err != nil {
		return "", err
	}
	err = s.req.do(ctx, opPut, len(data), func(ctx context.Context) error {
		w, err := s.newFileWriter(ctx, key)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			w.Abort()
			return err
		}
		etag, err = w.commit(cond)
		return err
	})
	return etag, err
}

func (s *fileStore) NewWriter(ctx context.Context, key string) (Writer, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	w, err := s.newFileWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	// The hook must not touch w.stop, which it may race with being set.
	w.stop = context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.abortLocked()
	})
	return w, nil
}

func (s *fileStore) newFileWriter(ctx context.Context, key string) (*fileWriter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var r [12]byte
	rand.Read(r[:])
	tmp := filepath.Join(s.dir, tmpDir, hex.EncodeToString(r[:]))
	f, err := s.fs.CreateExclusive(tmp)
	if err != nil {
		return nil, fmt.Errorf("objectstore: %w", err)
	}
	return &fileWriter{s: s, ctx: ctx, key: key, tmp: tmp, f: f, hash: md5.New()}, nil
}

// fileWriter writes an object to a temporary file and renames it into place
// on Close, so that readers see either nothing or the whole object.
type fileWriter struct {
	s    *fileStore
	ctx  context.Context
	key  string
	tmp  string
	stop func() bool // unregisters the abort-on-cancel hook

	mu   sync.Mutex
	f    vfs.File // nil once closed or aborted
	hash hash.Hash
	size int64
}

func (w *fileWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return 0, ErrWriterClosed
	}
	if err := w.ctx.Err(); err != nil {
		w.abortLocked()
		return 0, err
	}
	n, err := w.f.Write(p)
	w.hash.Write(p[:n])
	w.size += int64(n)
	if err != nil {
		w.abortLocked()
		return n, fmt.Errorf("objectstore: %w", err)
	}
	return n, nil
}

func (w *fileWriter) Close() error {
	if w.stop != nil {
		w.stop()
	}
	err := w.s.req.do(w.ctx, opPut, int(w.size), func(context.Context) error {
		_, err := w.commit(nil)
		return err
	})
	if err != nil {
		w.Abort() // the temporary file may remain if commit never ran
	}
	return err
}

func (w *fileWriter) Abort() error {
	if w.stop != nil {
		w.stop()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.abortLocked()
	return nil
}

func (w *fileWriter) abortLocked() {
	if w.f == nil {
		return
	}
	w.f.Close()
	w.s.fs.Remove(w.tmp)
	w.f = nil
}

// commit makes the temporary file durable and moves it to the key's path if
// cond (nil: none) holds.
func (w *fileWriter) commit(cond *Condition) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.ctx.Err(); err != nil {
		w.abortLocked()
		return "", err
	}
	if w.f == nil {
		return "", ErrWriterClosed
	}
	var sum [md5.Size]byte
	w.hash.Sum(sum[:0])
	f := w.f
	err := writeTrailer(f, sum)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err == nil {
		err = w.s.install(w.key, w.tmp, sum, cond)
	}
	if err != nil {
		w.s.fs.Remove(w.tmp)
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

// install moves the durable file tmp to key's path if cond holds.
func (s *fileStore) install(key, tmp string, sum [md5.Size]byte, cond *Condition) error {
	dst := s.path(key)
	if err := s.mkdirs(filepath.Dir(dst)); err != nil {
		return err
	}
	mu := s.lock(key)
	mu.Lock()
	defer mu.Unlock()
	switch {
	case cond == nil:
		if err := s.fs.Rename(tmp, dst); err != nil {
			return s.pathError(key, err)
		}
	case cond.Absent():
		// A hard link fails if the name exists, atomically even across
		// processes.
		if err := s.fs.Link(tmp, dst); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%w: %s exists", ErrPreconditionFailed, key)
			}
			return s.pathError(key, err)
		}
		if err := s.fs.Remove(tmp); err != nil {
			return fmt.Errorf("objectstore: %w", err)
		}
	default:
		a, err := s.head(key)
		if IsNotFound(err) {
			return fmt.Errorf("%w: %s does not exist", ErrPreconditionFailed, key)
		}
		if err != nil {
			return err
		}
		if a.ETag != cond.ETag() {
			return fmt.Errorf("%w: %s has ETag %s, not %s", ErrPreconditionFailed, key, a.ETag, cond.ETag())
		}
		if err := s.fs.Rename(tmp, dst); err != nil {
			return s.pathError(key, err)
		}
	}
	if err := s.fs.SyncDir(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("objectstore: %w", err)
	}
	return nil
}

// mkdirs creates dir and its missing parents, syncing each parent so that
// the new names survive a crash.
func (s *fileStore) mkdirs(dir string) error {
	if _, err := s.fs.Stat(dir); err == nil {
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir && len(parent) >= len(s.dir) {
		if err := s.mkdirs(parent); err != nil {
			return err
		}
	}
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: %v (a key cannot be both an object and a prefix of another key's directory)", ErrInvalidKey, err)
	}
	if err := s.fs.SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("objectstore: %w", err)
	}
	return nil
}

// pathError maps a file-system error about key's file onto the package's
// errors.
func (s *fileStore) pathError(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if errors.Is(err, syscall.EISDIR) || errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s is a directory of other keys", ErrInvalidKey, key)
	}
	return fmt.Errorf("objectstore: %s: %w", key, err)
}

// open opens key's file and returns it with the object's attributes.
func (s *fileStore) open(key string) (vfs.File, Attrs, error) {
	f, err := s.fs.Open(s.path(key))
	if err != nil {
		return nil, Attrs{}, s.pathError(key, err)
	}
	a, err := s.attrs(key, f)
	if err != nil {
		f.Close()
		return nil, Attrs{}, err
	}
	return f, a, nil
}

func (s *fileStore) attrs(key string, f vfs.File) (Attrs, error) {
	fi, err := f.Stat()
	if err != nil {
		return Attrs{}, fmt.Errorf("objectstore: %w", err)
	}
	if fi.IsDir() {
		return Attrs{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	size, sum, err := readTrailer(f, fi.Size())
	if err != nil {
		return Attrs{}, fmt.Errorf("%w (%s)", err, key)
	}
	return Attrs{Key: key, Size: size, ETag: hex.EncodeToString(sum[:]), ModTime: fi.ModTime()}, nil
}

func (s *fileStore) head(key string) (Attrs, error) {
	f, a, err := s.open(key)
	if err != nil {
		return Attrs{}, err
	}
	f.Close()
	return a, nil
}

func (s *fileStore) Head(ctx context.Context, key string) (a Attrs, err error) {
	if err := s.checkKey(key); err != nil {
		return Attrs{}, err
	}
	err = s.req.do(ctx, opHead, 0, func(context.Context) error {
		a, err = s.head(key)
		return err
	})
	return a, err
}

func (s *fileStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return s.get(ctx, opGet, key, 0, -1)
}

func (s *fileStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, fmt.Errorf("%w: offset %d", ErrInvalidRange, off)
	}
	return s.get(ctx, opGetRange, key, off, length)
}

func (s *fileStore) get(ctx context.Context, op, key string, off, length int64) (rc io.ReadCloser, err error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	err = s.req.do(ctx, op, 0, func(context.Context) error {
		f, a, err := s.open(key)
		if err != nil {
			return err
		}
		if op == opGetRange && off >= a.Size {
			f.Close()
			return fmt.Errorf("%w: offset %d of %s, size %d", ErrInvalidRange, off, key, a.Size)
		}
		n := a.Size - off
		if length >= 0 && length < n {
			n = length
		}
		rc = &countingReader{
			ReadCloser: &sectionCloser{io.NewSectionReader(f, off, n), f},
			counter:    s.req.m.received.WithLabelValues(s.req.backend, op),
		}
		return nil
	})
	return rc, err
}

type sectionCloser struct {
	*io.SectionReader
	io.Closer
}

func (s *fileStore) Delete(ctx context.Context, key string) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	return s.req.do(ctx, opDelete, 0, func(context.Context) error {
		mu := s.lock(key)
		mu.Lock()
		defer mu.Unlock()
		p := s.path(key)
		if fi, err := s.fs.Stat(p); err != nil || fi.IsDir() {
			return nil // missing, or only a prefix of other keys
		}
		if err := s.fs.Remove(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("objectstore: %w", err)
		}
		if err := s.fs.SyncDir(filepath.Dir(p)); err != nil {
			return fmt.Errorf("objectstore: %w", err)
		}
		return nil
	})
}

func (s *fileStore) List(ctx context.Context, prefix string, fn func(Attrs) error) error {
	// Start in the deepest directory that the prefix names completely.
	dir := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dir = prefix[:i]
	}
	return s.req.do(ctx, opList, 0, func(ctx context.Context) error {
		return s.walk(ctx, dir, prefix, fn)
	})
}

// walk visits the objects under directory dir (a key prefix without its
// trailing slash) whose keys start with prefix, in lexical key order.
func (s *fileStore) walk(ctx context.Context, dir, prefix string, fn func(Attrs) error) error {
	names, err := s.fs.ReadDir(filepath.Join(s.dir, filepath.FromSlash(dir)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("objectstore: %w", err)
	}
	type entry struct {
		key   string
		isDir bool
	}
	entries := make([]entry, 0, len(names))
	for _, name := range names {
		key := path.Join(dir, name)
		if key == tmpDir {
			continue
		}
		// Cheap prune before a stat: a key or subtree can only match if
		// one of key and prefix starts with the other.
		if !strings.HasPrefix(key, prefix) && !strings.HasPrefix(prefix, key) {
			continue
		}
		fi, err := s.fs.Stat(s.path(key))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted meanwhile
			}
			return fmt.Errorf("objectstore: %w", err)
		}
		if fi.IsDir() {
			// Keys below sort as key+"/...", not as key.
			key += "/"
		} else if !strings.HasPrefix(key, prefix) {
			continue
		}
		entries = append(entries, entry{key, fi.IsDir()})
	}
	// Directory names sort with their slash, so visiting entries in this
	// order yields keys in lexical order.
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.isDir {
			if err := s.walk(ctx, strings.TrimSuffix(e.key, "/"), prefix, fn); err != nil {
				return err
			}
			continue
		}
		a, err := s.head(e.key)
		if IsNotFound(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}
