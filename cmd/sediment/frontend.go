package main

import (
	"context"

	"github.com/grafana/dskit/services"

	"github.com/sedimentdb/sediment/frontend"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// initFrontend builds the frontend role (package frontend). When the ingest
// role runs in this process too, the frontend starts after it and writes to
// its node directly.
func (s *Sediment) initFrontend(context.Context) (services.Service, error) {
	id, err := loadNodeID(vfs.Default, s.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	var node *ingest.Node
	if s.ingester != nil {
		node = s.ingester.Node()
	}
	f, err := frontend.New(s.cfg.Frontend, frontend.Deps{
		Manifest:          s.manifest,
		View:              s.view,
		Store:             s.store,
		Node:              node,
		NodeID:            id,
		Address:           s.cfg.Node.Address,
		HeartbeatInterval: s.cfg.Node.HeartbeatInterval,
		DataDir:           s.cfg.DataDir,
		TLS:               s.tls,
		Registerer:        s.reg,
		Logger:            s.logger,
	})
	if err != nil {
		return nil, err
	}
	s.frontend = f
	return f, nil
}
