package objectstore

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// remoteAPI is the slice of the S3 API that a remote Store is built from.
// Each method makes exactly one request and maps the answer onto the
// package's errors (ErrNotFound, ErrPreconditionFailed, ErrInvalidRange,
// errNoSuchUpload); remoteStore adds retries, timeouts and metrics.
type remoteAPI interface {
	putObject(ctx context.Context, key string, data []byte, cond *Condition) (etag string, err error)
	// getObject reads length bytes at off; length < 0 reads to the end,
	// and off == 0 with length < 0 asks for no range at all.
	getObject(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)
	headObject(ctx context.Context, key string) (Attrs, error)
	// listObjects returns one page of keys starting with prefix after the
	// continuation token (empty: the first page), and the next token
	// (empty: no more pages).
	listObjects(ctx context.Context, prefix, token string, max int) (page []Attrs, next string, err error)
	deleteObject(ctx context.Context, key string) error

	createUpload(ctx context.Context, key string) (uploadID string, err error)
	uploadPart(ctx context.Context, key, uploadID string, num int, data []byte) (completedPart, error)
	completeUpload(ctx context.Context, key, uploadID string, parts []completedPart) error
	abortUpload(ctx context.Context, key, uploadID string) error

	// transient reports whether a request that failed with err may succeed
	// if sent again.
	transient(err error) bool
}

// completedPart identifies an uploaded part for completeUpload.
type completedPart struct {
	num    int
	etag   string
	crc32c string // base64, as S3 returns it
}

// errNoSuchUpload means a multipart upload ID is unknown: it was completed
// or aborted.
var errNoSuchUpload = errors.New("objectstore: no such multipart upload")

// remoteStore is a Store over a remoteAPI: S3, MinIO and any S3-compatible
// service.
type remoteStore struct {
	api         remoteAPI
	req         *requester
	log         *slog.Logger
	partSize    int
	concurrency int
	listPage    int
	parts       sync.Pool // of *[]byte with capacity partSize
}

var _ Store = (*remoteStore)(nil)

func newRemoteStore(api remoteAPI, req *requester, log *slog.Logger, cfg Config) *remoteStore {
	s := &remoteStore{
		api:         api,
		req:         req,
		log:         log,
		partSize:    int(cfg.PartSize),
		concurrency: cfg.UploadConcurrency,
		listPage:    cfg.ListPageSize,
	}
	s.parts.New = func() any {
		b := make([]byte, 0, s.partSize)
		return &b
	}
	return s
}

func (s *remoteStore) Put(ctx context.Context, key string, data []byte) (string, error) {
	return s.put(ctx, key, data, nil)
}

func (s *remoteStore) PutIf(ctx context.Context, key string, data []byte, cond Condition) (string, error) {
	return s.put(ctx, key, data, &cond)
}

func (s *remoteStore) put(ctx context.Context, key string, data []byte, cond *Condition) (etag string, err error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	ctx, cancel := s.req.withTimeout(ctx)
	defer cancel()
	var uncertain bool // an earlier attempt may have written the object
	err = s.req.do(ctx, opPut, len(data), func(ctx context.Context) error {
		etag, err = s.api.putObject(ctx, key, data, cond)
		if cond != nil && uncertain && IsPreconditionFailed(err) {
			// Our own earlier attempt may be what now fails the condition.
			// A single-part object's ETag is its MD5 (no KMS encryption).
			if a, herr := s.headOnce(ctx, key); herr == nil {
				sum := md5.Sum(data)
				if a.ETag == hex.EncodeToString(sum[:]) {
					etag, err = a.ETag, nil
				}
			}
		}
		uncertain = uncertain || (err != nil && s.api.transient(err))
		return err
	})
	return etag, err
}

func (s *remoteStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return s.get(ctx, opGet, key, 0, -1)
}

