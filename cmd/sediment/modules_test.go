package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/dskit/services"
	"github.com/prometheus/client_golang/prometheus"
)

// recorder registers modules that log their starts and stops.
type recorder struct {
	events []string
	fail   string // the module whose init fails
}

func (r *recorder) init(name string) initFunc {
	return func(context.Context) (services.Service, error) {
		if name == r.fail {
			return nil, errors.New("boom")
		}
		r.events = append(r.events, "start "+name)
		return newSimple(nil, func() error {
			r.events = append(r.events, "stop "+name)
			return nil
		}), nil
	}
}

func (r *recorder) manager() *moduleManager {
	m := newModuleManager()
	m.register("a", r.init("a"))
	m.register("b", r.init("b"), "a")
	m.register("c", r.init("c"), "a", "b")
	m.register("group", nil, "c")
	m.register("d", r.init("d"), "a")
	return m
}

func TestModuleOrder(t *testing.T) {
	m := (&recorder{}).manager()
	for _, tc := range []struct {
		targets []string
		want    string
	}{
		{[]string{"a"}, "a"},
		{[]string{"group"}, "a,b,c,group"},
		{[]string{"group", "d"}, "a,d,b,c,group"}, // targets sorted: d first
		{[]string{"c", "b", "c"}, "a,b,c"},
	} {
		got, err := m.order(tc.targets)
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("order(%v) = %v, %v; want %s", tc.targets, got, err, tc.want)
		}
	}
}

func TestModuleOrderErrors(t *testing.T) {
	m := newModuleManager()
	m.register("x", nil, "y")
	m.register("y", nil, "z")
	m.register("z", nil, "x")
	m.register("w", nil, "missing")
	if _, err := m.order([]string{"x"}); err == nil || !strings.Contains(err.Error(), "cycle x -> y -> z -> x") {
		t.Errorf("cycle: error = %v", err)
	}
	if _, err := m.order([]string{"w"}); err == nil || !strings.Contains(err.Error(), `unknown module "missing"`) {
		t.Errorf("unknown dependency: error = %v", err)
	}
	if err := m.start(context.Background(), []string{"nope"}); err == nil {
		t.Error("start of an unknown target succeeded")
	}
}

func TestModulesStartInOrderStopInReverse(t *testing.T) {
	r := &recorder{}
	m := r.manager()
	if err := m.start(context.Background(), []string{"group", "d"}); err != nil {
		t.Fatal(err)
	}
	if nr := m.notReady(); len(nr) != 0 {
		t.Fatalf("notReady = %v after a clean start", nr)
	}
	if err := m.stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "start a,start d,start b,start c,stop c,stop b,stop d,stop a"
	if got := strings.Join(r.events, ","); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	if nr := m.notReady(); !slices.Equal(nr, []string{"stopping"}) {
		t.Fatalf("notReady = %v after stop", nr)
	}
}

func TestModuleStartFailureStopsWhatStarted(t *testing.T) {
	r := &recorder{fail: "c"}
	m := r.manager()
	err := m.start(context.Background(), []string{"group"})
	if err == nil || !strings.Contains(err.Error(), "start c: boom") {
		t.Fatalf("error = %v", err)
	}
	if got, want := strings.Join(r.events, ","), "start a,start b,stop b,stop a"; got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	if err := m.stop(context.Background()); err != nil || len(r.events) != 4 {
		t.Fatalf("a second stop: %v, events %v", err, r.events)
	}
}

func TestModuleStopErrorsDoNotStopTheRest(t *testing.T) {
	var stopped []string
	m := newModuleManager()
	for _, name := range []string{"a", "b", "c"} {
		m.register(name, func(context.Context) (services.Service, error) {
			return newSimple(nil, func() error {
				stopped = append(stopped, name)
				if name == "b" {
					return errors.New("stuck")
				}
				return nil
			}), nil
		})
	}
	m.register("all", nil, "a", "b", "c")
	if err := m.start(context.Background(), []string{"all"}); err != nil {
		t.Fatal(err)
	}
	err := m.stop(context.Background())
	if err == nil || !strings.Contains(err.Error(), "stop b: stuck") || strings.Join(stopped, ",") != "c,b,a" {
		t.Fatalf("stop = %v, stopped %v", err, stopped)
	}
}

