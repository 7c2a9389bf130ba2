package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// A module is one part of the process: a dependency such as the object store
// or NATS, or a role named by -target. Every module is registered once, with
// the modules it needs, in one place (Sediment.modules); the manager starts
// what the chosen roles need in dependency order and stops it in reverse.

// initFunc starts a module once every module it depends on runs. It returns
// what keeps running, or a zero service if nothing does.
type initFunc func(ctx context.Context) (service, error)

// service is what a started module leaves running. Both fields may be nil.
type service struct {
	// ready returns nil while the module serves, otherwise why it does not.
	ready func() error
	// stop releases what the module holds; it is called once.
	stop func(ctx context.Context) error
}

type module struct {
	init initFunc // nil for a module that only groups its dependencies
	deps []string
}

type startedModule struct {
	name string
	svc  service
}

// moduleManager starts and stops modules and answers whether they are ready.
type moduleManager struct {
	modules map[string]module

	mu       sync.Mutex
	planned  []string        // the modules start was asked to run, in order
	started  []startedModule // in start order
	stopping bool
}

func newModuleManager() *moduleManager {
	return &moduleManager{modules: map[string]module{}}
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

// start starts the targets and their dependencies in order. If one fails,
// the modules already started are stopped, in reverse, before start returns
// its error.
func (m *moduleManager) start(ctx context.Context, targets []string) error {
	names, err := m.order(targets)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.planned = names
	m.mu.Unlock()
	for _, name := range names {
		init := m.modules[name].init
		var svc service
		if init != nil {
			if svc, err = init(ctx); err != nil {
				err = fmt.Errorf("start %s: %w", name, err)
				return errors.Join(err, m.stop(context.WithoutCancel(ctx)))
			}
		}
		m.mu.Lock()
		m.started = append(m.started, startedModule{name, svc})
		m.mu.Unlock()
	}
	return nil
}

// stop stops every started module in reverse start order and returns every
// error; a module that fails to stop does not keep the others running.
func (m *moduleManager) stop(ctx context.Context) error {
	m.mu.Lock()
	m.stopping = true
	started := m.started
	m.started = nil
	m.mu.Unlock()
	var errs []error
	for _, sm := range slices.Backward(started) {
		if sm.svc.stop == nil {
			continue
		}
		if err := sm.svc.stop(ctx); err != nil {
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
		if sm.svc.ready == nil {
			continue
		}
		if err := sm.svc.ready(); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", sm.name, err))
		}
	}
	for _, name := range planned[len(started):] {
		out = append(out, name+": starting")
	}
	return out
}
