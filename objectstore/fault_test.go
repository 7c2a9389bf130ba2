package objectstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/objectstore"
)

var remoteBackends = []string{objectstore.BackendS3, objectstore.BackendMinIO}

// counter returns the value of the counter name with the given labels in reg.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				if !hasLabel(m, k, v) {
					continue metrics
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

func testMetricsCountEveryRequest(t *testing.T, m *testserver.MinIOServer) {
	for _, backend := range remoteBackends {
		t.Run(backend, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			cfg := remoteConfig(t, m, backend)
			s := newRemote(t, cfg, reg)
			ctx := t.Context()
			ops := func(op string) map[string]string { return map[string]string{"backend": backend, "operation": op} }
			req := func(op string) float64 {
				return counter(t, reg, "sediment_objectstore_requests_total", ops(op))
			}

			data := bytes.Repeat([]byte("x"), int(2*cfg.PartSize+100))
			w, err := s.NewWriter(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			w.Write(data)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if req(objectstore.BackendS3) != 0 {
				t.Fatal("operation label confused with backend")
			}
			if got := req("multipart_create"); got != 1 {
				t.Fatalf("multipart_create requests = %v, want 1", got)
			}
			if got := req("multipart_upload_part"); got != 3 {
				t.Fatalf("upload_part requests = %v, want 3", got)
			}
			if got := req("multipart_complete"); got != 1 {
				t.Fatalf("complete requests = %v, want 1", got)
			}
			if got := counter(t, reg, "sediment_objectstore_sent_bytes_total", ops("multipart_upload_part")); got != float64(len(data)) {
				t.Fatalf("sent bytes = %v, want %d", got, len(data))
			}

			s.Put(ctx, "small", []byte("hello"))
			rc, err := s.GetRange(ctx, "small", 1, 3)
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(rc)
			rc.Close()
			s.Head(ctx, "missing")
			for i := range 5 {
				s.Put(ctx, fmt.Sprintf("list/%d", i), nil)
			}
			s.List(ctx, "list/", func(objectstore.Attrs) error { return nil })
			s.Delete(ctx, "small")

			want := map[string]float64{"put": 6, "get_range": 1, "head": 1, "list": 3, "delete": 1}
			for op, n := range want {
				if got := req(op); got != n {
					t.Errorf("%s requests = %v, want %v", op, got, n)
				}
				if got := counter(t, reg, "sediment_objectstore_request_duration_seconds", ops(op)); got != n {
					t.Errorf("%s latency observations = %v, want %v", op, got, n)
				}
			}
			if got := counter(t, reg, "sediment_objectstore_received_bytes_total", ops("get_range")); got != 3 {
				t.Errorf("received bytes = %v, want 3", got)
			}
			errs := map[string]string{"backend": backend, "operation": "head", "reason": "not_found"}
			if got := counter(t, reg, "sediment_objectstore_request_errors_total", errs); got != 1 {
				t.Errorf("head not-found errors = %v, want 1", got)
			}
		})
	}
}

