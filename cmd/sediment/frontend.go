package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync/atomic"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/frontend/transport"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
)

// The frontend module serves CQL. At start it:
//
//  1. listens on -cql.listen-address, so that a taken port stops the start;
//  2. builds the engine: engine.Local over this process's ingest node when
//     the ingest role runs here too (then the frontend starts after it),
//     otherwise engine.Remote, which reaches the owning ingest nodes over
//     RPC; SSTable blocks are read through the -cache.* tiers;
//  3. starts the executor and the CQL server, and logs where it listens;
//  4. pushes events of the schema and of the other frontends (exec.Watch);
//  5. announces its CQL endpoint in the member list as member
//     "<node ID>-cql" with the single role frontend and the CQL address
//     (-node.address's host if set, else the listen address), renewed every
//     heartbeat interval, so that the other frontends list it in
//     system.peers. (An ingest node's own member lists every role of its
//     process and its RPC address; a member whose only role is frontend is
//     a CQL endpoint.)
//
// /ready answers 200 only once the port listens. On stop the server closes
// its connections and the member leaves the list.

// cqlMemberSuffix names a process's CQL endpoint member after its node ID.
const cqlMemberSuffix = "-cql"

// initFrontend runs the CQL frontend as the comment above describes.
func (s *Sediment) initFrontend(ctx context.Context) (service, error) {
	cfg := s.cfg.CQL
	ln, err := net.Listen("tcp", cfg.ListenAddress)
	if err != nil {
		return service{}, fmt.Errorf("-cql.listen-address: %w", err)
	}
	served := false
	defer func() {
		if !served {
			ln.Close()
		}
	}()
	id, err := loadNodeID(vfs.Default, s.cfg.DataDir)
	if err != nil {
		return service{}, err
	}
	memberID := id + cqlMemberSuffix
	addr := cqlAddress(ln.Addr().String(), s.cfg.Node.Address)
	logger := s.logger.With("component", "cql")

	ccfg := s.cfg.Cache
	if ccfg.DiskBytes > 0 && ccfg.DiskDir == "" {
		ccfg.DiskDir = filepath.Join(s.cfg.DataDir, "cache")
	}
	tier, err := cache.New(ccfg, vfs.Default, cache.Options{Name: "frontend", Registerer: s.reg, Logger: logger})
	if err != nil {
		return service{}, fmt.Errorf("-cache: %w", err)
	}
	var eng engine.Engine
	closeEngine := func() error { return nil }
	if s.ingest != nil {
		eng, err = engine.NewLocal(engine.LocalConfig{Node: s.ingest, View: s.view, Store: s.store, Tier: tier})
	} else {
		var r *engine.Remote
		r, err = engine.NewRemote(engine.RemoteConfig{View: s.view, Store: s.store, Tier: tier})
		eng, closeEngine = r, r.Close
	}
	if err != nil {
		return service{}, err
	}

	var auth *exec.Auth
	fopts := transport.Options{Registerer: s.reg, Logger: s.logger}
	if cfg.Authenticator == "password" {
		auth = exec.NewAuth(s.manifest, s.view, exec.AuthOptions{Logger: logger})
		if err := auth.Setup(ctx); err != nil {
			return service{}, errors.Join(fmt.Errorf("default superuser: %w", err), closeEngine())
		}
		fopts.Authenticator = auth
	}
	x, err := exec.New(exec.Config{
		Auth:     auth,
		Engine:   eng,
		Manifest: s.manifest,
		View:     s.view,
		Local: exec.Node{
			HostID:      exec.HostIDOf(memberID),
			ClusterName: s.manifest.Cluster(),
			Addr:        addr,
		},
		MemberMaxAge: 3 * s.cfg.Node.HeartbeatInterval,
		Batch:        s.cfg.Batch,
		Logger:       logger,
		Registerer:   s.reg,
	})
	if err != nil {
		return service{}, errors.Join(err, closeEngine())
	}
	server, err := transport.New(cfg, x.Handler(), fopts)
	if err != nil {
		return service{}, errors.Join(err, closeEngine())
	}
	serving := make(chan struct{})
	var serveErr error
	go func() {
		defer close(serving)
		serveErr = server.Serve(ln)
	}()
	served = true
	engineKind := "remote"
	if s.ingest != nil {
		engineKind = "local"
	}
	logger.Info("CQL server listening", "address", ln.Addr().String(), "announced", addr, "engine", engineKind)

	member := manifest.Member{ID: memberID, Roles: []string{Frontend}, Addr: addr}
	if err := s.manifest.Heartbeat(ctx, member); err != nil {
		return service{}, errors.Join(fmt.Errorf("heartbeat: %w", err), server.Close(), closeEngine())
	}
	hbCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var hbErr atomic.Pointer[error]
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.heartbeat(hbCtx, member, &hbErr, logger)
	}()
	// Events of the schema and of the other frontends, for the clients
	// that registered for them.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		x.Watch(hbCtx, server.Publish)
	}()
	s.cqlAddr = ln.Addr().String()
	return service{
		ready: func() error {
			select {
			case <-serving:
				return fmt.Errorf("CQL server stopped: %w", serveErr)
			default:
			}
			if err := hbErr.Load(); err != nil {
				return fmt.Errorf("heartbeat: %w", *err)
			}
			return nil
		},
		stop: func(ctx context.Context) error {
			cancel()
			<-done
			<-watched
			err := server.Close()
			<-serving
			return errors.Join(err, closeEngine(), s.manifest.Leave(ctx, memberID))
		},
	}, nil
}

// cqlAddress is the CQL address announced to the other frontends and shown
// to drivers: the listen address, with -node.address's host when set (for a
// server listening on every interface).
func cqlAddress(listen, nodeAddress string) string {
	_, port, _ := net.SplitHostPort(listen)
	host, _, _ := net.SplitHostPort(listen)
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
