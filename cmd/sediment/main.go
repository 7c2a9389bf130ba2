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
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sedimentdb/sediment/objectstore"
)

func main() {
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

// run starts the configured roles and serves until ctx is cancelled, then
// stops them in reverse order.
func run(ctx context.Context, cfg *Config, logger *slog.Logger) error {
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	roles, _ := cfg.Roles() // checked by Validate
	logger.Info("sediment starting", "roles", roles, "data_dir", dataDir, "config", "-config.print shows the effective configuration")

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// No role reads or writes the bucket yet (the cluster core brings them);
	// opening it now checks the configuration and that the bucket answers.
	if _, err := openObjectStore(ctx, cfg.ObjectStore, reg, logger); err != nil {
		return err
	}

	var srv *http.Server
	if cfg.HTTP.ListenAddress != "" {
		ln, err := net.Listen("tcp", cfg.HTTP.ListenAddress)
		if err != nil {
			return fmt.Errorf("http: %w", err)
		}
		srv = &http.Server{Handler: httpHandler(reg), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("http server failed", "err", err)
			}
		}()
		logger.Info("serving metrics and health checks", "address", "http://"+ln.Addr().String())
	}

	<-ctx.Done()
	logger.Info("sediment stopping")
	if srv != nil {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			return fmt.Errorf("http shutdown: %w", err)
		}
	}
	logger.Info("sediment stopped cleanly")
	return nil
}

// openObjectStore opens the configured bucket and checks that it answers, so
// that a wrong endpoint or credentials stop the process at start.
func openObjectStore(ctx context.Context, cfg objectstore.Config, reg prometheus.Registerer, logger *slog.Logger) (objectstore.Store, error) {
	store, err := objectstore.New(ctx, cfg, reg, logger.With("component", "objectstore"))
	if err != nil {
		return nil, fmt.Errorf("object store: %w", err)
	}
	if _, err := store.Head(ctx, "sediment-probe"); err != nil && !objectstore.IsNotFound(err) {
		return nil, fmt.Errorf("object store does not answer: %w", err)
	}
	where := cfg.Dir
	if cfg.Backend != objectstore.BackendFile {
		where = cfg.Endpoint + "/" + cfg.Bucket
	}
	logger.Info("object store ready", "backend", cfg.Backend, "location", where, "prefix", cfg.Prefix)
	return store, nil
}

func httpHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	ok := func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("GET /ready", ok)
	return mux
}
