package objectstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func memConfig() Config {
	cfg := DefaultConfig()
	cfg.PartSize = 1 << 10 // below S3's minimum: fine for the fake
	cfg.UploadConcurrency = 3
	cfg.Retry = RetryConfig{MaxRetries: 3, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	return cfg
}

// failTimes returns a fault that fails the first n calls of op (at the
// given moment) with err.
func failTimes(op string, after bool, n int, err error) func(string, bool) error {
	var mu sync.Mutex
	return func(o string, a bool) error {
		mu.Lock()
		defer mu.Unlock()
		if o == op && a == after && n > 0 {
			n--
			return err
		}
		return nil
	}
}

func writeAll(t *testing.T, s Store, ctx context.Context, key string, data []byte) error {
	t.Helper()
	w, err := s.NewWriter(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		w.Abort()
		return err
	}
	return w.Close()
}

func checkContent(t *testing.T, s Store, key string, want []byte) {
	t.Helper()
	rc, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Get(%q): %d bytes, %v; want %d bytes", key, len(got), err, len(want))
	}
}

func TestWriterBoundsPartsInFlight(t *testing.T) {
	api := newMemAPI()
	api.partDelay = 5 * time.Millisecond
	s := newMemStore(api, memConfig(), prometheus.NewRegistry())
	data := bytes.Repeat([]byte("0123456789abcdef"), 64*30) // 30 parts
	if err := writeAll(t, s, t.Context(), "k", data); err != nil {
		t.Fatal(err)
	}
	checkContent(t, s, "k", data)
	if api.maxInFlight > 3 || api.maxInFlight < 2 {
		t.Fatalf("%d parts were in flight at once, want 2 or 3 with concurrency 3", api.maxInFlight)
	}
}

func TestWriterRetriesParts(t *testing.T) {
	api := newMemAPI()
	api.fault = failTimes(opUploadPart, false, 2, errSlowDown)
	reg := prometheus.NewRegistry()
	s := newMemStore(api, memConfig(), reg)
	data := bytes.Repeat([]byte("x"), 5<<10)
	if err := writeAll(t, s, t.Context(), "k", data); err != nil {
		t.Fatal(err)
	}
	checkContent(t, s, "k", data)
	var m dto.Metric
	s.req.m.retries.WithLabelValues("mem", opUploadPart).Write(&m)
	if got := m.GetCounter().GetValue(); got != 2 {
		t.Fatalf("part retries = %v, want 2", got)
	}
}

func TestWriterAbortsOnPermanentFailure(t *testing.T) {
	api := newMemAPI()
	api.fault = failTimes(opUploadPart, false, 1, memStatus{http.StatusForbidden, "AccessDenied"})
	s := newMemStore(api, memConfig(), prometheus.NewRegistry())
	err := writeAll(t, s, t.Context(), "k", bytes.Repeat([]byte("x"), 10<<10))
	if err == nil {
		t.Fatal("upload with a forbidden part succeeded")
	}
	if _, err := s.Head(t.Context(), "k"); !IsNotFound(err) {
		t.Fatalf("failed upload is visible: %v", err)
	}
	if len(api.uploads) != 0 {
		t.Fatalf("%d multipart uploads left unaborted", len(api.uploads))
	}
}

func TestWriterAbortsOnCancelWithoutClose(t *testing.T) {
	api := newMemAPI()
	s := newMemStore(api, memConfig(), prometheus.NewRegistry())
	ctx, cancel := context.WithCancel(t.Context())
	w, err := s.NewWriter(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(bytes.Repeat([]byte("x"), 5<<10))
	cancel() // and never call Close or Abort
	deadline := time.Now().Add(5 * time.Second)
	for {
		api.mu.Lock()
		n := len(api.uploads)
		api.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("cancelled upload was not aborted")
		}
		time.Sleep(time.Millisecond)
	}
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close after cancel: %v", err)
	}
}

// TestCompleteAnswerLost: the first CompleteMultipartUpload takes effect
// but its answer is lost; the retry finds no such upload, and the object
// proves the first one worked.
func TestCompleteAnswerLost(t *testing.T) {
	api := newMemAPI()
	api.fault = failTimes(opCompleteUpload, true, 1, errSlowDown)
	s := newMemStore(api, memConfig(), prometheus.NewRegistry())
	data := bytes.Repeat([]byte("y"), 3<<10)
	if err := writeAll(t, s, t.Context(), "k", data); err != nil {
		t.Fatalf("Close: %v", err)
	}
	checkContent(t, s, "k", data)
}

// TestConditionalPutAnswerLost: the first conditional put lands but its
// answer is lost; the retry's precondition failure is our own doing.
func TestConditionalPutAnswerLost(t *testing.T) {
	api := newMemAPI()
	api.fault = failTimes(opPut, true, 1, errSlowDown)
	s := newMemStore(api, memConfig(), prometheus.NewRegistry())
	etag, err := s.PutIf(t.Context(), "k", []byte("mine"), IfAbsent())
	if err != nil {
		t.Fatalf("PutIf: %v", err)
	}
	if a, _ := s.Head(t.Context(), "k"); a.ETag != etag {
		t.Fatalf("ETag %q, object has %q", etag, a.ETag)
	}

	// A competitor's object still fails the condition, even after an
	// attempt of ours failed in a way that might have written.
	api.fault = failTimes(opPut, false, 1, errSlowDown)
	if _, err := s.PutIf(t.Context(), "k", []byte("other"), IfAbsent()); !IsPreconditionFailed(err) {
		t.Fatalf("PutIf over a competitor's object: %v", err)
	}
}

func TestRetriesStopAtDeadline(t *testing.T) {
	api := newMemAPI()
	api.fault = failTimes(opHead, false, 1<<30, errSlowDown)
	cfg := memConfig()
	cfg.Retry = RetryConfig{MaxRetries: 1 << 20, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	cfg.Timeout = 100 * time.Millisecond
	s := newMemStore(api, cfg, prometheus.NewRegistry())
	start := time.Now()
	_, err := s.Head(t.Context(), "k")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Head against endless throttling: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a 100 ms operation took %v", d)
	}
}

func TestBackoff(t *testing.T) {
	c := RetryConfig{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	for n, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		want *= time.Millisecond
		for range 20 {
			d := c.backoff(n)
			if d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", n, d, want/2, want)
			}
		}
	}
	if d := c.backoff(100); d > time.Second {
		t.Fatalf("backoff(100) = %v overflows the cap", d)
	}
}
