// Package faultstore wraps an objectstore.Store to inject faults in tests:
// errors on chosen operations, added latency, and reads cut short. With no
// rules it passes every call through unchanged, and passes the objectstore
// acceptance suite.
package faultstore

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sedimentdb/sediment/objectstore"
)

// Op names an operation that a Rule applies to.
type Op string

// Operations. OpWrite and OpClose are calls on a Writer.
const (
	OpPut      Op = "put"
	OpPutIf    Op = "put_if"
	OpWriter   Op = "new_writer"
	OpWrite    Op = "write"
	OpClose    Op = "close"
	OpGet      Op = "get"
	OpGetRange Op = "get_range"
	OpHead     Op = "head"
	OpList     Op = "list"
	OpDelete   Op = "delete"
)

// Rule is a fault. It applies to calls of Op ("" for every operation) on
// keys starting with KeyPrefix, Times times (0: until removed).
type Rule struct {
	Op        Op
	KeyPrefix string
	Times     int
	// Latency delays the call, or fails it with the context's error if
	// the context ends first.
	Latency time.Duration
	// Err, if set, is returned instead of making the call.
	Err error
	// TruncateAt, if positive, cuts a read's body after that many bytes
	// with io.ErrUnexpectedEOF, as a dropped connection would.
	TruncateAt int64
}

// Store is an objectstore.Store with fault injection.
type Store struct {
	objectstore.Store

	mu    sync.Mutex
	rules []*Rule
	calls map[Op]int
}

var _ objectstore.Store = (*Store)(nil)

// New wraps s.
func New(s objectstore.Store) *Store {
	return &Store{Store: s, calls: map[Op]int{}}
}

// Inject adds a rule; rules added earlier take precedence.
func (s *Store) Inject(r Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &r)
}

// Reset removes every rule.
func (s *Store) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// Calls returns how many calls of op have been made, faulty or not.
func (s *Store) Calls(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// match counts the call and returns the first rule that applies to it,
// using up one of its times.
func (s *Store) match(op Op, key string) Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op]++
	for i, r := range s.rules {
		if (r.Op == "" || r.Op == op) && strings.HasPrefix(key, r.KeyPrefix) {
			if r.Times > 0 {
				r.Times--
				if r.Times == 0 {
					s.rules = append(s.rules[:i:i], s.rules[i+1:]...)
				}
			}
			return *r
		}
	}
	return Rule{}
}

// fault applies the rule for a call: its latency, then its error.
func (s *Store) fault(ctx context.Context, op Op, key string) (Rule, error) {
	r := s.match(op, key)
	if r.Latency > 0 {
		t := time.NewTimer(r.Latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, ctx.Err()
		case <-t.C:
		}
	}
	if r.Err != nil {
		return r, fmt.Errorf("faultstore: %s %s: %w", op, key, r.Err)
	}
	return r, nil
}

func (s *Store) Put(ctx context.Context, key string, data []byte) (string, error) {
	if _, err := s.fault(ctx, OpPut, key); err != nil {
		return "", err
	}
	return s.Store.Put(ctx, key, data)
}

func (s *Store) PutIf(ctx context.Context, key string, data []byte, cond objectstore.Condition) (string, error) {
	if _, err := s.fault(ctx, OpPutIf, key); err != nil {
		return "", err
	}
	return s.Store.PutIf(ctx, key, data, cond)
}

func (s *Store) NewWriter(ctx context.Context, key string) (objectstore.Writer, error) {
	if _, err := s.fault(ctx, OpWriter, key); err != nil {
		return nil, err
	}
	w, err := s.Store.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	return &writer{Writer: w, s: s, ctx: ctx, key: key}, nil
}

// writer injects faults into Write and Close; a failed call aborts the
// upload underneath, as a real failure would.
type writer struct {
	objectstore.Writer
	s   *Store
	ctx context.Context
	key string
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.s.fault(w.ctx, OpWrite, w.key); err != nil {
		w.Writer.Abort()
		return 0, err
	}
	return w.Writer.Write(p)
}

func (w *writer) Close() error {
	if _, err := w.s.fault(w.ctx, OpClose, w.key); err != nil {
		w.Writer.Abort()
		return err
	}
	return w.Writer.Close()
}

func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := s.fault(ctx, OpGet, key)
	if err != nil {
		return nil, err
	}
	rc, err := s.Store.Get(ctx, key)
	return truncate(rc, err, r.TruncateAt)
}

func (s *Store) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	r, err := s.fault(ctx, OpGetRange, key)
	if err != nil {
		return nil, err
	}
	rc, err := s.Store.GetRange(ctx, key, off, length)
	return truncate(rc, err, r.TruncateAt)
}

func (s *Store) Head(ctx context.Context, key string) (objectstore.Attrs, error) {
	if _, err := s.fault(ctx, OpHead, key); err != nil {
		return objectstore.Attrs{}, err
	}
	return s.Store.Head(ctx, key)
}

func (s *Store) List(ctx context.Context, prefix string, fn func(objectstore.Attrs) error) error {
	if _, err := s.fault(ctx, OpList, prefix); err != nil {
		return err
	}
	return s.Store.List(ctx, prefix, fn)
}

func (s *Store) Delete(ctx context.Context, key string) error {
	if _, err := s.fault(ctx, OpDelete, key); err != nil {
		return err
	}
	return s.Store.Delete(ctx, key)
}

func truncate(rc io.ReadCloser, err error, at int64) (io.ReadCloser, error) {
	if err != nil || at <= 0 {
		return rc, err
	}
	return &truncated{rc: rc, left: at}, nil
}

// truncated ends a body early with io.ErrUnexpectedEOF.
type truncated struct {
	rc   io.ReadCloser
	left int64
}

func (t *truncated) Read(p []byte) (int, error) {
	if t.left <= 0 {
		return 0, fmt.Errorf("faultstore: read cut short: %w", io.ErrUnexpectedEOF)
	}
	if int64(len(p)) > t.left {
		p = p[:t.left]
	}
	n, err := t.rc.Read(p)
	t.left -= int64(n)
	return n, err
}

func (t *truncated) Close() error { return t.rc.Close() }
