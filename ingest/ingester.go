package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"sync/atomic"
	"time"

	"github.com/grafana/dskit/services"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/clustertls"
	"github.com/sedimentdb/sediment/internal/logsample"
	"github.com/sedimentdb/sediment/internal/streamlog"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

// Deps is what the ingest role needs from the rest of the process.
type Deps struct {
	Manifest *manifest.Manifest
	View     *manifest.View
	Store    objectstore.Store
	// FS holds the commitlogs; vfs.Default if nil.
	FS vfs.FS
	// JetStream holds the shards' logs with -ingest.log=jetstream.
	JetStream jetstream.JetStream
	// NodeID is the process's ID (<data.dir>/node-id): the node's member
	// and owner name, kept across restarts.
	NodeID string
	// Address is announced to the members, where frontends reach the RPC;
	// empty announces the RPC's listen address, which must then name a
	// host.
	Address string
	// Roles are every role of the process, as its member lists them.
	Roles []string
	// HeartbeatInterval is how often the member is renewed.
	HeartbeatInterval time.Duration
	// L0 tells flushes how full the L0 they write to is, so that they
	// slow down while compaction falls behind; nil never slows them.
	L0 L0Gauge
	// ChunkSize of flush uploads (NodeDeps.ChunkSize).
	ChunkSize int
	// TLS, when set, makes the RPC require mutual TLS with the cluster CA:
	// a peer without a certificate the CA signed is refused.
	TLS *clustertls.Identity

	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Ingester is a running ingest role: this process's ingest node, the
// ranges it owns, the RPC it serves frontends and its member heartbeat.
//
// At start it:
//
//  1. fixes the cluster's token ranges (-ingest.ranges) if no node has yet;
//  2. claims ranges under the range-claim lease: every range no node owns
//     (never given, or released by a node that left), and every range the
//     manifest says this node owns, which a restarted node thus takes back
//     under a new epoch, fencing out any older process of its own. Ranges
//     of other nodes are left to them. A node alone in its cluster, as in
//     the all-in-one mode, so claims every range; the lease keeps two
//     nodes starting at once from both claiming one free range, which
//     would fence the first one out;
//  3. opens the node, which replays its commitlogs and commits what they
//     hold to the ranges it owns, with its SSTables under
//     <-ingest.object-prefix>/<node ID>, since SSTable names are unique
//     only per node; its flushes commit through a ViewCommitter, so that a
//     read merging its memtables with the View's SSTables never misses a
//     flushed write;
//  4. serves the node's writes and memtable reads to frontends (package
//     rpc) on -ingest.rpc-address;
//  5. announces itself, with the RPC address (or -node.address), in the
//     member list, and renews that every heartbeat interval, each time
//     with the oldest write timestamp its memtables hold per table
//     (manifest.Member.Unflushed), compaction's purge bound.
//
// On stop it closes the RPC server, so that no write comes in any more,
// then flushes the node, so that the next start has nothing to replay
// (what a failed flush leaves stays in the commitlog), closes it and
// leaves the member list. A node keeps its ranges across a restart; only
// with -ingest.leave-on-stop, for a node leaving the cluster for good,
// does it release them after a complete flush, for other nodes to claim.
// It never releases them with writes left unflushed, which no other node
// could replay.
type Ingester struct {
	services.Service

	cfg    Config
	deps   Deps
	logger *slog.Logger
	ln     net.Listener
	addr   string // announced to the members

	// Set while starting.
	committer *ManifestCommitter
	node      *Node
	rpc       *rpc.Server
	served    chan error
	beater    *manifest.Beater
	stopBeats context.CancelFunc // ends the beats that starting began
	beaten    chan struct{}      // closed when they have ended
	tm        *takeoverMetrics
	// open is set once the fields above are, for readers on other
	// goroutines (metrics).
	open atomic.Bool
}

const (
	// claimLease serialises the range claims of starting ingest nodes.
	claimLease = "ingest-range-claims"
	// claimLeaseTTL bounds how long a node that died while claiming keeps
	// the others waiting; a claiming node renews it as it goes.
	claimLeaseTTL = 30 * time.Second
	// stopTimeout bounds the stop: the last flush, and leaving.
	stopTimeout = 25 * time.Second
)

// New builds the ingest role. It takes the RPC port at once, so that a
// taken port fails before any range is claimed.
func New(cfg Config, deps Deps) (*Ingester, error) {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.FS == nil {
		deps.FS = vfs.Default
	}
	if cfg.Log.Kind == LogJetStream && deps.JetStream == nil {
		return nil, errors.New("-ingest.log=jetstream: no JetStream")
	}
	if cfg.Log.Kind == LogJetStream && cfg.OwnerLease < 2*deps.HeartbeatInterval {
		return nil, fmt.Errorf("-ingest.owner-lease %v is under two heartbeat intervals (%v): live nodes would be taken over", cfg.OwnerLease, deps.HeartbeatInterval)
	}
	ln, err := net.Listen("tcp", cfg.RPCAddress)
	if err != nil {
		return nil, fmt.Errorf("-ingest.rpc-address: %w", err)
	}
	addr := deps.Address
	if addr == "" {
		host, _, _ := net.SplitHostPort(cfg.RPCAddress) // checked by Validate
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			ln.Close()
			return nil, fmt.Errorf("-ingest.rpc-address %s names no host for the other nodes to reach: set -node.address", cfg.RPCAddress)
		}
		addr = ln.Addr().String()
	}
	g := &Ingester{
		cfg: cfg, deps: deps, ln: ln, addr: addr,
		logger: deps.Logger.With("component", "ingest", "node", deps.NodeID),
		served: make(chan error, 1),
	}
	g.tm = newTakeoverMetrics(deps.Registerer, g)
	g.Service = services.NewBasicService(g.starting, g.running, g.stopping).WithName(IngestRole)
	return g, nil
}

