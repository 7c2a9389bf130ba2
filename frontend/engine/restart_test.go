package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

// restartEnv runs ingest nodes that a test can stop or crash and reopen on
// what their disks kept, as the sediment binary reopens one: the new
// process claims the node's ranges under a new epoch, replays its
// commitlogs and, serving RPC, announces a new address. The engine is a
// Local over the only node, or a Remote (a frontend) over several.
type restartEnv struct {
	t     testing.TB
	ctx   context.Context
	m     *manifest.Manifest
	view  *manifest.View
	store objectstore.Store
	table uuid.UUID
	nodes []*restartNode
	local *Local  // over nodes[0], if not remote
	rem   *Remote // if remote
}

// restartNode is one ingest node and the disk its processes share.
type restartNode struct {
	id     string
	ranges []int
	fs     *vfs.MemFS
	// The current process.
	gate *crashGate
	node *ingest.Node
	srv  *rpc.Server // if remote
	addr string
}

// newRestartEnv starts one node owning every range under a Local engine,
// or, if remote, two nodes splitting the ranges (clusterOwner) under a
// Remote engine.
func newRestartEnv(t testing.TB, remote bool) *restartEnv {
	t.Helper()
	ctx := context.Background()
	js, _ := manifesttest.JetStream(t)
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, tbl, view := openCatalog(t, ctx, js, store)
	e := &restartEnv{t: t, ctx: ctx, m: m, view: view, store: store, table: tbl}
	if remote {
		for i := range 2 {
			n := &restartNode{id: fmt.Sprintf("n%d", i), fs: vfs.NewMem()}
			for r, o := range clusterOwner {
				if o == i {
					n.ranges = append(n.ranges, r)
				}
			}
			e.nodes = append(e.nodes, n)
		}
		if e.rem, err = NewRemote(RemoteConfig{View: view, Store: store}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.rem.Close() })
	} else {
		n := &restartNode{id: "n0", fs: vfs.NewMem()}
		for r := range testRanges {
			n.ranges = append(n.ranges, r)
		}
		e.nodes = append(e.nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range e.nodes {
			e.stop(n)
		}
	})
	for _, n := range e.nodes {
		e.start(n)
	}
	return e
}

func (e *restartEnv) engine() Engine {
	if e.rem != nil {
		return e.rem
	}
	return e.local
}