func TestReadyEndpoint(t *testing.T) {
	var down atomic.Bool
	m := newModuleManager()
	m.register("nats", func(context.Context) (services.Service, error) {
		return newSimple(func() error {
			if down.Load() {
				return errors.New("connection RECONNECTING")
			}
			return nil
		}, func() error { return nil }), nil
	})
	m.register("plain", func(context.Context) (services.Service, error) { return nil, nil })
	m.register("role", nil, "nats", "plain")
	srv := httptest.NewServer(httpHandler(prometheus.NewRegistry(), m, true))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}

	if code, body := get("/ready"); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting") {
		t.Fatalf("before start: %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz before start: %d", code)
	}
	if code, body := get("/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Fatalf("/debug/pprof/goroutine: %d %.100q", code, body)
	}
	if err := m.start(context.Background(), []string{"role"}); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/ready"); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("started: %d %q", code, body)
	}
	down.Store(true)
	if code, body := get("/ready"); code != http.StatusServiceUnavailable || body != "not ready:\nnats: connection RECONNECTING\n" {
		t.Fatalf("nats down: %d %q", code, body)
	}
	down.Store(false)
	if err := m.stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/ready"); code != http.StatusServiceUnavailable || !strings.Contains(body, "stopping") {
		t.Fatalf("after stop: %d %q", code, body)
	}
}

// TestModuleFailureIsWatched checks that a module whose service fails
// while it runs is reported on failures and by /ready, and that one whose
// start fails stops what started before it.
func TestModuleFailureIsWatched(t *testing.T) {
	crash := make(chan struct{})
	m := newModuleManager()
	m.register("base", func(context.Context) (services.Service, error) {
		return newSimple(nil, func() error { return nil }), nil
	})
	m.register("role", func(context.Context) (services.Service, error) {
		return services.NewBasicService(nil, func(ctx context.Context) error {
			select {
			case <-crash:
				return errors.New("lost its disk")
			case <-ctx.Done():
				return nil
			}
		}, nil), nil
	}, "base")
	if err := m.start(context.Background(), []string{"role"}); err != nil {
		t.Fatal(err)
	}
	close(crash)
	select {
	case err := <-m.failures():
		if err == nil || !strings.Contains(err.Error(), "lost its disk") {
			t.Fatalf("failure = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no failure reported")
	}
	if nr := m.notReady(); len(nr) != 1 || !strings.HasPrefix(nr[0], "role: Failed") || !strings.Contains(nr[0], "lost its disk") {
		t.Fatalf("notReady = %q", nr)
	}
	if err := m.stop(context.Background()); err == nil || !strings.Contains(err.Error(), "stop role") {
		t.Fatalf("stop = %v, want the role's failure", err)
	}

	failing := newModuleManager()
	var stopped atomic.Bool
	failing.register("base", func(context.Context) (services.Service, error) {
		return newSimple(nil, func() error { stopped.Store(true); return nil }), nil
	})
	failing.register("role", func(context.Context) (services.Service, error) {
		return services.NewBasicService(func(context.Context) error { return errors.New("port taken") }, nil, nil), nil
	}, "base")
	if err := failing.start(context.Background(), []string{"role"}); err == nil || !strings.Contains(err.Error(), "start role: port taken") {
		t.Fatalf("start = %v", err)
	}
	if !stopped.Load() {
		t.Fatal("a failed start left its dependency running")
	}
}

func TestEveryTargetIsARegisteredRole(t *testing.T) {
	m := (&Sediment{}).modules()
	for _, target := range Targets {
		order, err := m.order([]string{target})
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if !slices.Contains(order, Manifest) || order[len(order)-1] != target {
			t.Errorf("%s starts %v, want the manifest before the role", target, order)
		}
	}
}
