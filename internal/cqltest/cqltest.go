// Package cqltest starts a whole Sediment in process for tests of the CQL
// layer: an embedded NATS with the manifest and its View, a file bucket, an
// ingest node flushing through the manifest, engine.Local, the executor and
// the CQL server on 127.0.0.1, and connects real drivers to it.
//
//	srv := cqltest.Start(t, cqltest.Options{})
//	s := srv.Session(t, "ks") // a *gocql.Session, keyspace created if missing
//
// Every part stops when the test ends.
package cqltest

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/grafana/dskit/services"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/sedimentdb/sediment/frontend"
	"github.com/sedimentdb/sediment/frontend/cql/exec"
	"github.com/sedimentdb/sediment/frontend/transport"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

// Options tune a test server. The zero value is a small, quick one.
type Options struct {
	// Shards of the ingest node (default 2).
	Shards int
	// MemtableSize per shard (default 4 MiB).
	MemtableSize int64
	// Ranges the ring is cut into (default 4).
	Ranges int
	// Now is the executor's clock (default time.Now).
	Now func() time.Time
	// Frontend adjusts the CQL server's configuration. With the password
	// authenticator the catalog gets the default superuser cassandra
	// (password cassandra), and Cluster's drivers must log in.
	Frontend func(*transport.Config)
	// Executor adjusts the executor's configuration (batch thresholds...).
	Executor func(*exec.Config)
	// Ingest adjusts the ingest node's configuration (memory limits...).
	Ingest func(*ingest.Config)
	// Store is the bucket (default a file bucket in a temporary
	// directory); tests of the bucket path pass a MinIO one.
	Store objectstore.Store
}

// Server is a running in-process Sediment.
type Server struct {
	// Addr is the CQL address, 127.0.0.1:port.
	Addr     string
	Manifest *manifest.Manifest
	View     *manifest.View
	Store    objectstore.Store
	Node     *ingest.Node
	Frontend *frontend.Frontend
	Executor *exec.Executor
	// Auth is the executor's Auth; nil without password authentication.
	Auth *exec.Auth
	// Metrics holds the CQL server's metrics.
	Metrics *prometheus.Registry
	// JetStream is the embedded NATS the manifest lives in, for tests
	// that start more roles (a compactor) on it.
	JetStream jetstream.JetStream
}

