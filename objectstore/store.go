package objectstore

import (
	"context"
	"errors"
	"io"
	"time"
)

// Store is a bucket of immutable objects named by keys. Every method takes a
// context; cancelling it abandons the operation. Implementations are safe for
// concurrent use.
type Store interface {
	// Put stores data under key, replacing any object there, and returns the
	// new object's ETag.
	Put(ctx context.Context, key string, data []byte) (etag string, err error)
	// PutIf stores data under key only if cond holds at the moment of the
	// write; otherwise it fails with an error for which IsPreconditionFailed
	// is true and changes nothing.
	PutIf(ctx context.Context, key string, data []byte, cond Condition) (etag string, err error)
	// NewWriter starts a streaming upload of key. Nothing is visible under
	// key until Close returns nil. Cancelling ctx aborts the upload.
	NewWriter(ctx context.Context, key string) (Writer, error)
	// Get reads a whole object. The caller must close the reader.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// GetRange reads length bytes from off, fewer if the object ends first.
	// A negative length reads to the end; a zero length reads nothing but
	// still checks the key and the offset. An off at or past the end fails
	// with ErrInvalidRange.
	GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)
	// Head returns an object's attributes.
	Head(ctx context.Context, key string) (Attrs, error)
	// List calls fn for every object whose key starts with prefix, in
	// lexical key order, stopping at the first error fn returns.
	List(ctx context.Context, prefix string, fn func(Attrs) error) error
	// Delete removes key. A missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// Writer is a streaming upload. Write buffers and sends data; Close commits
// the object; Abort discards it. Memory use is bounded by the part size
// times the upload concurrency, whatever the object's size.
type Writer interface {
	io.Writer
	// Close finishes the upload and makes the object visible. On error the
	// upload has been aborted and nothing is visible.
	Close() error
	// Abort discards the upload. It may be called at any time, more than
	// once, and after Close (then it does nothing).
	Abort() error
}

// Attrs describes a stored object.
type Attrs struct {
	Key     string
	Size    int64
	ETag    string
	ModTime time.Time
}

// Condition restricts PutIf. Build one with IfAbsent or IfMatch.
type Condition struct {
	etag string // "" means the key must be absent
}

// IfAbsent holds when no object has the key.
func IfAbsent() Condition { return Condition{} }

// IfMatch holds when the object under the key exists and has this ETag.
func IfMatch(etag string) Condition { return Condition{etag: etag} }

// Absent reports whether c is IfAbsent.
func (c Condition) Absent() bool { return c.etag == "" }

// ETag returns the ETag an IfMatch condition requires.
func (c Condition) ETag() string { return c.etag }

func (c Condition) String() string {
	if c.Absent() {
		return "if-absent"
	}
	return "if-match " + c.etag
}

var (
	// ErrNotFound means no object has the key.
	ErrNotFound = errors.New("objectstore: object not found")
	// ErrPreconditionFailed means a PutIf condition did not hold.
	ErrPreconditionFailed = errors.New("objectstore: precondition failed")
	// ErrInvalidRange means a ranged read started at or past the end.
	ErrInvalidRange = errors.New("objectstore: invalid range")
	// ErrInvalidKey means a key cannot be stored by the backend.
	ErrInvalidKey = errors.New("objectstore: invalid key")
	// ErrWriterClosed means a Writer was used after Close or Abort.
	ErrWriterClosed = errors.New("objectstore: writer closed")
)

// IsNotFound reports whether err means the object does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsPreconditionFailed reports whether err means a PutIf condition failed.
func IsPreconditionFailed(err error) bool { return errors.Is(err, ErrPreconditionFailed) }

// IsInvalidRange reports whether err means a ranged read started past the end.
func IsInvalidRange(err error) bool { return errors.Is(err, ErrInvalidRange) }
