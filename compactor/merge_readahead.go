package compactor

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/objectstore"
)

// gauge counts the bytes of read-ahead buffers a job holds, and the most it
// ever held.
type gauge struct {
	cur, peak atomic.Int64
}

func (g *gauge) add(n int64) {
	v := g.cur.Add(n)
	for {
		p := g.peak.Load()
		if v <= p || g.peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// readahead reads one input object for an sstable.Reader. A merge visits
// each input's data blocks once, in order, so readahead serves the data
// region [0, limit) from chunks fetched one ahead with ranged GETs: while
// the merge consumes one chunk, the next is on its way. It holds at most two
// chunk buffers, whatever the object's size. Reads outside the data region
// (the metadata Open reads) or behind the current chunk go to the store
// directly.
//
// ReadAt must not be called concurrently, which holds for one iterator.
type readahead struct {
	store objectstore.Store
	key   string
	size  int64
	chunk int64
	mem   *gauge

	// ctx bounds the fetches in the background; cancel stops them.
	ctx    context.Context
	cancel context.CancelFunc

	limit     int64 // end of the data region; 0 until setLimit
	cur, next *fetch
	spares    [][]byte // buffers no fetch uses
	allocated int64    // bytes of the buffers allocated, at most 2 chunks
	err       error    // a failed fetch fails every later read
	requests  int64
}

var _ sstable.ReaderAt = (*readahead)(nil)

// fetch is one chunk, read in the background.
type fetch struct {
	off  int64
	buf  []byte
	err  error
	done chan struct{}
}

func (f *fetch) end() int64 { return f.off + int64(len(f.buf)) }

func newReadahead(ctx context.Context, s objectstore.Store, key string, size, chunk int64, mem *gauge) *readahead {
	ctx, cancel := context.WithCancel(ctx)
	return &readahead{store: s, key: key, size: size, chunk: max(chunk, 1), mem: mem, ctx: ctx, cancel: cancel}
}

// setLimit starts sequential reading for [0, limit), once Open has told
// where the data blocks end.
func (r *readahead) setLimit(limit int64) { r.limit = min(limit, r.size) }

func (r *readahead) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	if off < 0 || end > r.limit || (r.cur != nil && off < r.cur.off) {
		return r.direct(ctx, p, off)
	}
	n := 0
	for n < len(p) {
		f, err := r.chunkAt(off + int64(n))
		if err != nil {
			return n, err
		}
		n += copy(p[n:], f.buf[off+int64(n)-f.off:])
	}
	return n, nil
}

// chunkAt returns the fetched chunk holding off, which lies in [0, limit)
// and not before the current chunk.
func (r *readahead) chunkAt(off int64) (*fetch, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.cur != nil && off < r.cur.end() {
		return r.cur, nil
	}
	if r.next != nil && off >= r.next.off && off < r.next.end() {
		r.release(r.cur)
		r.cur, r.next = r.next, nil
	} else {
		// The first read, or a jump past the chunk ahead: start over at off.
		r.release(r.cur)
		r.release(r.next)
		r.cur, r.next = r.start(off), nil
	}
	<-r.cur.done
	if err := r.cur.err; err != nil {
		r.err = err
		return nil, err
	}
	if e := r.cur.end(); e < r.limit {
		r.next = r.start(e)
	}
	return r.cur, nil
}

// start fetches the chunk at off in the background.
func (r *readahead) start(off int64) *fetch {
	n := min(r.chunk, r.limit-off)
	var buf []byte
	if k := len(r.spares); k > 0 {
		buf, r.spares = r.spares[k-1], r.spares[:k-1]
	} else {
		// A buffer never exceeds the data region: small inputs take little.
		buf = make([]byte, min(r.chunk, r.limit))
		r.allocated += int64(len(buf))
		r.mem.add(int64(len(buf)))
	}
	f := &fetch{off: off, buf: buf[:n], done: make(chan struct{})}
	r.requests++
	go func() {
		defer close(f.done)
		f.err = r.get(r.ctx, f.buf, off)
	}()
	return f
}

// release waits for f's fetch and keeps its buffer for the next one.
func (r *readahead) release(f *fetch) {
	if f == nil {
		return
	}
	<-f.done
	r.spares = append(r.spares, f.buf[:cap(f.buf)])
}

// get reads len(p) bytes at off with one ranged GET.
func (r *readahead) get(ctx context.Context, p []byte, off int64) error {
	rc, err := r.store.GetRange(ctx, r.key, off, int64(len(p)))
	if err != nil {
		return fmt.Errorf("compaction: read %s at %d: %w", r.key, off, err)
	}
	defer rc.Close()
	if n, err := io.ReadFull(rc, p); err != nil {
		return fmt.Errorf("compaction: read %s: %d of %d bytes at %d: %w", r.key, n, len(p), off, err)
	}
	return nil
}

// direct serves a read outside the sequential window, as io.ReaderAt does.
func (r *readahead) direct(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 || off >= r.size {
		return 0, fmt.Errorf("compaction: read %s: offset %d outside %d bytes: %w", r.key, off, r.size, io.ErrUnexpectedEOF)
	}
	want := min(int64(len(p)), r.size-off)
	r.requests++
	if err := r.get(ctx, p[:want], off); err != nil {
		return 0, err
	}
	if want < int64(len(p)) {
		return int(want), io.EOF
	}
	return len(p), nil
}

// close stops the fetches under way and gives back the buffers.
func (r *readahead) close() {
	r.cancel()
	r.release(r.cur)
	r.release(r.next)
	r.cur, r.next, r.spares = nil, nil, nil
	r.mem.add(-r.allocated)
	r.allocated = 0
}