// Start starts a server for the test t.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.Shards == 0 {
		o.Shards = 2
	}
	if o.MemtableSize == 0 {
		o.MemtableSize = 4 << 20
	}
	if o.Ranges == 0 {
		o.Ranges = 4
	}
	ctx := context.Background()
	js, _ := manifesttest.JetStream(t)
	store := o.Store
	if store == nil {
		var err error
		if store, err = objectstore.NewFile(vfs.Default, t.TempDir(), nil); err != nil {
			t.Fatal(err)
		}
	}
	m, err := manifest.Open(ctx, js, store, "test", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	view, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(view.Close)
	cfg := ingest.DefaultConfig()
	cfg.Shards = o.Shards
	cfg.MemtableSize = o.MemtableSize
	cfg.MemoryLimit = 4 * o.MemtableSize * int64(o.Shards)
	cfg.FlushAge = time.Hour
	cfg.WriteTimeout = 10 * time.Second
	cfg.Commitlog.Dir = "commitlog"
	cfg.Ranges = o.Ranges
	cfg.RPCAddress = "127.0.0.1:0"
	if o.Ingest != nil {
		o.Ingest(&cfg)
	}
	g, err := ingest.New(cfg, ingest.Deps{
		Manifest:          m,
		View:              view,
		Store:             store,
		FS:                vfs.NewMem(),
		NodeID:            "n1",
		Roles:             []string{ingest.IngestRole, frontend.Role},
		HeartbeatInterval: 10 * time.Second,
		ChunkSize:         64 << 10,
		Registerer:        prometheus.NewRegistry(),
		Logger:            slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := services.StartAndAwaitRunning(ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := services.StopAndAwaitTerminated(ctx, g); err != nil {
			t.Error(err)
		}
	})
	node := g.Node()

	reg := prometheus.NewRegistry()
	var fc frontend.Config
	fc.RegisterFlags(flag.NewFlagSet("frontend", flag.ContinueOnError))
	fc.CQL.ListenAddress = "127.0.0.1:0"
	// No block cache: every read reaches the bucket.
	fc.Cache.MemoryBytes, fc.Cache.DiskBytes = 0, 0
	if o.Frontend != nil {
		o.Frontend(&fc.CQL)
	}
	f, err := frontend.New(fc, frontend.Deps{
		Manifest:          m,
		View:              view,
		Store:             store,
		Node:              node,
		NodeID:            "n1",
		HeartbeatInterval: 10 * time.Second,
		Auth:              func(o *exec.AuthOptions) { o.BcryptCost = bcrypt.MinCost },
		Executor: func(c *exec.Config) {
			c.Now = o.Now
			if o.Executor != nil {
				o.Executor(c)
			}
		},
		Registerer: reg,
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := services.StartAndAwaitRunning(ctx, f); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := services.StopAndAwaitTerminated(ctx, f); err != nil {
			t.Error(err)
		}
	})
	return &Server{
		Addr: f.Addr(), Manifest: m, View: view, Store: store,
		Node: node, Frontend: f, Executor: f.Executor(), Auth: f.Auth(), Metrics: reg, JetStream: js,
	}
}

// Cluster returns a gocql cluster configuration for the server; with
// password authentication it logs in as the default superuser.
func (s *Server) Cluster() *gocql.ClusterConfig {
	host, port, _ := net.SplitHostPort(s.Addr)
	c := gocql.NewCluster(host)
	c.Port, _ = strconv.Atoi(port)
	c.Consistency = gocql.One
	c.Timeout = 20 * time.Second
	c.ConnectTimeout = 10 * time.Second
	c.NumConns = 1
	if s.Auth != nil {
		c.Authenticator = gocql.PasswordAuthenticator{Username: exec.DefaultSuperuser, Password: exec.DefaultSuperuser}
	}
	return c
}

// Session connects gocql to the server. With a keyspace, it is created
// (SimpleStrategy, replication factor 1) unless it exists, and the session
// uses it.
func (s *Server) Session(t testing.TB, keyspace string) *gocql.Session {
	t.Helper()
	c := s.Cluster()
	c.Keyspace = keyspace
	return s.connectTo(t, c)
}

// connectTo connects with c, creating its keyspace first as Session does.
func (s *Server) connectTo(t testing.TB, c *gocql.ClusterConfig) *gocql.Session {
	t.Helper()
	if c.Keyspace != "" {
		admin := s.connect(t, s.Cluster())
		stmt := fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", c.Keyspace)
		if err := admin.Query(stmt).Exec(); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		admin.Close()
	}
	return s.connect(t, c)
}

func (s *Server) connect(t testing.TB, c *gocql.ClusterConfig) *gocql.Session {
	t.Helper()
	sess, err := c.CreateSession()
	if err != nil {
		t.Fatalf("connecting gocql to %s: %v", s.Addr, err)
	}
	t.Cleanup(sess.Close)
	return sess
}

// Exec runs statements on a session and fails the test on the first error.
func Exec(t testing.TB, s *gocql.Session, stmts ...string) {
	t.Helper()
	for _, st := range stmts {
		if err := s.Query(st).Exec(); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
}

// Flush moves every memtable entry into SSTables in the bucket and waits
// until no memtable holds any entry of the table: reads of it then come
// from SSTables only.
func (s *Server) Flush(t testing.TB, keyspace, table string) {
	t.Helper()
	ctx := context.Background()
	tbl := s.View.Table(keyspace, table)
	if tbl == nil {
		t.Fatalf("no table %s.%s", keyspace, table)
	}
	// Truncating a table that holds nothing starts new memtables and
	// queues the others for flush.
	const other storage.TableID = 0xfffffff0
	for i := range s.Node.Shards() {
		if err := s.Node.Shard(i).Truncate(ctx, other); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		it := s.Node.NewIter(storage.TableIDOf(tbl.ID), nil, nil)
		empty := !it.First()
		err := it.Error()
		it.Close()
		if err != nil {
			t.Fatal(err)
		}
		if empty {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("memtables not flushed after 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Startups returns how many connections the server started in protocol
// version v ("v4", "v5"), from its metrics.
func (s *Server) Startups(t testing.TB, v string) int {
	t.Helper()
	mfs, err := s.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sediment_cql_startups_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "version" && l.GetValue() == v {
					return int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return 0
}

// MaxPages bounds the pages a PagedIter reads: far more than any test's
// data needs at any page size.
const MaxPages = 1000

// PagedIter is a gocql iterator that fails its test instead of hanging it
// when paging stops advancing: gocql fetches the next page by itself, so a
// server whose next page starts again at the last row (or sends a paging
// state it sent before) would be read forever.
type PagedIter struct {
	*gocql.Iter
	t    testing.TB
	seen map[string]bool
}

// Paged guards it; use its Scan, MapScan and Close as gocql's.
func Paged(t testing.TB, it *gocql.Iter) *PagedIter {
	return &PagedIter{Iter: it, t: t, seen: map[string]bool{}}
}

// Scan is gocql's Iter.Scan, after checking the next page's state.
func (p *PagedIter) Scan(dest ...any) bool {
	p.t.Helper()
	p.check()
	return p.Iter.Scan(dest...)
}

// MapScan is gocql's Iter.MapScan, after checking the next page's state.
func (p *PagedIter) MapScan(m map[string]any) bool {
	p.t.Helper()
	p.check()
	return p.Iter.MapScan(m)
}

func (p *PagedIter) check() {
	p.t.Helper()
	if !p.Iter.WillSwitchPage() {
		return
	}
	st := string(p.Iter.PageState())
	switch {
	case p.seen[st]:
		p.t.Fatalf("the server sent paging state %x a second time: the pages do not advance", st)
	case len(p.seen) >= MaxPages:
		p.t.Fatalf("more than %d pages: the pages do not advance", MaxPages)
	}
	p.seen[st] = true
}
