package main

import (
	"cmp"
	"context"
	"slices"

	"github.com/grafana/dskit/services"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// initCompactor builds the compactor role (package compactor).
func (s *Sediment) initCompactor(ctx context.Context) (services.Service, error) {
	id, err := loadNodeID(vfs.Default, s.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	// Without the ingest role, whose member lists every role of the
	// process, the compactor is a member of its own, at -node.address or
	// the HTTP address.
	var addr string
	if roles, _ := s.cfg.Roles(); !slices.Contains(roles, Ingest) {
		addr = cmp.Or(s.cfg.Node.Address, s.httpAddr)
	}
	return compactor.New(ctx, s.cfg.Compactor, s.cfg.GC, compactor.Deps{
		JetStream:         s.js,
		Manifest:          s.manifest,
		View:              s.view,
		Store:             s.store,
		NodeID:            id,
		HeartbeatInterval: s.cfg.Node.HeartbeatInterval,
		Address:           addr,
		Registerer:        s.reg,
		Logger:            s.logger,
	})
}
