package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ready" {
			http.NotFound(w, r)
			return
		}
		if !ready.Load() {
			http.Error(w, "ingest: replaying commitlog", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	err := check(ctx, srv.Client(), srv.URL+"/ready")
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "replaying commitlog") {
		t.Fatalf("not ready: got %v, want the 503 and the reason", err)
	}
	ready.Store(true)
	if err := check(ctx, srv.Client(), srv.URL+"/ready"); err != nil {
		t.Fatalf("ready: %v", err)
	}
	if err := check(ctx, srv.Client(), srv.URL+"/nope"); err == nil {
		t.Fatal("404 passed the check")
	}
	srv.Close()
	if err := check(ctx, srv.Client(), srv.URL+"/ready"); err == nil {
		t.Fatal("a closed server passed the check")
	}
	if err := check(ctx, srv.Client(), "::bad url"); err == nil {
		t.Fatal("a malformed URL passed the check")
	}
}