// Node is the ingest node, once started.
func (g *Ingester) Node() *Node { return g.node }

// Committer is the node's manifest committer, once started.
func (g *Ingester) Committer() *ManifestCommitter { return g.committer }

// NodeID is the node's ID, its member and owner name.
func (g *Ingester) NodeID() string { return g.deps.NodeID }

// RPCAddr is the address the RPC listens on.
func (g *Ingester) RPCAddr() string { return g.ln.Addr().String() }

// Ready reports why the node does not serve, nil when it does.
func (g *Ingester) Ready() error {
	if s := g.State(); s != services.Running {
		return fmt.Errorf("ingest node %s", s)
	}
	if err := g.beater.Err(); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

func (g *Ingester) starting(ctx context.Context) (err error) {
	defer func() {
		if err != nil && g.rpc == nil {
			err = errors.Join(err, g.ln.Close())
		}
	}()
	m, id := g.deps.Manifest, g.deps.NodeID
	// Beat from the start: claiming ranges and replaying the log can take
	// longer than the owner lease, and the ranges of a node silent that
	// long are taken over by the others. Until the node is open its
	// member reports no unflushed writes, which turns purging off.
	member := manifest.Member{ID: id, Roles: g.deps.Roles, Addr: g.addr, Shards: g.cfg.Shards}
	var opened atomic.Pointer[Node]
	g.beater = m.NewBeater(g.deps.HeartbeatInterval, func() manifest.Member {
		mem := member
		if n := opened.Load(); n != nil {
			mem.Unflushed = n.UnflushedMember()
		}
		return mem
	}, g.logger)
	if err := g.beater.Beat(ctx); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	beatCtx, stopBeats := context.WithCancel(context.WithoutCancel(ctx))
	g.beaten = make(chan struct{})
	go func() {
		defer close(g.beaten)
		g.beater.Run(beatCtx)
	}()
	g.stopBeats = stopBeats
	defer func() {
		if err != nil {
			stopBeats()
			<-g.beaten
		}
	}()
	if err := m.InitRanges(ctx, g.cfg.Ranges); err != nil {
		return fmt.Errorf("-ingest.ranges: %w", err)
	}
	ranges, err := m.RangeCount(ctx)
	if err != nil {
		return err
	}
	g.committer = NewManifestCommitter(m, g.deps.Store, id)
	claimed, err := g.claimRanges(ctx, ranges)
	if err != nil {
		return fmt.Errorf("claim ranges: %w", err)
	}
	g.logger.Info("token ranges claimed", "owned", len(claimed), "ranges", ranges)

	// Reads merge the memtables with the SSTables a View lists: a flushed
	// memtable may leave the read set only once the View shows its flush.
	// Conditional writes read the SSTables the View lists, through kept
	// readers.
	var flushes FlushCommitter = g.committer
	var tables TableReader = g.committer
	if g.deps.View != nil {
		flushes = NewViewCommitter(g.committer, g.deps.View)
		tables = NewViewReader(g.deps.View, tablestore.NewReaderCache(g.deps.Store, nil, 0))
	}
	ncfg := g.cfg
	ncfg.ObjectPrefix = path.Join(ncfg.ObjectPrefix, id)
	g.node, err = OpenNode(ctx, ncfg, NodeDeps{
		FS:         g.deps.FS,
		Store:      g.deps.Store,
		Committer:  flushes,
		Reader:     tables,
		Registerer: g.deps.Registerer,
		Logger:     g.logger,
		Ranges:     ranges,
		L0:         g.deps.L0,
		ChunkSize:  g.deps.ChunkSize,
		OpenLog:    g.openLog(),
	})
	if err != nil {
		return err
	}
	// Serve before announcing the address, so that it answers once
	// members can see it.
	g.rpc = rpc.NewServer(RPCHandler(g.node), g.rpcOptions())
	go func() { g.served <- g.rpc.Serve(g.ln) }()
	opened.Store(g.node)
	if err := g.beater.Beat(ctx); err != nil {
		return errors.Join(fmt.Errorf("heartbeat: %w", err), g.rpc.Close(), g.node.Close())
	}
	g.open.Store(true)
	g.logger.Info("ingest node open", "shards", g.node.Shards(), "log", g.cfg.Log.Kind, "commitlog", ncfg.Commitlog.Dir, "rpc", g.ln.Addr().String(), "address", g.addr)
	return nil
}

// rpcOptions configures the RPC server: mutual TLS when the cluster has
// certificates, and a log line (sampled: strangers choose how often) and a
// count of every connection refused before its first request.
func (g *Ingester) rpcOptions() rpc.Options {
	refused := promauto.With(g.deps.Registerer).NewCounter(prometheus.CounterOpts{
		Namespace: "sediment", Subsystem: "ingest", Name: "rpc_refused_connections_total",
		Help: "Connections to the ingest RPC closed before their first request: no or a wrong client certificate, a failed TLS handshake, no request in time, or garbage.",
	})
	var sample logsample.Sampler
	opts := rpc.Options{Refused: func(remote net.Addr, err error) {
		refused.Inc()
		sample.Warn(g.logger, "ingest RPC refused a connection", "remote", remote.String(), "tls", g.deps.TLS != nil, "err", err)
	}}
	if g.deps.TLS != nil {
		opts.TLS = g.deps.TLS.Server
	}
	return opts
}

// openLog is NodeDeps.OpenLog: nil for the local commitlog, else a
// streamlog on the node's subject of each shard.
func (g *Ingester) openLog() func(context.Context, uint32, *slog.Logger) (Log, error) {
	if g.cfg.Log.Kind != LogJetStream {
		return nil
	}
	return func(ctx context.Context, shard uint32, logger *slog.Logger) (Log, error) {
		return streamlog.Open(ctx, streamlog.Options{
			JetStream:     g.deps.JetStream,
			Cluster:       g.deps.Manifest.Cluster(),
			Node:          g.deps.NodeID,
			Shard:         shard,
			Replicas:      g.cfg.Log.Replicas,
			AppendTimeout: g.cfg.Log.AppendTimeout,
			Logger:        logger,
		})
	}
}

// running renews the member until the service stops; an RPC server that
// fails on its own fails the service.
func (g *Ingester) running(ctx context.Context) error {
	bgCtx, cancel := context.WithCancel(ctx)
	if g.cfg.Log.Kind == LogJetStream && g.deps.View != nil {
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			g.watchOwners(bgCtx)
		}()
		defer func() { cancel(); <-watched }()
	}
	defer func() {
		cancel()
		g.stopBeats()
		<-g.beaten
	}()
	select {
	case <-ctx.Done():
		return nil
	case err := <-g.served:
		g.served <- err
		return fmt.Errorf("rpc server stopped: %w", err)
	}
}