func (s *remoteStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, fmt.Errorf("%w: offset %d", ErrInvalidRange, off)
	}
	if length == 0 {
		// HTTP cannot ask for zero bytes; check the object exists and
		// that off is not past its end, as a one-byte read would.
		length = 1
		rc, err := s.get(ctx, opGetRange, key, off, length)
		if err != nil {
			return nil, err
		}
		rc.Close()
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	return s.get(ctx, opGetRange, key, off, length)
}

func (s *remoteStore) get(ctx context.Context, op, key string, off, length int64) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	// The deadline covers reading the body too, so that a server that
	// stops sending cannot hang the reader; it ends when the body closes.
	ctx, cancel := s.req.withTimeout(ctx)
	var rc io.ReadCloser
	err := s.req.do(ctx, op, 0, func(ctx context.Context) (err error) {
		rc, err = s.api.getObject(ctx, key, off, length)
		return err
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return &countingReader{
		ReadCloser: rc,
		counter:    s.req.m.received.WithLabelValues(s.req.backend, op),
		done:       cancel,
		drain:      true,
	}, nil
}

func (s *remoteStore) Head(ctx context.Context, key string) (a Attrs, err error) {
	if err := checkKey(key); err != nil {
		return Attrs{}, err
	}
	ctx, cancel := s.req.withTimeout(ctx)
	defer cancel()
	err = s.req.do(ctx, opHead, 0, func(ctx context.Context) error {
		a, err = s.api.headObject(ctx, key)
		return err
	})
	return a, err
}

// headOnce is a counted Head without retries, for use inside an attempt.
func (s *remoteStore) headOnce(ctx context.Context, key string) (a Attrs, err error) {
	err = s.req.once(ctx, opHead, 0, func(ctx context.Context) error {
		a, err = s.api.headObject(ctx, key)
		return err
	})
	return a, err
}

func (s *remoteStore) List(ctx context.Context, prefix string, fn func(Attrs) error) error {
	token := ""
	for {
		var page []Attrs
		var next string
		err := func() error {
			ctx, cancel := s.req.withTimeout(ctx)
			defer cancel()
			return s.req.do(ctx, opList, 0, func(ctx context.Context) (err error) {
				page, next, err = s.api.listObjects(ctx, prefix, token, s.listPage)
				return err
			})
		}()
		if err != nil {
			return err
		}
		for _, a := range page {
			if err := fn(a); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		token = next
	}
}

func (s *remoteStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	ctx, cancel := s.req.withTimeout(ctx)
	defer cancel()
	return s.req.do(ctx, opDelete, 0, func(ctx context.Context) error {
		err := s.api.deleteObject(ctx, key)
		if IsNotFound(err) {
			return nil
		}
		return err
	})
}

func (s *remoteStore) NewWriter(ctx context.Context, key string) (Writer, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	uctx, cancel := context.WithCancel(ctx)
	w := &remoteWriter{
		s:      s,
		key:    key,
		parent: ctx,
		ctx:    uctx,
		cancel: cancel,
		slots:  make(chan struct{}, s.concurrency),
	}
	w.stop = context.AfterFunc(ctx, func() { w.abort(ctx.Err(), false) })
	return w, nil
}

// remoteWriter streams an object in parts. The first full part starts a
// multipart upload; up to concurrency parts are in flight while the next
// one fills, so memory stays within (concurrency+1) parts. An object that
// fits in one part is sent with a single put on Close.
type remoteWriter struct {
	s      *remoteStore
	key    string
	parent context.Context
	ctx    context.Context // cancelled on abort, stopping parts in flight
	cancel context.CancelFunc
	stop   func() bool   // unregisters the abort-on-cancel hook
	slots  chan struct{} // one token per part in flight
	parts  sync.WaitGroup

	// Only the caller's goroutine touches buf and size.
	buf  *[]byte
	size int64

	mu       sync.Mutex
	state    writerState
	err      error // why the upload failed or was aborted
	uploadID string
	next     int // number of the next part
	uploaded []completedPart
}

type writerState int

const (
	writerOpen       writerState = iota
	writerCommitting             // in Close; Close cleans up if it fails
	writerClosed
	writerAborted
)

func (w *remoteWriter) Write(p []byte) (int, error) {
	var n int
	for len(p) > 0 {
		if err := w.failure(); err != nil {
			return n, err
		}
		if w.buf == nil {
			w.buf = w.s.parts.Get().(*[]byte)
		}
		b := *w.buf
		if len(b) == cap(b) {
			// Send a full part only once more data comes, so that an
			// object of exactly one part needs a single request.
			if err := w.sendPart(); err != nil {
				return n, err
			}
			continue
		}
		c := copy(b[len(b):cap(b)], p)
		*w.buf = b[:len(b)+c]
		p = p[c:]
		n += c
		w.size += int64(c)
	}
	return n, nil
}

// failure returns why the writer can no longer be written, if it cannot.
func (w *remoteWriter) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.state != writerOpen {
		return ErrWriterClosed
	}
	return nil
}

// fail records the first error and stops the upload's requests.
func (w *remoteWriter) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.cancel()
}

