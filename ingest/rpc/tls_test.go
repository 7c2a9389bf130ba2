package rpc_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/clustertls"
	"github.com/sedimentdb/sediment/internal/clustertls/clustertlstest"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// counting is a Handler decorator that counts the requests that reach the
// handler.
type counting struct {
	rpc.Handler
	calls atomic.Int64
}

func (c *counting) Apply(ctx context.Context, m *storage.Mutation) error {
	c.calls.Add(1)
	return c.Handler.Apply(ctx, m)
}

func (c *counting) Scan(ctx context.Context, r rpc.ScanRequest) (*rpc.Page, error) {
	c.calls.Add(1)
	return c.Handler.Scan(ctx, r)
}

func (c *counting) ApplyIf(ctx context.Context, m *storage.Mutation, want rpc.Digest) (bool, error) {
	c.calls.Add(1)
	return c.Handler.ApplyIf(ctx, m, want)
}

func (c *counting) Truncate(ctx context.Context, table storage.TableID) error {
	c.calls.Add(1)
	return c.Handler.Truncate(ctx, table)
}

func (c *counting) Flush(ctx context.Context) error {
	c.calls.Add(1)
	return c.Handler.Flush(ctx)
}

func loadIdentity(t *testing.T, cfg clustertls.Config) *clustertls.Identity {
	t.Helper()
	id, err := clustertls.Load(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// refusals counts the server's refused connections.
type refusals struct{ n atomic.Int64 }

func (r *refusals) refused(net.Addr, error) { r.n.Add(1) }

// await waits until at least want refusals were counted: the server
// counts a refusal after the client has seen its connection fail.
func (r *refusals) await(t *testing.T, want int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for r.n.Load() < want {
		if ctx.Err() != nil {
			t.Fatalf("%d refusals counted, want %d", r.n.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTLSRefusesStrangers serves a real node with mutual TLS and attacks it
// as issue 16 did: a plain client, a client whose certificate another CA
// signed, and a client that trusts the server but has no certificate. Each
// of scan, apply, applyif, truncate and flush fails for them without
// reaching the node, every refusal is counted, and a member of the cluster
// reads back what it wrote.
func TestTLSRefusesStrangers(t *testing.T) {
	dir := t.TempDir()
	ca := clustertlstest.NewCA(t, "cluster")
	server := loadIdentity(t, ca.WriteFiles(t, dir, "server"))
	member := loadIdentity(t, ca.WriteFiles(t, dir, "member"))
	other := loadIdentity(t, clustertlstest.NewCA(t, "other").WriteFiles(t, dir, "other"))

	node := openNode(t, vfs.NewMem(), "log", 1)
	h := &counting{Handler: ingest.RPCHandler(node)}
	var ref refusals
	addr, _ := serve(t, h, rpc.Options{TLS: server.Server, Refused: ref.refused})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	good := dial(t, addr, rpc.Options{TLS: member.Client})
	if err := good.Apply(ctx, rowMutation(1, "secret", 0, 1, "v")); err != nil {
		t.Fatalf("member's apply: %v", err)
	}
	p, err := good.Scan(ctx, rpc.ScanRequest{Table: 1})
	if err != nil || len(p.Entries) != 1 || !bytes.Equal(p.Entries[0].Value, rowValue(1, "v")) {
		t.Fatalf("member's scan: %+v, %v", p, err)
	}
	memberCalls := h.calls.Load()

	noCert := func() *tls.Config {
		c := member.Client()
		c.Certificates = nil
		return c
	}
	strangers := map[string]func() *tls.Config{
		"plain":        nil,
		"other CA":     other.Client,
		"without cert": noCert,
	}
	for name, cfg := range strangers {
		t.Run(name, func(t *testing.T) {
			before := ref.n.Load()
			calls := map[string]func(c *rpc.Client) error{
				"scan": func(c *rpc.Client) error {
					_, err := c.Scan(ctx, rpc.ScanRequest{Table: 1})
					return err
				},
				"apply": func(c *rpc.Client) error { return c.Apply(ctx, rowMutation(1, "copied", 0, 2, "x")) },
				"applyif": func(c *rpc.Client) error {
					_, err := c.ApplyIf(ctx, rowMutation(1, "copied", 0, 2, "x"), rpc.Digest{})
					return err
				},
				"truncate": func(c *rpc.Client) error { return c.Truncate(ctx, 1) },
				"flush":    func(c *rpc.Client) error { return c.Flush(ctx) },
			}
			for op, call := range calls {
				// A new client per request: each is a new connection
				// to refuse.
				c := rpc.Dial(addr, rpc.Options{Conns: 1, TLS: cfg})
				err := call(c)
				c.Close()
				if err == nil {
					t.Errorf("%s succeeded", op)
				}
			}
			if n := h.calls.Load(); n != memberCalls {
				t.Errorf("%d requests reached the node", n-memberCalls)
			}
			ref.await(t, before+int64(len(calls)))
		})
	}
	p, err = good.Scan(ctx, rpc.ScanRequest{Table: 1})
	if err != nil || len(p.Entries) != 1 {
		t.Fatalf("after the attacks: %+v, %v", p, err)
	}
}

// TestSilentConnectionClosed opens connections that never start a TLS
// handshake, or never send a request on plain TCP: the server closes them
// once the handshake timeout passes, and counts them as refused.
func TestSilentConnectionClosed(t *testing.T) {
	ca := clustertlstest.NewCA(t, "cluster")
	server := loadIdentity(t, ca.WriteFiles(t, t.TempDir(), "server"))
	for name, cfg := range map[string]func() *tls.Config{"tls": server.Server, "plain": nil} {
		t.Run(name, func(t *testing.T) {
			var ref refusals
			addr, _ := serve(t, accepting{}, rpc.Options{TLS: cfg, HandshakeTimeout: 50 * time.Millisecond, Refused: ref.refused})
			const silent = 20
			for range silent {
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				// The bound only keeps a broken server from hanging the
				// test; the server closes well before it.
				nc.SetReadDeadline(time.Now().Add(time.Minute))
				if _, err := nc.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("read from a silent connection: %v, want it closed by the server", err)
				}
			}
			ref.await(t, silent)
		})
	}
}

// accepting answers every request with success.
type accepting struct{}

func (accepting) Apply(context.Context, *storage.Mutation) error { return nil }
func (accepting) Scan(context.Context, rpc.ScanRequest) (*rpc.Page, error) {
	return &rpc.Page{}, nil
}
func (accepting) ApplyIf(context.Context, *storage.Mutation, rpc.Digest) (bool, error) {
	return true, nil
}
func (accepting) Truncate(context.Context, storage.TableID) error { return nil }
func (accepting) Flush(context.Context) error                     { return nil }

// replaceFile writes data to name atomically, as a rotation should.
func replaceFile(t *testing.T, name string, data []byte) {
	t.Helper()
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.Fatal(err)
	}
}

// TestTLSRotationUnderLoad rotates the CA and every certificate of a server
// and its clients while clients keep opening new connections and writing:
// first both CAs are trusted, then the certificates the new CA signed are
// put in place, then the old CA is dropped. No request fails, and at the
// end a certificate of the old CA is refused, so the files were reloaded.
func TestTLSRotationUnderLoad(t *testing.T) {
	dir := t.TempDir()
	oldCA, newCA := clustertlstest.NewCA(t, "old"), clustertlstest.NewCA(t, "new")
	srvFiles, cliFiles := oldCA.WriteFiles(t, dir, "server"), oldCA.WriteFiles(t, dir, "client")
	server, client := loadIdentity(t, srvFiles), loadIdentity(t, cliFiles)
	stale := loadIdentity(t, oldCA.WriteFiles(t, dir, "stale"))

	node := openNode(t, vfs.NewMem(), "log", 1)
	var ref refusals
	addr, _ := serve(t, ingest.RPCHandler(node), rpc.Options{TLS: server.Server, Refused: ref.refused})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ok atomic.Int64
	var failed []error
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c := rpc.Dial(addr, rpc.Options{Conns: 1, TLS: client.Client})
				err := c.Apply(ctx, rowMutation(1, pk(w*1_000_000+i), 0, 1, "v"))
				c.Close()
				if err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
					return
				}
				ok.Add(1)
			}
		})
	}
	// progress waits until the writers have made more new connections, so
	// that each step of the rotation is exercised.
	progress := func(step string) {
		t.Helper()
		for want := ok.Load() + 20; ok.Load() < want; {
			mu.Lock()
			n := len(failed)
			mu.Unlock()
			if n > 0 || ctx.Err() != nil {
				close(stop)
				wg.Wait()
				t.Fatalf("%s: %v (ctx %v)", step, failed, ctx.Err())
			}
			time.Sleep(time.Millisecond)
		}
	}
	progress("before")
	bundle := append(append([]byte{}, oldCA.PEM()...), newCA.PEM()...)
	replaceFile(t, srvFiles.CAFile, bundle)
	replaceFile(t, cliFiles.CAFile, bundle)
	progress("both CAs trusted")
	for _, f := range []clustertls.Config{srvFiles, cliFiles} {
		certPEM, keyPEM := newCA.Issue(t, filepath.Base(f.CertFile))
		replaceFile(t, f.KeyFile, keyPEM)
		progress("key of " + f.CertFile + " replaced")
		replaceFile(t, f.CertFile, certPEM)
		progress("certificate " + f.CertFile + " replaced")
	}
	replaceFile(t, srvFiles.CAFile, newCA.PEM())
	replaceFile(t, cliFiles.CAFile, newCA.PEM())
	progress("old CA dropped")
	close(stop)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("requests failed during the rotation: %v", failed)
	}
	if n := ref.n.Load(); n != 0 {
		t.Fatalf("%d connections refused during the rotation", n)
	}

	c := dial(t, addr, rpc.Options{Conns: 1, TLS: stale.Client})
	if err := c.Apply(ctx, rowMutation(1, "stale", 0, 1, "v")); err == nil {
		t.Fatal("a certificate of the dropped CA is still accepted")
	}
	ref.await(t, 1)
}
