package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/internal/clustertls/clustertlstest"
)

// TestSecretFlagsRefusedOnCommandLine: every secret flag is refused on the
// command line (so that neither ps nor /debug/pprof/cmdline can show it),
// taken from the environment, and redacted by -config.print.
func TestSecretFlagsRefusedOnCommandLine(t *testing.T) {
	for _, name := range secretFlags {
		t.Run(name, func(t *testing.T) {
			for _, args := range [][]string{{"-" + name + "=s3cr3t"}, {"--" + name, "s3cr3t"}} {
				var c Config
				err := c.Load(args, func(string) string { return "" })
				if err == nil || !strings.Contains(err.Error(), EnvName(name)) || strings.Contains(err.Error(), "s3cr3t") {
					t.Fatalf("Load(%q) = %v, want a refusal naming $%s without the secret", args, err, EnvName(name))
				}
			}
			var c Config
			env := map[string]string{EnvName(name): "s3cr3t"}
			if err := c.Load(nil, func(k string) string { return env[k] }); err != nil {
				t.Fatalf("from $%s: %v", EnvName(name), err)
			}
			var printed strings.Builder
			if err := printConfig(&printed, c); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(printed.String(), "s3cr3t") {
				t.Fatalf("-config.print shows the secret of -%s:\n%s", name, printed.String())
			}
		})
	}
}

// get fetches url with client and the bearer token (none if empty) and
// returns the status code and body.
func get(t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestPprofOffByDefault: a process started with the defaults serves no
// profiles.
func TestPprofOffByDefault(t *testing.T) {
	p := startProcess(t, t.TempDir())
	p.waitReady(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", p.httpPort)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
		if code, _ := get(t, http.DefaultClient, base+path, ""); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, code)
		}
	}
	if code, _ := get(t, http.DefaultClient, base+"/metrics", ""); code != http.StatusOK {
		t.Errorf("GET /metrics: %d", code)
	}
	p.stop(t)
}

// TestHTTPBearerToken: with a token file, every endpoint but /healthz
// refuses requests without the token or with a wrong one, and counts them;
// a new token in the file applies at once.
func TestHTTPBearerToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("first-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, t.TempDir(), "-http.pprof", "-http.bearer-token-file="+tokenFile)
	base := fmt.Sprintf("http://127.0.0.1:%d", p.httpPort)
	p.waitReadyVia(t, http.DefaultClient, base+"/ready", "first-token")
	c := http.DefaultClient
	if code, _ := get(t, c, base+"/healthz", ""); code != http.StatusOK {
		t.Fatalf("/healthz without a token: %d", code)
	}
	paths := []string{"/metrics", "/status", "/ready", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"}
	check := func(good string, bad ...string) {
		t.Helper()
		for _, path := range paths {
			for _, tok := range bad {
				if code, body := get(t, c, base+path, tok); code != http.StatusUnauthorized {
					t.Errorf("GET %s with token %q: %d %.80q, want 401", path, tok, code, body)
				}
			}
			if code, body := get(t, c, base+path, good); code != http.StatusOK {
				t.Errorf("GET %s with the token: %d %.200q", path, code, body)
			}
		}
	}
	before := counterValue(t, p.s.reg, "sediment_http_unauthorized_requests_total")
	check("first-token", "", "wrong", "first-token-and-more", "first-toke")
	if n := counterValue(t, p.s.reg, "sediment_http_unauthorized_requests_total") - before; n != float64(4*len(paths)) {
		t.Errorf("%v refusals counted, want %d", n, 4*len(paths))
	}
	if err := os.WriteFile(tokenFile, []byte("second-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("second-token", "first-token")
	if _, body := get(t, c, base+"/debug/pprof/cmdline", "second-token"); strings.Contains(body, "second-token") {
		t.Errorf("/debug/pprof/cmdline shows the token: %q", body)
	}
	p.stop(t)
}

// TestHTTPMutualTLS: with -http.tls the endpoints speak HTTPS with the
// cluster certificate and want a client certificate the cluster CA signed;
// /healthz answers without one.
func TestHTTPMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := clustertlstest.NewCA(t, "cluster")
	p := startProcess(t, t.TempDir(), append(tlsFlags(ca.WriteFiles(t, dir, "node")), "-http.tls")...)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM())
	client := func(certPEM, keyPEM []byte) *http.Client {
		cfg := &tls.Config{RootCAs: roots}
		if certPEM != nil {
			cert, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	member, stranger := client(ca.Issue(t, "prometheus")), client(clustertlstest.NewCA(t, "other").Issue(t, "prometheus"))
	anonymous := client(nil, nil)
	base := fmt.Sprintf("https://127.0.0.1:%d", p.httpPort)
	p.waitReadyVia(t, member, base+"/ready", "")
	before := counterValue(t, p.s.reg, "sediment_http_unauthorized_requests_total")
	if code, _ := get(t, anonymous, base+"/healthz", ""); code != http.StatusOK {
		t.Fatalf("/healthz without a certificate: %d", code)
	}
	want := 0.0 // refusals to count
	for _, path := range []string{"/metrics", "/status", "/ready"} {
		if code, _ := get(t, anonymous, base+path, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a certificate: %d, want 401", path, code)
		}
		want++
		// Go's client withholds a certificate the server's CA list does
		// not name (then 401); others send it and fail the handshake.
		if resp, err := stranger.Get(base + path); err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s with another CA's certificate: %s", path, resp.Status)
			}
			want++
		}
	}
	if code, body := get(t, member, base+"/metrics", ""); code != http.StatusOK || !strings.Contains(body, "sediment_http_unauthorized_requests_total") {
		t.Errorf("GET /metrics with the certificate: %d %.200q", code, body)
	}
	if n := counterValue(t, p.s.reg, "sediment_http_unauthorized_requests_total") - before; n != want {
		t.Errorf("%v refusals counted, want %v", n, want)
	}
	p.stop(t)
}
