package objectstore

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// NewMemRemote returns a remote Store over an in-memory fake of S3, so that
// the acceptance suite can prove the fake used by this package's tests.
func NewMemRemote(cfg Config) Store {
	return newMemStore(newMemAPI(), cfg, prometheus.NewRegistry())
}

func newMemStore(api *memAPI, cfg Config, reg prometheus.Registerer) *remoteStore {
	req := &requester{backend: "mem", cfg: cfg.Retry, timeout: cfg.Timeout, m: newMetrics(reg), transient: api.transient}
	return newRemoteStore(api, req, slog.New(slog.DiscardHandler), cfg)
}
