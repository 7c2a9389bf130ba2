package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/sedimentdb/sediment/frontend/tracing"
)

// ReaderAt reads an object at random offsets, as the SSTable reader does.
// It follows io.ReaderAt: fewer than len(p) bytes come with an error, io.EOF
// at the end of the object.
type ReaderAt interface {
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
}

// NewReaderAt returns a ReaderAt for object that serves each range it is
// asked for from t, reading from src the ranges t does not hold. A range is
// keyed by its offset and length, so repeated reads of the same blocks hit.
// Objects are immutable, so a short read at the end of one is cached too.
func NewReaderAt(t Tier, object string, src ReaderAt) ReaderAt {
	return &cachedObject{tier: t, object: object, src: src}
}

type cachedObject struct {
	tier   Tier
	object string
	src    ReaderAt
}

var _ ReaderAt = (*cachedObject)(nil)

func (r *cachedObject) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("cache: read of %s at negative offset %d", r.object, off)
	}
	if len(p) == 0 {
		return 0, nil
	}
	key := Key{Object: r.object, Offset: off, Length: int64(len(p))}
	var fetched atomic.Bool
	v, err := r.tier.Get(ctx, key, func(ctx context.Context) ([]byte, error) {
		fetched.Store(true)
		buf := make([]byte, len(p))
		n, err := r.src.ReadAt(ctx, buf, off)
		switch {
		case n == len(p):
			return buf, nil // io.ReaderAt allows io.EOF with a full read
		case errors.Is(err, io.EOF):
			return buf[:n], nil
		case err == nil:
			return nil, fmt.Errorf("cache: short read of %s without error: %w", r.object, io.ErrUnexpectedEOF)
		}
		return nil, err
	})
	if tr := tracing.From(ctx); tr != nil {
		// A read joined while another request fetches the range counts
		// as a hit: this request made no GET.
		what := "Block cache hit"
		if fetched.Load() {
			what = "Block cache miss: GET from the bucket"
		}
		tr.Eventf("cache", "%s: %s bytes %d-%d", what, r.object, off, off+int64(len(p)))
	}
	if err != nil {
		return 0, err
	}
	n := copy(p, v)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