// faultyProxy forwards to MinIO, but answers the first len(statuses)
// requests itself with those statuses.
func faultyProxy(t *testing.T, m *testserver.MinIOServer, statuses ...int) (endpoint string, requests *atomic.Int64) {
	target, _ := url.Parse("http://" + m.Endpoint)
	proxy := httputil.NewSingleHostReverseProxy(target)
	requests = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		if int(n) <= len(statuses) {
			io.Copy(io.Discard, r.Body)
			status := statuses[n-1]
			code := map[int]string{503: "SlowDown", 429: "SlowDown", 500: "InternalError", 403: "AccessDenied"}[status]
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(status)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected</Message></Error>`, code)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), requests
}

func testRetries(t *testing.T, m *testserver.MinIOServer) {
	for _, backend := range remoteBackends {
		t.Run(backend, func(t *testing.T) {
			cases := []struct {
				name     string
				statuses []int
				wantErr  bool
				requests int64
			}{
				{"throttled then ok", []int{503, 429, 500}, false, 4},
				{"forbidden is final", []int{403}, true, 1},
				{"retries run out", []int{503, 503, 503, 503, 503}, true, 4},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					cfg := remoteConfig(t, m, backend)
					var seen *atomic.Int64
					cfg.Endpoint, seen = faultyProxy(t, m, c.statuses...)
					cfg.Retry.MaxRetries = 3
					reg := prometheus.NewRegistry()
					s := newRemote(t, cfg, reg)
					_, err := s.Put(t.Context(), "k", []byte("v"))
					if (err != nil) != c.wantErr {
						t.Fatalf("Put: %v, want error %v", err, c.wantErr)
					}
					got := counter(t, reg, "sediment_objectstore_requests_total", map[string]string{"operation": "put"})
					if got != float64(c.requests) {
						t.Fatalf("put requests = %v, want %d", got, c.requests)
					}
					// The SDK made no retries of its own behind our back.
					if n := seen.Load(); n != c.requests {
						t.Fatalf("server saw %d requests, want %d", n, c.requests)
					}
				})
			}
		})
	}
}

// TestRestartMidUpload kills MinIO while a multipart upload is in flight.
// With a restart, the retries carry the upload through; without one, Close
// fails. Either way no partial object is ever visible.
func testRestartMidUpload(t *testing.T, m *testserver.MinIOServer) {
	// Failure without a restart takes the same writer path for both
	// backends; run it once to save a server restart.
	cases := []struct {
		backend string
		restart bool
	}{{objectstore.BackendS3, true}, {objectstore.BackendMinIO, true}, {objectstore.BackendS3, false}}
	for _, c := range cases {
		backend, restart := c.backend, c.restart
		{
			t.Run(fmt.Sprintf("%s/restart=%v", backend, restart), func(t *testing.T) {
				cfg := remoteConfig(t, m, backend)
				cfg.Retry = objectstore.RetryConfig{MaxRetries: 30, MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}
				if !restart {
					cfg.Retry.MaxRetries = 3
				}
				reg := prometheus.NewRegistry()
				s := newRemote(t, cfg, reg)
				data := make([]byte, 4*cfg.PartSize+1)
				for i := range data {
					data[i] = byte(rand.Uint32())
				}
				ctx := t.Context()
				w, err := s.NewWriter(ctx, "big")
				if err != nil {
					t.Fatal(err)
				}
				half := 2*cfg.PartSize + 10
				if _, err := w.Write(data[:half]); err != nil {
					t.Fatal(err)
				}
				m.Kill()
				restarted := make(chan struct{})
				go func() {
					defer close(restarted)
					if restart {
						time.Sleep(300 * time.Millisecond)
						m.Restart(t)
					}
				}()
				_, werr := w.Write(data[half:])
				cerr := w.Close()
				<-restarted
				if !restart {
					m.Restart(t)
				}
				a, herr := s.Head(ctx, "big")
				switch {
				case werr == nil && cerr == nil:
					if herr != nil || a.Size != int64(len(data)) {
						t.Fatalf("upload succeeded but Head = %+v, %v", a, herr)
					}
					rc, err := s.Get(ctx, "big")
					if err != nil {
						t.Fatal(err)
					}
					got, err := io.ReadAll(rc)
					rc.Close()
					if err != nil || !bytes.Equal(got, data) {
						t.Fatalf("object differs from what was written (%v)", err)
					}
					if retries := counter(t, reg, "sediment_objectstore_retries_total", nil); retries == 0 {
						t.Fatal("upload survived a dead server without retrying")
					}
				default:
					if restart {
						t.Fatalf("upload failed although the server came back: write %v, close %v", werr, cerr)
					}
					if !objectstore.IsNotFound(herr) {
						t.Fatalf("failed upload left an object: %+v, %v", a, herr)
					}
				}
				if !restart && cerr == nil && werr == nil {
					t.Fatal("upload to a dead server succeeded")
				}
			})
		}
	}
}

// TestHungServerTimesOut freezes MinIO: reads must fail by their deadline
// rather than hang, and work again once it thaws.
func testHungServerTimesOut(t *testing.T, m *testserver.MinIOServer) {
	for _, backend := range remoteBackends {
		t.Run(backend, func(t *testing.T) {
			cfg := remoteConfig(t, m, backend)
			cfg.Timeout = time.Second
			s := newRemote(t, cfg, nil)
			ctx := t.Context()
			data := bytes.Repeat([]byte("y"), 4<<20)
			if _, err := s.Put(ctx, "obj", data); err != nil {
				t.Fatal(err)
			}
			// A body being read when the server freezes.
			rc, err := s.Get(ctx, "obj")
			if err != nil {
				t.Fatal(err)
			}
			m.Pause(t)
			defer m.Resume(t)
			start := time.Now()
			_, rerr := io.ReadAll(rc)
			rc.Close()
			_, gerr := s.GetRange(ctx, "obj", 0, 32<<10)
			_, herr := s.Head(ctx, "obj")
			elapsed := time.Since(start)
			for _, err := range []error{gerr, herr} {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("request to a frozen server: %v, want a deadline error", err)
				}
			}
			// The body may have been buffered whole before the freeze.
			if rerr != nil && !errors.Is(rerr, context.DeadlineExceeded) {
				t.Errorf("read from a frozen server: %v", rerr)
			}
			if elapsed > 20*time.Second {
				t.Errorf("three 1 s operations took %v", elapsed)
			}
			m.Resume(t)
			rc, err = s.GetRange(ctx, "obj", 10, 10)
			if err != nil {
				t.Fatalf("after thaw: %v", err)
			}
			rc.Close()
		})
	}
}
