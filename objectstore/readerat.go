package objectstore

import (
	"context"
	"fmt"
	"io"
)

// ReaderAt reads one object at arbitrary offsets with ranged gets, each
// bounded by the caller's context. It learns the object's size once, when
// opened, so that reads never ask for bytes past the end.
type ReaderAt struct {
	s    Store
	key  string
	size int64
}

// NewReaderAt opens key in s for ranged reads.
func NewReaderAt(ctx context.Context, s Store, key string) (*ReaderAt, error) {
	a, err := s.Head(ctx, key)
	if err != nil {
		return nil, err
	}
	return &ReaderAt{s: s, key: key, size: a.Size}, nil
}

// Size returns the object's size.
func (r *ReaderAt) Size() int64 { return r.size }

// ReadAt reads len(p) bytes at off, as io.ReaderAt does: a short read
// returns io.EOF.
func (r *ReaderAt) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%w: offset %d", ErrInvalidRange, off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), r.size-off)
	if want == 0 {
		return 0, nil
	}
	rc, err := r.s.GetRange(ctx, r.key, off, want)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, p[:want])
	if err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			// The object shrank: it was replaced since it was opened.
			return n, fmt.Errorf("objectstore: %s: read %d of %d bytes at %d: %w", r.key, n, want, off, io.ErrUnexpectedEOF)
		}
		return n, err
	}
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}
