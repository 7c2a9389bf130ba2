package compactor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/sedimentdb/sediment/objectstore"
)

// memStore is an in-memory objectstore.Store for tests and benchmarks, so
// that they measure the merge and not a backend. It counts the bytes of
// ranged reads in flight (requested and not yet closed) and their peak.
type memStore struct {
	mu       sync.Mutex
	objects  map[string][]byte
	inFlight int64
	peak     int64
	// discard makes uploads keep only their size, for benchmarks that
	// measure the merge and not the copy of its output.
	discard bool
}

var _ objectstore.Store = (*memStore)(nil)

func newMemStore() *memStore { return &memStore{objects: map[string][]byte{}} }

func (s *memStore) Put(_ context.Context, key string, data []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[key] = bytes.Clone(data)
	return "", nil
}

func (s *memStore) PutIf(ctx context.Context, key string, data []byte, cond objectstore.Condition) (string, error) {
	return "", errors.New("memstore: PutIf not supported")
}

func (s *memStore) NewWriter(ctx context.Context, key string) (objectstore.Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &memWriter{s: s, ctx: ctx, key: key}, nil
}

func (s *memStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return s.GetRange(ctx, key, 0, -1)
}

func (s *memStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.objects[key]
	if !ok {
		return nil, objectstore.ErrNotFound
	}
	if off < 0 || off >= int64(len(data)) {
		return nil, objectstore.ErrInvalidRange
	}
	end := int64(len(data))
	if length >= 0 {
		end = min(end, off+length)
	}
	s.inFlight += end - off
	s.peak = max(s.peak, s.inFlight)
	return &memBody{Reader: bytes.NewReader(data[off:end]), s: s, n: end - off}, nil
}

type memBody struct {
	*bytes.Reader
	s    *memStore
	n    int64
	once sync.Once
}

func (b *memBody) Close() error {
	b.once.Do(func() {
		b.s.mu.Lock()
		b.s.inFlight -= b.n
		b.s.mu.Unlock()
	})
	return nil
}

func (s *memStore) Head(_ context.Context, key string) (objectstore.Attrs, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.objects[key]
	if !ok {
		return objectstore.Attrs{}, objectstore.ErrNotFound
	}
	return objectstore.Attrs{Key: key, Size: int64(len(data))}, nil
}

func (s *memStore) List(_ context.Context, prefix string, fn func(objectstore.Attrs) error) error {
	s.mu.Lock()
	var attrs []objectstore.Attrs
	for k, v := range s.objects {
		if strings.HasPrefix(k, prefix) {
			attrs = append(attrs, objectstore.Attrs{Key: k, Size: int64(len(v))})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(attrs, func(a, b objectstore.Attrs) int { return strings.Compare(a.Key, b.Key) })
	for _, a := range attrs {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

func (s *memStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, key)
	return nil
}

func (s *memStore) peakInFlight() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

func (s *memStore) resetPeak() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peak = s.inFlight
}

// memWriter buffers an upload and stores it on Close.
type memWriter struct {
	s    *memStore
	ctx  context.Context
	key  string
	buf  bytes.Buffer
	n    int // bytes discarded
	done bool
}

func (w *memWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, errors.New("memstore: write after close")
	}
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	if w.s.discard {
		w.n += len(p)
		return len(p), nil
	}
	return w.buf.Write(p)
}

func (w *memWriter) Close() error {
	if w.done {
		return errors.New("memstore: closed twice")
	}
	w.done = true
	if err := w.ctx.Err(); err != nil {
		return err
	}
	data := w.buf.Bytes()
	if w.s.discard {
		data = make([]byte, w.n) // the size, for Head
	}
	_, err := w.s.Put(w.ctx, w.key, data)
	return err
}

func (w *memWriter) Abort() error {
	w.done = true
	w.buf = bytes.Buffer{}
	return nil
}