func (g *Ingester) stopping(error) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	// No more writes come in, so the flush leaves nothing behind;
	// frontends see the node unavailable, which they may retry.
	if err := g.rpc.Close(); err != nil {
		g.logger.Warn("closing the rpc server", "err", err)
	}
	<-g.served
	errs := []error{g.node.Flush(ctx)}
	if errs[0] != nil {
		errs[0] = fmt.Errorf("flush on stop (the commitlog keeps what is left): %w", errs[0])
	}
	errs = append(errs, g.node.Close())
	if g.cfg.LeaveOnStop {
		if errs[0] == nil {
			errs = append(errs, g.releaseRanges(ctx))
		} else {
			errs = append(errs, errors.New("-ingest.leave-on-stop: ranges kept, since writes are left unflushed"))
		}
	}
	return errors.Join(append(errs, g.deps.Manifest.Leave(ctx, g.deps.NodeID))...)
}

// claimRanges claims, under the claim lease, the ranges that are free or
// already the node's, and returns them.
func (g *Ingester) claimRanges(ctx context.Context, n int) ([]int, error) {
	m, id := g.deps.Manifest, g.deps.NodeID
	held, err := g.acquireClaimLease(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := m.ReleaseLease(context.WithoutCancel(ctx), claimLease, id); err != nil {
			g.logger.Warn("releasing the range-claim lease", "err", err)
		}
	}()
	var claimed []int
	for r := range n {
		if time.Since(held) > claimLeaseTTL/2 {
			if _, err := m.AcquireLease(ctx, claimLease, id, claimLeaseTTL); err != nil {
				return nil, err
			}
			held = time.Now()
		}
		o, err := m.Ownership(ctx, r)
		switch {
		case errors.Is(err, manifest.ErrNotFound): // never assigned: free
		case err != nil:
			return nil, err
		case o.Owner != "" && o.Owner != id:
			continue
		}
		if _, err := g.committer.Claim(ctx, r); err != nil {
			return nil, err
		}
		claimed = append(claimed, r)
	}
	return claimed, nil
}

// releaseRanges releases every range the node owns, for a node leaving the
// cluster; a range it fails to release stays the node's.
func (g *Ingester) releaseRanges(ctx context.Context) error {
	owned := g.committer.Owned()
	var errs []error
	for _, r := range owned {
		if err := g.committer.Release(ctx, r); err != nil {
			errs = append(errs, fmt.Errorf("release range %d: %w", r, err))
		}
	}
	g.logger.Info("token ranges released", "released", len(owned)-len(errs), "kept", len(errs))
	return errors.Join(errs...)
}

// acquireClaimLease waits until the node holds the claim lease and returns
// when it took it.
func (g *Ingester) acquireClaimLease(ctx context.Context) (time.Time, error) {
	const wait = 200 * time.Millisecond
	for logged := false; ; {
		now := time.Now()
		_, err := g.deps.Manifest.AcquireLease(ctx, claimLease, g.deps.NodeID, claimLeaseTTL)
		if err == nil {
			return now, nil
		}
		if !errors.Is(err, manifest.ErrLeaseHeld) {
			return time.Time{}, err
		}
		if !logged {
			g.logger.Info("waiting for another node to finish claiming ranges", "err", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(wait):
		}
	}
}