// firstError returns the recorded failure if there is one, else err.
func (w *remoteWriter) firstError(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	return err
}

// sendPart starts uploading the buffered part in the background.
func (w *remoteWriter) sendPart() error {
	if err := w.startUpload(); err != nil {
		return err
	}
	select {
	case w.slots <- struct{}{}:
	case <-w.ctx.Done():
		return w.firstError(w.ctx.Err())
	}
	w.mu.Lock()
	if w.state == writerAborted || w.err != nil {
		w.mu.Unlock()
		<-w.slots
		return w.firstError(ErrWriterClosed)
	}
	w.next++
	num, id, buf := w.next, w.uploadID, w.buf
	w.parts.Add(1)
	w.mu.Unlock()
	w.buf = nil

	go func() {
		defer w.parts.Done()
		defer func() { <-w.slots }()
		data := *buf
		ctx, cancel := w.s.req.withTimeout(w.ctx)
		defer cancel()
		var part completedPart
		err := w.s.req.do(ctx, opUploadPart, len(data), func(ctx context.Context) (err error) {
			part, err = w.s.api.uploadPart(ctx, w.key, id, num, data)
			return err
		})
		*buf = data[:0]
		w.s.parts.Put(buf)
		if err != nil {
			w.fail(fmt.Errorf("objectstore: upload part %d of %s: %w", num, w.key, err))
			return
		}
		w.mu.Lock()
		w.uploaded = append(w.uploaded, part)
		w.mu.Unlock()
	}()
	return nil
}

// startUpload creates the multipart upload if it does not exist yet.
func (w *remoteWriter) startUpload() error {
	w.mu.Lock()
	started := w.uploadID != ""
	w.mu.Unlock()
	if started {
		return nil
	}
	ctx, cancel := w.s.req.withTimeout(w.ctx)
	defer cancel()
	var id string
	err := w.s.req.do(ctx, opCreateUpload, 0, func(ctx context.Context) (err error) {
		id, err = w.s.api.createUpload(ctx, w.key)
		return err
	})
	if err != nil {
		err = fmt.Errorf("objectstore: start upload of %s: %w", w.key, err)
		w.fail(err)
		return w.firstError(err)
	}
	w.mu.Lock()
	if w.state == writerAborted {
		// Aborted while the upload was being created: nobody else knows
		// its ID, so abort it here.
		w.mu.Unlock()
		w.abortUpload(id)
		return w.firstError(ErrWriterClosed)
	}
	w.uploadID = id
	w.mu.Unlock()
	return nil
}

func (w *remoteWriter) Close() error {
	w.stop()
	w.mu.Lock()
	state, err := w.state, w.err
	if err == nil {
		// The abort-on-cancel hook may not have run yet.
		err = w.parent.Err()
	}
	if state == writerOpen && err == nil {
		w.state = writerCommitting
	}
	w.mu.Unlock()
	switch {
	case state != writerOpen:
		w.release()
		if err != nil {
			return err
		}
		return ErrWriterClosed
	case err != nil:
		w.release()
		w.abort(err, true)
		return err
	}
	if err := w.finish(); err != nil {
		w.release()
		w.abort(err, true)
		return w.firstError(err)
	}
	w.mu.Lock()
	w.state = writerClosed
	w.mu.Unlock()
	w.cancel()
	return nil
}

