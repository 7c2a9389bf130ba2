package main

import (
	"context"

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
	return compactor.New(ctx, s.cfg.Compactor, s.cfg.GC, compactor.Deps{
		JetStream:         s.js,
		Manifest:          s.manifest,
		View:              s.view,
		Store:             s.store,
		NodeID:            id,
		HeartbeatInterval: s.cfg.Node.HeartbeatInterval,
		Registerer:        s.reg,
		Logger:            s.logger,
	})
}
