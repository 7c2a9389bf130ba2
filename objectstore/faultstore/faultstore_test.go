package faultstore_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
	"github.com/sedimentdb/sediment/objectstore/faultstore"
	"github.com/sedimentdb/sediment/objectstore/objtest"
)

func newStore(t *testing.T) *faultstore.Store {
	s, err := objectstore.NewFile(vfs.Default, t.TempDir(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return faultstore.New(s)
}

func TestAcceptanceWithoutFaults(t *testing.T) {
	objtest.AcceptanceTest(t, func(t *testing.T) objectstore.Store { return newStore(t) }, objtest.Options{PartSize: 1 << 20})
}

func TestFaults(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if _, err := s.Put(ctx, "a/1", []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")

	// An error on one operation and prefix, twice.
	s.Inject(faultstore.Rule{Op: faultstore.OpGet, KeyPrefix: "a/", Times: 2, Err: boom})
	for range 2 {
		if _, err := s.Get(ctx, "a/1"); !errors.Is(err, boom) {
			t.Fatalf("Get with fault: %v", err)
		}
	}
	if _, err := s.Head(ctx, "a/1"); err != nil {
		t.Fatalf("Head is not faulted: %v", err)
	}
	rc, err := s.Get(ctx, "a/1")
	if err != nil {
		t.Fatalf("Get after the fault's times: %v", err)
	}
	rc.Close()
	if got := s.Calls(faultstore.OpGet); got != 3 {
		t.Fatalf("Calls(get) = %d, want 3", got)
	}

	// A truncated read.
	s.Inject(faultstore.Rule{Op: faultstore.OpGetRange, TruncateAt: 4, Times: 1})
	rc, err = s.GetRange(ctx, "a/1", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if string(b) != "0123" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated read = %q, %v", b, err)
	}

	// Latency, cut short by the context.
	s.Inject(faultstore.Rule{Op: faultstore.OpHead, Latency: time.Hour})
	hctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.Head(hctx, "a/1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Head with latency: %v", err)
	}
	s.Reset()

	// A failing Close leaves nothing behind.
	s.Inject(faultstore.Rule{Op: faultstore.OpClose, Err: boom})
	w, err := s.NewWriter(ctx, "a/2")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("data"))
	if err := w.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close with fault: %v", err)
	}
	if _, err := s.Head(ctx, "a/2"); !objectstore.IsNotFound(err) {
		t.Fatalf("object of a failed Close: %v", err)
	}
}
