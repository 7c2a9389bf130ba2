package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/sedimentdb/sediment/internal/clustertls"
	"github.com/sedimentdb/sediment/internal/logsample"
)

// httpGuard lets a request through to the HTTP endpoints only with the
// configured credentials: the bearer token, a client certificate the
// cluster CA signed (-http.tls), or both. /healthz stays open, since a
// liveness probe carries no credentials and the answer tells nothing.
type httpGuard struct {
	cfg     HTTPConfig
	refused prometheus.Counter
	logger  *slog.Logger
	sample  logsample.Sampler
}

func newHTTPGuard(cfg HTTPConfig, reg prometheus.Registerer, logger *slog.Logger) *httpGuard {
	return &httpGuard{
		cfg: cfg, logger: logger.With("component", "http"),
		refused: promauto.With(reg).NewCounter(prometheus.CounterOpts{
			Namespace: "sediment", Subsystem: "http", Name: "unauthorized_requests_total",
			Help: "HTTP requests refused for a missing or wrong bearer token or client certificate.",
		}),
	}
}

// open reports whether the endpoints need no credentials.
func (g *httpGuard) open() bool {
	return g.cfg.BearerToken == "" && g.cfg.BearerTokenFile == "" && !g.cfg.TLS
}

// wrap returns h behind the guard.
func (g *httpGuard) wrap(h http.Handler) http.Handler {
	if g.open() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			h.ServeHTTP(w, r)
			return
		}
		if err := g.check(r); err != nil {
			g.refused.Inc()
			g.sample.Warn(g.logger, "HTTP request refused", "remote", r.RemoteAddr, "path", r.URL.Path, "err", err)
			w.Header().Set("WWW-Authenticate", `Bearer realm="sediment"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

var errNoClientCert = errors.New("no client certificate signed by the cluster CA")

func (g *httpGuard) check(r *http.Request) error {
	if g.cfg.TLS && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		return errNoClientCert
	}
	want := []byte(g.cfg.BearerToken)
	if g.cfg.BearerTokenFile != "" {
		// Read at each request, so that a rotated token applies at once;
		// scrapes are rare enough for that.
		data, err := os.ReadFile(g.cfg.BearerTokenFile)
		if err != nil {
			return err
		}
		if want = bytes.TrimSpace(data); len(want) == 0 {
			return errors.New("the bearer token file is empty")
		}
	}
	if len(want) == 0 {
		return nil
	}
	got, ok := bytes.CutPrefix([]byte(r.Header.Get("Authorization")), []byte("Bearer "))
	// Comparing digests takes the same time whatever the token's length
	// and content.
	gh, wh := sha256.Sum256(got), sha256.Sum256(want)
	if subtle.ConstantTimeCompare(gh[:], wh[:]) != 1 || !ok {
		return errors.New("missing or wrong bearer token")
	}
	return nil
}

// listener returns ln serving TLS with the cluster certificate when
// -http.tls asks for it. A client certificate is verified when given and
// required by wrap, so that /healthz answers without one.
func (g *httpGuard) listener(ln net.Listener, id *clustertls.Identity) net.Listener {
	if !g.cfg.TLS {
		return ln
	}
	return tls.NewListener(ln, &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := id.Server()
			c.MinVersion = tls.VersionTLS12
			c.ClientAuth = tls.VerifyClientCertIfGiven
			return c, nil
		},
	})
}

// loopbackOnly reports whether addr listens on loopback alone.
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
