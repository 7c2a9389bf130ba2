package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// portFree reports whether nothing listens on 127.0.0.1:port.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// logBuffer collects the log of a run; the run writes while the test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is one run of sediment in the test process.
type process struct {
	dataDir            string
	httpPort, natsPort int
	log                *logBuffer
	s                  *Sediment
	cancel             context.CancelFunc
	done               chan error
}

// startProcess runs sediment on dataDir with free ports for HTTP and the
// embedded NATS, plus extra flags.
func startProcess(t *testing.T, dataDir string, extra ...string) *process {
	t.Helper()
	p := &process{dataDir: dataDir, httpPort: freePort(t), natsPort: freePort(t), log: &logBuffer{}, done: make(chan error, 1)}
	args := append([]string{
		"-data.dir=" + dataDir,
		fmt.Sprintf("-http.listen-address=127.0.0.1:%d", p.httpPort),
		fmt.Sprintf("-manifest.embedded-port=%d", p.natsPort),
		"-ingest.rpc-address=127.0.0.1:0",
		"-cql.listen-address=127.0.0.1:0",
	}, extra...)
	var cfg Config
	if err := cfg.Load(args, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	logger := slog.New(slog.NewTextHandler(p.log, nil))
	p.s = newSediment(&cfg, logger)
	go func() { p.done <- p.s.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-p.done // returns at once if a test already waited
	})
	return p
}

// natsFlags are the flags with which another process joins p's embedded
// NATS, with the password it keeps under its data directory.
func (p *process) natsFlags() []string {
	return []string{
		fmt.Sprintf("-manifest.nats-url=nats://127.0.0.1:%d", p.natsPort),
		"-manifest.nats-user=" + manifest.EmbeddedUser,
		"-manifest.nats-password-file=" + manifest.EmbeddedPasswordFile(filepath.Join(p.dataDir, "nats")),
	}
}

// waitReady polls /ready until it answers 200, or fails the test if the
// process exits or does not get ready in time.
func (p *process) waitReady(t *testing.T) {
	t.Helper()
	p.waitReadyVia(t, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/ready", p.httpPort), "")
}

// waitReadyVia is waitReady asking url with client and the bearer token
// (none if empty).
func (p *process) waitReadyVia(t *testing.T, client *http.Client, url, token string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("sediment exited before ready: %v\n%s", err, p.log)
		default:
		}
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("not ready after 30s, last /ready: %s\n%s", last, p.log)
}

// stop cancels the run and checks that it stops cleanly, releasing its ports.
func (p *process) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("run returned %v\n%s", err, p.log)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not stop\n%s", p.log)
	}
	if !strings.Contains(p.log.String(), "sediment stopped cleanly") {
		t.Fatalf("no clean stop in the log:\n%s", p.log)
	}
	for _, port := range []int{p.httpPort, p.natsPort} {
		if !portFree(port) {
			t.Fatalf("port %d still in use after stop", port)
		}
	}
	if p.s.ingester != nil {
		if ln, err := net.Listen("tcp", p.s.ingester.RPCAddr()); err != nil {
			t.Fatalf("rpc address %s still in use after stop: %v", p.s.ingester.RPCAddr(), err)
		} else {
			ln.Close()
		}
	}
}

// openManifest opens the catalog the way another node would: through the
// process's embedded NATS and its bucket directory.
func openManifest(t *testing.T, p *process, dataDir string) (*manifest.Manifest, jetstream.JetStream) {
	t.Helper()
	pw, err := os.ReadFile(manifest.EmbeddedPasswordFile(filepath.Join(p.dataDir, "nats")))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", p.natsPort), nats.UserInfo(manifest.EmbeddedUser, strings.TrimSpace(string(pw))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := objectstore.NewFile(vfs.Default, filepath.Join(dataDir, "objects"), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Open(context.Background(), js, store, "sediment", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m, js
}

func TestRunAllInOne(t *testing.T) {
	dataDir := t.TempDir()
	ctx := context.Background()

	p := startProcess(t, dataDir)
	p.waitReady(t)
	m, js := openManifest(t, p, dataDir)
	var buckets []string
	for name := range js.KeyValueStoreNames(ctx).Name() {
		buckets = append(buckets, name)
	}
	slices.Sort(buckets)
	want := []string{"sediment_leases", "sediment_members", "sediment_ownership", "sediment_roles", "sediment_schema", "sediment_sstables"}
	if !slices.Equal(buckets, want) {
		t.Fatalf("KV buckets %v, want %v", buckets, want)
	}
	if err := m.CreateKeyspace(ctx, "persisted", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, true); err != nil {
		t.Fatal(err)
	}
	log := p.log.String()
	for _, where := range []string{
		"data_dir=" + dataDir,
		"location=" + filepath.Join(dataDir, "objects"),
		fmt.Sprintf("address=127.0.0.1:%d", p.natsPort),
		"dir=" + filepath.Join(dataDir, "nats"),
		fmt.Sprintf("address=http://127.0.0.1:%d", p.httpPort),
	} {
		if !strings.Contains(log, where) {
			t.Errorf("the start log does not say %s:\n%s", where, log)
		}
	}
	pw, err := os.ReadFile(manifest.EmbeddedPasswordFile(filepath.Join(dataDir, "nats")))
	if err != nil || len(strings.TrimSpace(string(pw))) == 0 {
		t.Fatalf("embedded NATS password: %q %v", pw, err)
	}
	if strings.Contains(log, strings.TrimSpace(string(pw))) {
		t.Errorf("the log shows the embedded NATS password:\n%s", log)
	}
	p.stop(t)

	// A second start on the same data directory finds the catalog.
	p2 := startProcess(t, dataDir, "-target=ingest")
	p2.waitReady(t)
	m2, _ := openManifest(t, p2, dataDir)
	ks, err := m2.Keyspace(ctx, "persisted")
	if err != nil || ks.Name != "persisted" {
		t.Fatalf("keyspace after restart: %v, %v", ks, err)
	}
	p2.stop(t)
}

func TestRunFailsOnUnreachableNATS(t *testing.T) {
	dataDir := t.TempDir()
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	p := startProcess(t, dataDir, "-manifest.nats-url="+natsURL, "-manifest.connect-timeout=2s")
	var err error
	select {
	case err = <-p.done:
		p.done <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not fail\n%s", p.log)
	}
	if err == nil || !strings.Contains(err.Error(), "start nats") || !strings.Contains(err.Error(), natsURL) {
		t.Fatalf("run = %v, want an error naming the NATS module and URL", err)
	}
	if !portFree(p.httpPort) {
		t.Fatal("the HTTP server still listens after a failed start")
	}
	if strings.Contains(p.log.String(), "embedded NATS started") {
		t.Fatalf("an embedded NATS started although -manifest.nats-url is set:\n%s", p.log)
	}
}