// finish sends what is buffered and commits the object.
func (w *remoteWriter) finish() error {
	w.mu.Lock()
	id := w.uploadID
	w.mu.Unlock()
	if id == "" {
		var data []byte
		if w.buf != nil {
			data = *w.buf
		}
		_, err := w.s.put(w.ctx, w.key, data, nil)
		w.release()
		return err
	}
	if w.buf != nil && len(*w.buf) > 0 {
		if err := w.sendPart(); err != nil {
			return err
		}
	}
	w.release()
	w.parts.Wait()
	w.mu.Lock()
	err := w.err
	parts := slices.Clone(w.uploaded)
	w.mu.Unlock()
	if err != nil {
		return err
	}
	slices.SortFunc(parts, func(a, b completedPart) int { return a.num - b.num })

	ctx, cancel := w.s.req.withTimeout(w.ctx)
	defer cancel()
	var uncertain bool
	err = w.s.req.do(ctx, opCompleteUpload, 0, func(ctx context.Context) error {
		err := w.s.api.completeUpload(ctx, w.key, id, parts)
		if uncertain && errors.Is(err, errNoSuchUpload) {
			// An earlier attempt may have completed the upload before its
			// answer was lost: then the object is there, whole.
			if a, herr := w.s.headOnce(ctx, w.key); herr == nil && a.Size == w.size {
				return nil
			}
		}
		uncertain = uncertain || (err != nil && w.s.api.transient(err))
		return err
	})
	if err != nil {
		return fmt.Errorf("objectstore: complete upload of %s: %w", w.key, err)
	}
	return nil
}

// release returns the part buffer to the pool.
func (w *remoteWriter) release() {
	if w.buf != nil {
		*w.buf = (*w.buf)[:0]
		w.s.parts.Put(w.buf)
		w.buf = nil
	}
}

func (w *remoteWriter) Abort() error {
	w.stop()
	w.release()
	return w.abort(ErrWriterClosed, false)
}

// abort stops the upload for reason and deletes its parts. It does nothing
// once the writer is closed or aborted; while Close runs it only cancels
// the requests (Close then cleans up), unless Close itself calls it.
func (w *remoteWriter) abort(reason error, fromClose bool) error {
	w.mu.Lock()
	switch {
	case w.state == writerClosed || w.state == writerAborted:
		w.mu.Unlock()
		return nil
	case w.state == writerCommitting && !fromClose:
		w.mu.Unlock()
		w.cancel()
		return nil
	}
	w.state = writerAborted
	if w.err == nil {
		w.err = reason
	}
	id := w.uploadID
	w.mu.Unlock()
	w.cancel()
	w.parts.Wait()
	if id == "" {
		return nil
	}
	return w.abortUpload(id)
}

// abortUpload deletes the parts of upload id. It runs even though the
// writer's context has ended: parts left behind would be billed.
func (w *remoteWriter) abortUpload(id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.parent), abortTimeout(w.s.req.timeout))
	defer cancel()
	err := w.s.req.do(ctx, opAbortUpload, 0, func(ctx context.Context) error {
		err := w.s.api.abortUpload(ctx, w.key, id)
		if errors.Is(err, errNoSuchUpload) {
			return nil
		}
		return err
	})
	if err != nil {
		w.s.log.Warn("abort of multipart upload failed; its parts stay until a bucket lifecycle rule removes them",
			"key", w.key, "upload_id", id, "err", err)
	}
	return err
}

func abortTimeout(opTimeout time.Duration) time.Duration {
	if opTimeout <= 0 {
		return time.Minute
	}
	return opTimeout
}
