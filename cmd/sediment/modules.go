package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/grafana/dskit/services"
)

// A module is one part of the process: a dependency such as the object store
// or NATS, or a role named by -target. Every module is registered once, with
// the modules it needs, in one place (Sediment.modules); the manager starts
// what the chosen roles need in dependency order, watches what runs for
// failures, and stops it in reverse.

// initFunc builds a module once every module it depends on runs. It returns
// the module's service (dskit's lifecycle: starting, running, stopping), or
// nil if nothing keeps running.
type initFunc func(ctx context.Context) (services.Service, error)

// readier is a service that can tell why it does not serve although it
// runs (a lost NATS connection, failing heartbeats).
type readier interface{ Ready() error }

// simple is the service of a module that holds something to release on
// stop and may tell whether it is ready, but runs nothing of its own.
type simple struct {
	services.Service
	ready func() error
}

func newSimple(ready func() error, stop func() error) simple {
	return simple{Service: services.NewIdleService(nil, func(error) error { return stop() }), ready: ready}
}

func (s simple) Ready() error {
	if s.ready == nil {
		return nil
	}
	return s.ready()
}

type module struct {
	init initFunc // nil for a module that only groups its dependencies
	deps []string
}

type startedModule struct {
	name string
	svc  services.Service
}

// moduleManager starts and stops modules and answers whether they are ready.
type moduleManager struct {
	modules map[string]module
	watcher *services.FailureWatcher

	mu       sync.Mutex
	planned  []string        // the modules start was asked to run, in order
	started  []startedModule // in start order; svc is nil if nothing runs
	stopping bool
}

func newModuleManager() *moduleManager {
	return &moduleManager{modules: map[string]module{}, watcher: services.NewFailureWatcher()}
}

// register adds a module. Registering a name twice is a programming error.
func (m *moduleManager) register(name string, init initFunc, deps ...string) {
	if _, ok := m.modules[name]; ok {
		panic(fmt.Sprintf("module %q registered twice", name))
	}
	m.modules[name] = module{init: init, deps: deps}
}

// order returns the targets and everything they depend on, each once, every
// module after its dependencies. The order is deterministic: targets are
// visited sorted, dependencies in the order they were registered.
func (m *moduleManager) order(targets []string) ([]string, error) {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var out []string
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		path = append(path, name)
		switch state[name] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("modules: dependency cycle %s", strings.Join(path, " -> "))
		}
		mod, ok := m.modules[name]
		if !ok {
			return fmt.Errorf("modules: unknown module %q (needed by %s)", name, strings.Join(path, " -> "))
		}
		state[name] = visiting
		for _, d := range mod.deps {
			if err := visit(d, path); err != nil {
				return err
			}
		}
		state[name] = done
		out = append(out, name)
		return nil
	}
	for _, t := range slices.Sorted(slices.Values(targets)) {
		if err := visit(t, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// start builds and starts the targets and their dependencies in order,
// each once the ones before it run. If one fails, the modules already
// started are stopped, in reverse, before start returns its error.
func (m *moduleManager) start(ctx context.Context, targets []string) error {
	names, err := m.order(targets)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.planned = names
	m.mu.Unlock()
	for _, name := range names {
		var svc services.Service
		if init := m.modules[name].init; init != nil {
			svc, err = init(ctx)
			if err == nil && svc != nil {
				err = startService(ctx, svc)
			}
			if err != nil {
				err = fmt.Errorf("start %s: %w", name, err)
				return errors.Join(err, m.stop(context.WithoutCancel(ctx)))
			}
		}
		if svc != nil {
			m.watcher.WatchService(svc)
		}
		m.mu.Lock()
		m.started = append(m.started, startedModule{name, svc})
		m.mu.Unlock()
	}
	return nil
}

// startService starts svc and waits until it runs or ctx ends. The
// service's own context does not end with ctx: services stop one by one, in
// reverse order, when stop asks them to. One that does not get to run is
// stopped before startService returns.
func startService(ctx context.Context, svc services.Service) error {
	err := svc.StartAsync(context.WithoutCancel(ctx))
	if err == nil {
		err = svc.AwaitRunning(ctx)
	}
	if failure := svc.FailureCase(); failure != nil {
		err = failure // its own words, not the state it ended in
	}
	if err != nil {
		svc.StopAsync()
		_ = svc.AwaitTerminated(context.WithoutCancel(ctx)) // its failure is err
	}
	return err
}

// failures delivers the error of any started service that fails on its own.
func (m *moduleManager) failures() <-chan error { return m.watcher.Chan() }

// stop stops every started module in reverse start order, each within
// ctx, and returns every error; a module that fails to stop does not keep
// the others running.
func (m *moduleManager) stop(ctx context.Context) error {
	m.mu.Lock()
	m.stopping = true
	started := m.started
	m.started = nil
	m.mu.Unlock()
	var errs []error
	for _, sm := range slices.Backward(started) {
		if sm.svc == nil {
			continue
		}
		if err := services.StopAndAwaitTerminated(ctx, sm.svc); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", sm.name, err))
		}
	}
	return errors.Join(errs...)
}

// notReady lists, one line per module, why the process is not ready: modules
// still starting, and started ones whose check fails. It is empty once every
// planned module runs and reports ready.
func (m *moduleManager) notReady() []string {
	m.mu.Lock()
	planned, started, stopping := m.planned, m.started, m.stopping
	m.mu.Unlock()
	if stopping {
		return []string{"stopping"}
	}
	if planned == nil {
		return []string{"starting"}
	}
	var out []string
	for _, sm := range started {
		if sm.svc == nil {
			continue
		}
		if st := sm.svc.State(); st != services.Running {
			line := fmt.Sprintf("%s: %s", sm.name, st)
			if err := sm.svc.FailureCase(); err != nil {
				line += ": " + err.Error()
			}
			out = append(out, line)
		} else if r, ok := sm.svc.(readier); ok {
			if err := r.Ready(); err != nil {
				out = append(out, fmt.Sprintf("%s: %v", sm.name, err))
			}
		}
	}
	for _, name := range planned[len(started):] {
		out = append(out, name+": starting")
	}
	return out
}
