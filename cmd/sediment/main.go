// Command sediment runs Sediment: every role in one process by default
// (-target=all), with embedded defaults under -data.dir, or any subset of the
// roles for a cluster. See the README and docs/ARCHITECTURE.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sedimentdb/sediment/internal/clustertls"
	"github.com/sedimentdb/sediment/internal/status"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bench" {
		os.Exit(benchCommand(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "load" {
		os.Exit(loadCommand(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "unload" {
		os.Exit(unloadCommand(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "admin" {
		os.Exit(adminCommand(os.Args[2:]))
	}
	var cfg Config
	if err := cfg.Load(os.Args[1:], os.Getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			Usage(os.Stdout)
			return
		}
		fmt.Fprintf(os.Stderr, "sediment: %v\nRun 'sediment -help' for the flags.\n", err)
		os.Exit(2)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "sediment: %v\n", err)
		os.Exit(2)
	}
	if cfg.PrintConfig {
		if err := printConfig(os.Stdout, cfg); err != nil {
			fmt.Fprintf(os.Stderr, "sediment: %v\n", err)
			os.Exit(1)
		}
		return
	}
	logger := cfg.Log.Logger(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, &cfg, logger); err != nil {
		logger.Error("sediment stopped", "err", err)
		os.Exit(1)
	}
}

// run runs one process configured by cfg until ctx is cancelled.
func run(ctx context.Context, cfg *Config, logger *slog.Logger) error {
	return newSediment(cfg, logger).run(ctx)
}

// newSediment returns a process configured by cfg, with its own metrics
// registry.
func newSediment(cfg *Config, logger *slog.Logger) *Sediment {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Sediment{cfg: cfg, logger: logger, reg: reg}
}

// run starts the configured roles and serves until ctx is cancelled, then
// stops them in reverse order. It runs once.
func (s *Sediment) run(ctx context.Context) error {
	cfg, logger, reg := s.cfg, s.logger, s.reg
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if cfg.ClusterTLS.Enabled() {
		if s.tls, err = clustertls.Load(cfg.ClusterTLS, logger); err != nil {
			return err
		}
		logger.Info("cluster TLS on: internal connections require certificates signed by the cluster CA", "ca", cfg.ClusterTLS.CAFile, "cert", cfg.ClusterTLS.CertFile)
	}
	roles, _ := cfg.Roles() // checked by Validate
	mods := s.modules()
	order, err := mods.order(roles)
	if err != nil {
		return err
	}
	logger.Info("sediment starting", "roles", roles, "modules", order, "data_dir", dataDir, "config", "-config.print shows the effective configuration")

	// The HTTP server comes first, so that /healthz answers and /ready says
	// what is still starting while the modules start.
	if cfg.HTTP.ListenAddress != "" {
		ln, err := net.Listen("tcp", cfg.HTTP.ListenAddress)
		if err != nil {
			return fmt.Errorf("http: %w", err)
		}
		s.httpAddr = ln.Addr().String()
		mux := httpHandler(reg, mods, cfg.HTTP.Pprof)
		// The status page's charts: the last hour of this process's
		// metrics, in memory.
		hist := status.NewHistory(reg, 0, 0)
		histCtx, stopHist := context.WithCancel(ctx)
		defer stopHist()
		go hist.Run(histCtx)
		mux.Handle("GET /status", s.statusHandler(mods, hist))
		if err := status.RegisterClusterMetrics(reg, s.catalog(mods)); err != nil {
			return err
		}
		guard := newHTTPGuard(cfg.HTTP, reg, logger)
		if guard.open() && !loopbackOnly(cfg.HTTP.ListenAddress) {
			logger.Warn("the HTTP endpoints listen beyond loopback without credentials: anyone who reaches the port reads the metrics and the status page; set -http.bearer-token-file or -http.tls", "address", cfg.HTTP.ListenAddress)
		}
		srv := &http.Server{Handler: guard.wrap(mux), ReadHeaderTimeout: 10 * time.Second}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(guard.listener(ln, s.tls)) }()
		defer func() {
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(shutdownCtx); err != nil {
				logger.Error("http shutdown", "err", err)
			}
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				logger.Error("http server failed", "err", err)
			}
		}()
		scheme := "http://"
		if cfg.HTTP.TLS {
			scheme = "https://"
		}
		logger.Info("serving metrics and health checks", "address", scheme+ln.Addr().String(), "pprof", cfg.HTTP.Pprof, "credentials", !guard.open())
	}

	if err := mods.start(ctx, roles); err != nil {
		if ctx.Err() != nil {
			logger.Info("sediment stopped while starting", "err", err)
			return nil
		}
		return err
	}
	logger.Info("sediment ready", "roles", roles)

	// A module that fails on its own stops the process: a supervisor
	// restarts it whole, rather than it serving with a part missing.
	var failed error
	select {
	case <-ctx.Done():
		logger.Info("sediment stopping")
	case failed = <-mods.failures():
		logger.Error("a module failed; sediment stopping", "err", failed)
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := errors.Join(failed, mods.stop(stopCtx)); err != nil {
		return err
	}
	logger.Info("sediment stopped cleanly")
	return nil
}

// httpHandler serves the metrics in reg, liveness on /healthz, on /ready
// whether every started module is ready (200, or 503 with one line per
// module that is not), and with pprof Go's profiles under /debug/pprof/.
func httpHandler(reg *prometheus.Registry, mods *moduleManager, withPprof bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if notReady := mods.notReady(); len(notReady) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready:")
			for _, l := range notReady {
				fmt.Fprintln(w, l)
			}
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if !withPprof {
		return mux
	}
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// statusHandler serves the status page (package status, docs/status.md).
// The catalog appears once the manifest module has started: the module
// manager's lock orders its setup of s before the reads here.
func (s *Sediment) statusHandler(mods *moduleManager, hist *status.History) http.Handler {
	roles, _ := s.cfg.Roles()
	return status.Handler(status.Source{
		Process: s.httpAddr, Roles: roles, Started: time.Now(), Gatherer: s.reg, History: hist, Logger: s.logger,
		Catalog: s.catalog(mods),
	})
}

// catalog returns what the status page and the cluster metrics read the
// catalog with: nothing until the manifest module has started, whose
// lock orders its setup of s before the reads.
func (s *Sediment) catalog(mods *moduleManager) func() status.Catalog {
	return func() status.Catalog {
		mods.mu.Lock()
		started := slices.ContainsFunc(mods.started, func(m startedModule) bool { return m.name == Manifest })
		mods.mu.Unlock()
		if !started {
			return status.Catalog{}
		}
		return status.Catalog{View: s.view, Store: s.store, Cluster: s.manifest.Cluster()}
	}
}
