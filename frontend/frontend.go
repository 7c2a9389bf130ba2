// Package frontend is the frontend role: a stateless CQL endpoint. New
// assembles it from its parts, which live in the packages below this one:
//
//	transport   the native-protocol server (connections, handshake, TLS, events)
//	wire        the native-protocol codec
//	cql/...     the CQL syntax tree, parser, values, functions and executor
//	engine      reads and writes: the memtables of the owning ingest nodes merged
//	            with the SSTables of the bucket
//	cache       the block caches in front of the bucket
//
// At start a Frontend listens on its CQL address (a taken port fails the
// start), sets up the default superuser when password authentication is
// on, and announces its CQL endpoint in the member list as member
// "<node ID>-cql" with the single role frontend, so that the other
// frontends list it in system.peers. While it runs it serves CQL, renews
// that member every heartbeat interval and pushes schema and topology
// events to the clients that registered for them. On stop it closes its
// connections and leaves the member list.
package frontend

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/grafana/dskit/services"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/frontend/transport"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/clustertls"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// Role is the frontend's role name, in -target and in the member list.
const Role = "frontend"

// MemberSuffix names a process's CQL endpoint member after its node ID.
const MemberSuffix = "-cql"

// Config configures the frontend role. Its sections keep the top-level
// YAML keys they have always had.
type Config struct {
	CQL   transport.Config `yaml:"cql"`
	Auth  exec.AuthConfig  `yaml:"cql_auth"`
	Batch exec.BatchLimits `yaml:"cql_batch"`
	Cache cache.Config     `yaml:"cache"`
}

// RegisterFlags registers the flags of every section, with their defaults.
func (c *Config) RegisterFlags(f *flag.FlagSet) {
	c.CQL.RegisterFlags(f)
	c.Auth.RegisterFlags(f)
	c.Batch.RegisterFlags(f)
	c.Cache.RegisterFlags(f)
}

// Validate checks every section.
func (c *Config) Validate() error {
	return errors.Join(c.CQL.Validate(), c.Auth.Validate(), c.Cache.Validate())
}

