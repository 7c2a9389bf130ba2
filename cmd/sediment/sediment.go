package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/grafana/dskit/services"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/frontend"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/clustertls"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// Module names. The roles are the ones -target accepts (Targets).
const (
	ObjectStore = "objectstore"
	NATS        = "nats"
	Manifest    = "manifest"
	Frontend    = frontend.Role
	Ingest      = ingest.IngestRole
	Compactor   = compactor.Role
)

// Sediment holds what the modules of one process share: each module's init
// fills in its part for the modules that depend on it.
type Sediment struct {
	cfg    *Config
	logger *slog.Logger
	reg    *prometheus.Registry
	// httpAddr is where the HTTP server listens, "" if it does not.
	httpAddr string
	// tls is the cluster's TLS identity, nil without -cluster.tls-*.
	tls *clustertls.Identity

	store    objectstore.Store
	nats     *nats.Conn
	js       jetstream.JetStream
	manifest *manifest.Manifest
	view     *manifest.View

	// The roles this process runs; nil for those it does not.
	ingester *ingest.Ingester
	frontend *frontend.Frontend
}

// modules registers every module with its dependencies. The frontend role
// serves CQL (initFrontend); when the ingest role runs in the same process,
// the frontend starts after it and writes to its node directly. The
// compactor role runs the garbage collector (initCompactor).
func (s *Sediment) modules() *moduleManager {
	m := newModuleManager()
	m.register(ObjectStore, s.initObjectStore)
	m.register(NATS, s.initNATS)
	m.register(Manifest, s.initManifest, NATS, ObjectStore)
	frontendDeps := []string{Manifest, ObjectStore}
	if roles, _ := s.roles(); slices.Contains(roles, Ingest) {
		frontendDeps = append(frontendDeps, Ingest)
	}
	m.register(Frontend, s.initFrontend, frontendDeps...)
	m.register(Ingest, s.initIngest, Manifest, ObjectStore)
	m.register(Compactor, s.initCompactor, Manifest, ObjectStore)
	return m
}

// roles returns the roles the process runs; none without a configuration.
func (s *Sediment) roles() ([]string, error) {
	if s.cfg == nil {
		return nil, nil
	}
	return s.cfg.Roles()
}

// initObjectStore opens the configured bucket and checks that it answers, so
// that a wrong endpoint or credentials stop the process at start.
func (s *Sediment) initObjectStore(ctx context.Context) (services.Service, error) {
	cfg := s.cfg.ObjectStore
	store, err := objectstore.New(ctx, cfg, s.reg, s.logger.With("component", "objectstore"))
	if err != nil {
		return nil, err
	}
	if _, err := store.Head(ctx, "sediment-probe"); err != nil && !objectstore.IsNotFound(err) {
		return nil, fmt.Errorf("the bucket does not answer: %w", err)
	}
	where := cfg.Dir
	if cfg.Backend == objectstore.BackendFile {
		if abs, err := filepath.Abs(where); err == nil {
			where = abs
		}
	} else {
		where = cfg.Endpoint + "/" + cfg.Bucket
	}
	s.logger.Info("object store ready", "backend", cfg.Backend, "location", where, "prefix", cfg.Prefix)
	s.store = store
	return nil, nil
}

// initNATS connects to the external NATS, or starts the embedded one (on
// 127.0.0.1, storing under the data directory) and connects to it.
func (s *Sediment) initNATS(context.Context) (services.Service, error) {
	cfg := &s.cfg.Manifest
	var emb *manifest.Embedded
	url := cfg.NATSURL
	if url == "" {
		dir, err := filepath.Abs(cfg.EmbeddedDir)
		if err != nil {
			return nil, err
		}
		if emb, err = manifest.StartEmbedded(dir, cfg.EmbeddedPort); err != nil {
			return nil, err
		}
		url = emb.URL()
		s.logger.Info("embedded NATS started", "address", emb.Addr(), "dir", dir, "user", manifest.EmbeddedUser, "password_file", manifest.EmbeddedPasswordFile(dir))
	}
	nc, err := cfg.Connect(url)
	if err != nil {
		if emb != nil {
			emb.Shutdown()
		}
		return nil, err
	}
	s.logger.Info("NATS connected", "url", nc.ConnectedUrlRedacted(), "embedded", emb != nil)
	s.nats = nc
	ready := func() error {
		if st := nc.Status(); st != nats.CONNECTED {
			return fmt.Errorf("connection %s", st)
		}
		return nil
	}
	return newSimple(ready, func() error {
		nc.Close()
		if emb != nil {
			emb.Shutdown()
		}
		return nil
	}), nil
}

// initManifest opens the cluster's catalog and loads a View of it, which its
// watchers then keep current until the module stops.
func (s *Sediment) initManifest(ctx context.Context) (services.Service, error) {
	cfg := &s.cfg.Manifest
	js, err := jetstream.New(s.nats)
	if err != nil {
		return nil, err
	}
	opts := cfg.Options()
	opts.Logger = s.logger.With("component", "manifest")
	m, err := manifest.Open(ctx, js, s.store, cfg.ClusterName, opts)
	if err != nil {
		return nil, err
	}
	// The View outlives the start's context: the ingest role's flushes on
	// stop wait for it to show them. The module's stop closes it.
	view, err := m.Watch(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	s.logger.Info("manifest view loaded", "cluster", m.Cluster(), "schema_version", view.SchemaVersion(), "members", len(view.Members()))
	s.js, s.manifest, s.view = js, m, view
	return newSimple(nil, func() error {
		view.Close()
		return nil
	}), nil
}
