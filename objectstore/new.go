package objectstore

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/vfs"
)

// New returns the Store that cfg describes, with its metrics registered in
// reg. A registry holds the metrics of one Store: give a second Store its
// own, or wrap reg with prometheus.WrapRegistererWith. A nil logger
// discards logs.
func New(ctx context.Context, cfg Config, reg prometheus.Registerer, logger *slog.Logger) (Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "objectstore", "backend", cfg.Backend)
	m := newMetrics(reg)
	var s Store
	switch cfg.Backend {
	case BackendFile:
		fs, err := newFileStore(vfs.Default, cfg.Dir, m)
		if err != nil {
			return nil, err
		}
		s = fs
	case BackendS3, BackendMinIO:
		var api remoteAPI
		var err error
		if cfg.Backend == BackendS3 {
			api, err = newS3API(ctx, cfg)
		} else {
			t := http.DefaultTransport.(*http.Transport).Clone()
			configureTransport(t)
			api, err = newMinIOAPI(cfg, t)
		}
		if err != nil {
			return nil, err
		}
		req := &requester{log: logger, backend: cfg.Backend, cfg: cfg.Retry, timeout: cfg.Timeout, m: m, transient: api.transient}
		s = newRemoteStore(api, req, logger, cfg)
	default:
		return nil, fmt.Errorf("objectstore: unknown backend %q", cfg.Backend)
	}
	return WithPrefix(s, cfg.Prefix)
}

// configureTransport keeps enough idle connections for parallel part
// uploads and ranged reads, and bounds the phases of a request that have no
// natural length (dialing, TLS, waiting for headers); the body's transfer is
// bounded by the operation's context instead.
func configureTransport(t *http.Transport) {
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ExpectContinueTimeout = time.Second
	t.ResponseHeaderTimeout = 2 * time.Minute
	// Objects are stored compressed already, and ranges must be exact.
	t.DisableCompression = true
}
