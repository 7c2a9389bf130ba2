package main

import (
	"context"

	"github.com/grafana/dskit/services"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// initIngest builds the ingest role (package ingest). Its flushes ask the
// compactor's L0 gauge how deep their L0 is, and slow down or wait while
// compaction falls behind (-ingest.flush-delay, -ingest.flush-hold).
func (s *Sediment) initIngest(context.Context) (services.Service, error) {
	id, err := loadNodeID(vfs.Default, s.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	roles, _ := s.cfg.Roles() // checked by Validate
	g, err := ingest.New(s.cfg.Ingest, ingest.Deps{
		Manifest:          s.manifest,
		View:              s.view,
		Store:             s.store,
		JetStream:         s.js,
		NodeID:            id,
		Address:           s.cfg.Node.Address,
		Roles:             roles,
		HeartbeatInterval: s.cfg.Node.HeartbeatInterval,
		L0:                compactor.NewL0Gauge(s.view),
		TLS:               s.tls,
		Registerer:        s.reg,
		Logger:            s.logger,
	})
	if err != nil {
		return nil, err
	}
	s.ingester = g
	return g, nil
}
