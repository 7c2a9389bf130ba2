package objectstore

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// memAPI is an in-memory remoteAPI, for tests of remoteStore's own logic:
// retries, uncertain outcomes and the bounds of a streaming upload. It
// passes the acceptance suite like the real backends.
type memAPI struct {
	mu      sync.Mutex
	objects map[string]memObject
	uploads map[string]map[int][]byte
	nextID  int

	// fault, if set, is called before each request; an error it returns
	// fails the request. after=true calls come once the request has taken
	// effect, modelling an answer lost on the way back.
	fault func(op string, after bool) error

	inFlight, maxInFlight int // concurrent uploadPart calls
	partDelay             time.Duration
}

type memObject struct {
	data    []byte
	etag    string
	modTime time.Time
}

var _ remoteAPI = (*memAPI)(nil)

func newMemAPI() *memAPI {
	return &memAPI{objects: map[string]memObject{}, uploads: map[string]map[int][]byte{}}
}

// memStatus is a fake HTTP error answer.
type memStatus struct {
	status int
	code   string
}

func (e memStatus) Error() string { return fmt.Sprintf("mem: %d %s", e.status, e.code) }

func (m *memAPI) check(op string, after bool) error {
	if m.fault == nil {
		return nil
	}
	return m.fault(op, after)
}

func (m *memAPI) putObject(ctx context.Context, key string, data []byte, cond *Condition) (string, error) {
	if err := m.check(opPut, false); err != nil {
		return "", err
	}
	m.mu.Lock()
	cur, ok := m.objects[key]
	switch {
	case cond == nil:
	case cond.Absent() && ok, !cond.Absent() && (!ok || cur.etag != cond.ETag()):
		m.mu.Unlock()
		return "", fmt.Errorf("%w: %s", ErrPreconditionFailed, key)
	}
	sum := md5.Sum(data)
	o := memObject{data: bytes.Clone(data), etag: hex.EncodeToString(sum[:]), modTime: time.Now()}
	m.objects[key] = o
	m.mu.Unlock()
	return o.etag, m.check(opPut, true)
}

func (m *memAPI) getObject(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if err := m.check(opGet, false); err != nil {
		return nil, err
	}
	m.mu.Lock()
	o, ok := m.objects[key]
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	size := int64(len(o.data))
	if httpRange(off, length) != "" && off >= size {
		return nil, fmt.Errorf("%w: %s", ErrInvalidRange, key)
	}
	end := size
	if length >= 0 && off+length < size {
		end = off + length
	}
	return io.NopCloser(bytes.NewReader(o.data[off:end])), nil
}

func (m *memAPI) headObject(ctx context.Context, key string) (Attrs, error) {
	if err := m.check(opHead, false); err != nil {
		return Attrs{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return Attrs{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return Attrs{Key: key, Size: int64(len(o.data)), ETag: o.etag, ModTime: o.modTime}, nil
}

func (m *memAPI) listObjects(ctx context.Context, prefix, token string, max int) ([]Attrs, string, error) {
	if err := m.check(opList, false); err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var page []Attrs
	for _, k := range slices.Sorted(maps.Keys(m.objects)) {
		if !strings.HasPrefix(k, prefix) || k <= token {
			continue
		}
		if len(page) == max {
			return page, page[len(page)-1].Key, nil
		}
		o := m.objects[k]
		page = append(page, Attrs{Key: k, Size: int64(len(o.data)), ETag: o.etag, ModTime: o.modTime})
	}
	return page, "", nil
}

func (m *memAPI) deleteObject(ctx context.Context, key string) error {
	if err := m.check(opDelete, false); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, key)
	return nil
}

func (m *memAPI) createUpload(ctx context.Context, key string) (string, error) {
	if err := m.check(opCreateUpload, false); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	id := strconv.Itoa(m.nextID)
	m.uploads[id] = map[int][]byte{}
	return id, nil
}

func (m *memAPI) uploadPart(ctx context.Context, key, id string, num int, data []byte) (completedPart, error) {
	if err := m.check(opUploadPart, false); err != nil {
		return completedPart{}, err
	}
	m.mu.Lock()
	m.inFlight++
	m.maxInFlight = max(m.maxInFlight, m.inFlight)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.inFlight--
		m.mu.Unlock()
	}()
	select {
	case <-time.After(m.partDelay):
	case <-ctx.Done():
		return completedPart{}, ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	parts, ok := m.uploads[id]
	if !ok {
		return completedPart{}, fmt.Errorf("%w: %s", errNoSuchUpload, id)
	}
	parts[num] = bytes.Clone(data)
	return completedPart{num: num, etag: "p" + strconv.Itoa(num)}, nil
}

func (m *memAPI) completeUpload(ctx context.Context, key, id string, parts []completedPart) error {
	if err := m.check(opCompleteUpload, false); err != nil {
		return err
	}
	m.mu.Lock()
	up, ok := m.uploads[id]
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("%w: %s", errNoSuchUpload, id)
	}
	var data []byte
	for i, p := range parts {
		if p.num != i+1 || up[p.num] == nil {
			m.mu.Unlock()
			return fmt.Errorf("mem: bad part list %v", parts)
		}
		data = append(data, up[p.num]...)
	}
	delete(m.uploads, id)
	m.objects[key] = memObject{data: data, etag: fmt.Sprintf("multipart-%s-%d", id, len(parts)), modTime: time.Now()}
	m.mu.Unlock()
	return m.check(opCompleteUpload, true)
}

func (m *memAPI) abortUpload(ctx context.Context, key, id string) error {
	if err := m.check(opAbortUpload, false); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.uploads[id]; !ok {
		return fmt.Errorf("%w: %s", errNoSuchUpload, id)
	}
	delete(m.uploads, id)
	return nil
}

func (m *memAPI) transient(err error) bool {
	var s memStatus
	if ok := asMemStatus(err, &s); ok {
		return transientStatus(s.status, s.code)
	}
	return false
}

func asMemStatus(err error, s *memStatus) bool {
	for err != nil {
		if v, ok := err.(memStatus); ok {
			*s = v
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

var errSlowDown = memStatus{http.StatusServiceUnavailable, "SlowDown"}