// start opens a process of n on its disk.
func (e *restartEnv) start(n *restartNode) {
	t := e.t
	t.Helper()
	mc := ingest.NewManifestCommitter(e.m, e.store, n.id)
	for _, r := range n.ranges {
		if _, err := mc.Claim(e.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	n.gate = &crashGate{}
	cfg := ingest.DefaultConfig()
	cfg.Shards = 2
	cfg.MemtableSize = 64 << 10 // flushes happen by themselves too
	cfg.MemoryLimit = 256 << 10
	cfg.FlushAge = time.Hour
	cfg.WriteTimeout = 10 * time.Second
	cfg.FlushMinBackoff = 5 * time.Millisecond
	cfg.FlushMaxBackoff = 50 * time.Millisecond
	cfg.Commitlog.Dir = "commitlog"
	cfg.Commitlog.SegmentSize = 64 << 10
	cfg.ObjectPrefix = "sst/" + n.id
	node, err := ingest.OpenNode(e.ctx, cfg, ingest.NodeDeps{
		FS:         n.fs,
		Store:      gatedStore{Store: e.store, gate: n.gate},
		Committer:  ingest.NewViewCommitter(gatedCommitter{FlushCommitter: mc, gate: n.gate}, e.view),
		Reader:     mc,
		Registerer: prometheus.NewRegistry(),
		ChunkSize:  16 << 10,
		Ranges:     testRanges,
	})
	if err != nil {
		t.Fatalf("reopen %s: %v", n.id, err)
	}
	n.node = node
	if e.rem == nil {
		if e.local, err = NewLocal(LocalConfig{Node: node, View: e.view, Store: e.store}); err != nil {
			t.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.srv = rpc.NewServer(ingest.RPCHandler(node), rpc.Options{})
	go n.srv.Serve(ln)
	n.addr = ln.Addr().String()
	if err := e.m.Heartbeat(e.ctx, manifest.Member{ID: n.id, Roles: []string{"ingest"}, Addr: n.addr, Shards: node.Shards()}); err != nil {
		t.Fatal(err)
	}
	// The frontend's View must know the new address before writes go on,
	// or they fail retriably at the old one.
	wctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if err := e.view.WaitFor(wctx, func(v *manifest.View) bool {
		if !slices.ContainsFunc(v.Members(), func(m manifest.Member) bool { return m.ID == n.id && m.Addr == n.addr }) {
			return false
		}
		for _, r := range n.ranges {
			if o, ok := v.Ownership(r); !ok || o.Owner != n.id {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("the View does not show %s at %s: %v", n.id, n.addr, err)
	}
}

// stop ends n's process as a clean shutdown does, without a flush.
func (e *restartEnv) stop(n *restartNode) {
	if n.srv != nil {
		n.srv.Close()
		n.srv = nil
	}
	if n.node != nil {
		n.node.Close()
		n.node = nil
	}
}

// restart stops n, flushing first if flush is set, as the binary's stop
// does, and reopens it.
func (e *restartEnv) restart(n *restartNode, flush bool) {
	e.t.Helper()
	if flush {
		if err := n.node.Flush(e.ctx); err != nil {
			e.t.Fatalf("flush %s: %v", n.id, err)
		}
	}
	e.stop(n)
	e.start(n)
}

// crash pulls n's plug: the disk keeps only what was synced, the process
// changes nothing in the bucket or the manifest from then on, and a new
// process opens on the disk.
func (e *restartEnv) crash(n *restartNode) {
	e.t.Helper()
	n.fs = n.gate.crash(n.fs)
	e.stop(n) // the abandoned process
	e.start(n)
}

// flush flushes every node.
func (e *restartEnv) flush() {
	e.t.Helper()
	for _, n := range e.nodes {
		if err := n.node.Flush(e.ctx); err != nil {
			e.t.Fatalf("flush %s: %v", n.id, err)
		}
	}
}

var errCrashed = errors.New("test: process crashed")

// crashGate stops a process's effects outside its disk at the moment of
// its crash: every gated step either completes before the crash or fails.
type crashGate struct {
	mu      sync.RWMutex
	crashed bool
}

// do runs f unless the process crashed.
func (g *crashGate) do(f func() error) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.crashed {
		return errCrashed
	}
	return f()
}

// crash waits for the gated steps under way, then fails every later one,
// and returns the durable state of fs at that moment.
func (g *crashGate) crash(fs *vfs.MemFS) *vfs.MemFS {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.crashed = true
	return fs.CrashClone()
}

// gatedCommitter records no flush after its process crashed.
type gatedCommitter struct {
	ingest.FlushCommitter
	gate *crashGate
}

func (c gatedCommitter) Commit(ctx context.Context, f ingest.Flush) error {
	return c.gate.do(func() error { return c.FlushCommitter.Commit(ctx, f) })
}

// gatedStore changes no object after its process crashed.
type gatedStore struct {
	objectstore.Store
	gate *crashGate
}

var _ objectstore.Store = gatedStore{}

func (s gatedStore) Put(ctx context.Context, key string, data []byte) (etag string, err error) {
	err = s.gate.do(func() error { etag, err = s.Store.Put(ctx, key, data); return err })
	return etag, err
}

func (s gatedStore) PutIf(ctx context.Context, key string, data []byte, cond objectstore.Condition) (etag string, err error) {
	err = s.gate.do(func() error { etag, err = s.Store.PutIf(ctx, key, data, cond); return err })
	return etag, err
}

func (s gatedStore) Delete(ctx context.Context, key string) error {
	return s.gate.do(func() error { return s.Store.Delete(ctx, key) })
}

func (s gatedStore) NewWriter(ctx context.Context, key string) (objectstore.Writer, error) {
	var w objectstore.Writer
	err := s.gate.do(func() (err error) { w, err = s.Store.NewWriter(ctx, key); return err })
	if err != nil {
		return nil, err
	}
	return gatedWriter{Writer: w, gate: s.gate}, nil
}

// gatedWriter makes nothing visible after its process crashed.
type gatedWriter struct {
	objectstore.Writer
	gate *crashGate
}

func (w gatedWriter) Close() error {
	err := w.gate.do(w.Writer.Close)
	if errors.Is(err, errCrashed) {
		w.Writer.Abort()
	}
	return err
}