// Deps is what the frontend needs from the rest of the process.
type Deps struct {
	Manifest *manifest.Manifest
	View     *manifest.View
	Store    objectstore.Store
	// Node is this process's ingest node when the ingest role runs here
	// too: writes and memtable reads then go to it directly
	// (engine.Local). Without one the frontend reaches the owning ingest
	// nodes over their RPC (engine.Remote).
	Node *ingest.Node
	// NodeID is the process's ID (<data.dir>/node-id).
	NodeID string
	// Address is -node.address; its host, when set, is the one announced
	// for CQL (for a server listening on every interface).
	Address string
	// HeartbeatInterval is how often the member is renewed; a frontend
	// lists as peers the frontends that beat within three of them.
	HeartbeatInterval time.Duration
	// DataDir holds the disk cache when Config.Cache names no directory.
	DataDir string
	// Auth adjusts the password authenticator (tests lower its bcrypt
	// cost); Executor adjusts the executor's configuration (tests set its
	// clock). Both may be nil.
	Auth     func(*exec.AuthOptions)
	Executor func(*exec.Config)
	// TLS, when set, is the identity the frontend presents to ingest nodes
	// and checks theirs against (mutual TLS with the cluster CA).
	TLS *clustertls.Identity

	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Frontend is a running frontend role.
type Frontend struct {
	services.Service

	cfg      Config
	deps     Deps
	memberID string
	logger   *slog.Logger

	engine      engine.Engine
	closeEngine func() error
	auth        *exec.Auth
	exec        *exec.Executor
	server      *transport.Server

	ln     net.Listener
	addr   string           // the CQL address announced to members and drivers
	beater *manifest.Beater // set while starting
}

// New builds a frontend from cfg. It takes its CQL port at once, so that a
// taken port fails before anything else starts; the rest waits for the
// service to start.
func New(cfg Config, deps Deps) (f *Frontend, err error) {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	logger := deps.Logger.With("component", "cql")
	f = &Frontend{cfg: cfg, deps: deps, memberID: deps.NodeID + MemberSuffix, logger: logger}
	if f.ln, err = net.Listen("tcp", cfg.CQL.ListenAddress); err != nil {
		return nil, fmt.Errorf("-cql.listen-address: %w", err)
	}
	f.addr = announcedAddress(f.ln.Addr().String(), deps.Address)
	f.closeEngine = func() error { return nil }
	defer func() {
		if err != nil {
			err = errors.Join(err, f.ln.Close(), f.closeEngine())
		}
	}()

	ccfg := cfg.Cache
	if ccfg.DiskBytes > 0 && ccfg.DiskDir == "" {
		ccfg.DiskDir = filepath.Join(deps.DataDir, "cache")
	}
	tier, err := cache.New(ccfg, vfs.Default, cache.Options{Name: "frontend", Registerer: deps.Registerer, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("-cache: %w", err)
	}
	if deps.Node != nil {
		f.engine, err = engine.NewLocal(engine.LocalConfig{Node: deps.Node, View: deps.View, Store: deps.Store, Tier: tier})
	} else {
		var r *engine.Remote
		rcfg := engine.RemoteConfig{View: deps.View, Store: deps.Store, Tier: tier}
		if deps.TLS != nil {
			rcfg.RPC.TLS = deps.TLS.Client
		}
		r, err = engine.NewRemote(rcfg)
		f.engine, f.closeEngine = r, r.Close
	}
	if err != nil {
		return nil, err
	}

	topts := transport.Options{Registerer: deps.Registerer, Logger: deps.Logger}
	if cfg.CQL.Authenticator == "password" {
		ao := exec.AuthOptions{Config: cfg.Auth, Logger: logger, Registerer: deps.Registerer}
		if deps.Auth != nil {
			deps.Auth(&ao)
		}
		f.auth = exec.NewAuth(deps.Manifest, deps.View, ao)
		topts.Authenticator = f.auth
	}
	xc := exec.Config{
		Auth:     f.auth,
		Engine:   f.engine,
		Manifest: deps.Manifest,
		View:     deps.View,
		Local: exec.Node{
			HostID:      exec.HostIDOf(f.memberID),
			ClusterName: deps.Manifest.Cluster(),
			Addr:        f.addr,
		},
		MemberMaxAge: 3 * deps.HeartbeatInterval,
		Batch:        cfg.Batch,
		Logger:       logger,
		Registerer:   deps.Registerer,
	}
	if deps.Executor != nil {
		deps.Executor(&xc)
	}
	if f.exec, err = exec.New(xc); err != nil {
		return nil, err
	}
	if f.server, err = transport.New(cfg.CQL, f.exec.Handler(), topts); err != nil {
		return nil, err
	}
	f.Service = services.NewBasicService(f.starting, f.running, f.stopping).WithName(Role)
	return f, nil
}

// Executor is the frontend's CQL executor.
func (f *Frontend) Executor() *exec.Executor { return f.exec }

// Auth is the password authenticator, nil without one.
func (f *Frontend) Auth() *exec.Auth { return f.auth }

// Engine is what the executor reads and writes through.
func (f *Frontend) Engine() engine.Engine { return f.engine }

// Addr is the address the CQL port listens on.
func (f *Frontend) Addr() string { return f.ln.Addr().String() }

// Ready reports why the frontend does not serve, nil when it does.
func (f *Frontend) Ready() error {
	if s := f.State(); s != services.Running {
		return fmt.Errorf("CQL server %s", s)
	}
	if err := f.beater.Err(); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

func (f *Frontend) starting(ctx context.Context) error {
	fail := func(err error) error { return errors.Join(err, f.ln.Close(), f.closeEngine()) }
	if f.auth != nil {
		if err := f.auth.Setup(ctx); err != nil {
			return fail(fmt.Errorf("default superuser: %w", err))
		}
	}
	member := manifest.Member{ID: f.memberID, Roles: []string{Role}, Addr: f.addr}
	f.beater = f.deps.Manifest.NewBeater(f.deps.HeartbeatInterval, func() manifest.Member { return member }, f.logger)
	if err := f.beater.Beat(ctx); err != nil {
		return fail(fmt.Errorf("heartbeat: %w", err))
	}
	return nil
}

// running serves CQL until the service stops; a server that fails on its
// own fails the service.
func (f *Frontend) running(ctx context.Context) error {
	served := make(chan error, 1)
	go func() { served <- f.server.Serve(f.ln) }()
	engineKind := "remote"
	if f.deps.Node != nil {
		engineKind = "local"
	}
	f.logger.Info("CQL server listening", "address", f.ln.Addr().String(), "announced", f.addr, "engine", engineKind)

	bgCtx, cancel := context.WithCancel(ctx)
	beaten, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(beaten)
		f.beater.Run(bgCtx)
	}()
	go func() {
		defer close(watched)
		f.exec.Watch(bgCtx, f.server.Publish)
	}()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		err = fmt.Errorf("CQL server stopped: %w", err)
	}
	cancel()
	<-beaten
	<-watched
	if cerr := f.server.Close(); err == nil {
		<-served
		err = cerr
	}
	return err
}

// stopTimeout bounds leaving the member list on stop.
const stopTimeout = 10 * time.Second

func (f *Frontend) stopping(error) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return errors.Join(f.closeEngine(), f.deps.Manifest.Leave(ctx, f.memberID))
}

// announcedAddress is the CQL address announced to the other frontends and
// shown to drivers: the listen address, with -node.address's host when set
// (for a server listening on every interface).
func announcedAddress(listen, nodeAddress string) string {
	host, port, _ := net.SplitHostPort(listen)
	if nodeAddress != "" {
		if h, _, err := net.SplitHostPort(nodeAddress); err == nil {
			host = h
		}
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
