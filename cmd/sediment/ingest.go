package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"time"

	"github.com/grafana/dskit/services"

	"github.com/sedimentdb/sediment/compactor"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
)

// The ingest module runs this process's ingest node. At start it:
//
//  1. reads the node's ID from <data.dir>/node-id (created on the first
//     start), so that a restart comes back as the same member and owner;
//  2. fixes the cluster's token ranges (-ingest.ranges) if no node has yet;
//  3. claims ranges under the range-claim lease: every range no node owns
//     (never given, or released by a node that left), and every range the
//     manifest says this node owns, which a restarted node thus takes back
//     under a new epoch, fencing out any older process of its own. Ranges of other nodes are left to them. A
//     node alone in its cluster, as in the all-in-one mode, so claims every
//     range; the lease keeps two nodes starting at once from both claiming
//     one free range, which would fence the first one out;
//  4. opens the node, which replays its commitlogs and commits what they
//     hold to the ranges it owns, with its SSTables under
//     <-ingest.object-prefix>/<node ID>, since SSTable names are unique only
//     per node;
//  5. serves the node's writes and memtable reads to frontends (package rpc)
//     on -ingest.rpc-address; the node's flushes commit through an
//     ingest.ViewCommitter, so that a read merging its memtables with the
//     View's SSTables never misses a flushed write;
//  6. announces itself, with the RPC address (or -node.address), in the
//     member list and renews that every -node.heartbeat-interval, each time
//     with the oldest write timestamp its memtables hold per table
//     (manifest.Member.Unflushed), compaction's purge bound.
//
// Its flushes ask an l0Gauge over the View how deep their L0 is, and slow
// down or wait while compaction falls behind (-ingest.flush-delay,
// -ingest.flush-hold).
//
// On stop it closes the RPC server, so that no write comes in any more,
// then flushes the node, within the stop's deadline, so that the next
// start has nothing to replay (what a failed flush leaves stays in the
// commitlog), closes it and leaves the member list. A node keeps its ranges
// across a restart; only with -ingest.leave-on-stop, for a node leaving the
// cluster for good, does it release them after a complete flush, for other
// nodes to claim. It never releases them with writes left unflushed, which
// no other node could replay.

const (
	// claimLease serialises the range claims of starting ingest nodes.
	claimLease = "ingest-range-claims"
	// claimLeaseTTL bounds how long a node that died while claiming keeps
	// the others waiting; a claiming node renews it as it goes.
	claimLeaseTTL = 30 * time.Second
)

// initIngest runs the ingest node as the comment above describes.
func (s *Sediment) initIngest(ctx context.Context) (services.Service, error) {
	cfg := s.cfg.Ingest
	// Listen first, so that a taken port stops the start before any range
	// is claimed.
	ln, err := net.Listen("tcp", cfg.RPCAddress)
	if err != nil {
		return nil, fmt.Errorf("-ingest.rpc-address: %w", err)
	}
	served := false
	defer func() {
		if !served {
			ln.Close()
		}
	}()
	addr := s.cfg.Node.Address
	if addr == "" {
		host, _, _ := net.SplitHostPort(cfg.RPCAddress) // checked by Validate
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			return nil, fmt.Errorf("-ingest.rpc-address %s names no host for the other nodes to reach: set -node.address", cfg.RPCAddress)
		}
		addr = ln.Addr().String()
	}
	id, err := loadNodeID(vfs.Default, s.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	m := s.manifest
	if err := m.InitRanges(ctx, cfg.Ranges); err != nil {
		return nil, fmt.Errorf("-ingest.ranges: %w", err)
	}
	ranges, err := m.RangeCount(ctx)
	if err != nil {
		return nil, err
	}
	committer := ingest.NewManifestCommitter(m, s.store, id)
	claimed, err := s.claimRanges(ctx, committer, id, ranges)
	if err != nil {
		return nil, fmt.Errorf("claim ranges: %w", err)
	}
	logger := s.logger.With("component", "ingest", "node", id)
	logger.Info("token ranges claimed", "owned", len(claimed), "ranges", ranges)

	// Reads merge the memtables with the SSTables a View lists: a flushed
	// memtable may leave the read set only once the View shows its flush.
	// Conditional writes read the SSTables the View lists, through kept
	// readers.
	var flushes ingest.FlushCommitter = committer
	var tables ingest.TableReader = committer
	var l0 ingest.L0Gauge // flushes slow down as compaction falls behind
	if s.view != nil {
		flushes = ingest.NewViewCommitter(committer, s.view)
		tables = ingest.NewViewReader(s.view, tablestore.NewReaderCache(s.store, nil, 0))
		l0 = compactor.NewL0Gauge(s.view)
	}
	ncfg := cfg.Config
	ncfg.ObjectPrefix = path.Join(ncfg.ObjectPrefix, id)
	node, err := ingest.OpenNode(ctx, ncfg, ingest.Deps{
		Store:      s.store,
		Committer:  flushes,
		Reader:     tables,
		Registerer: s.reg,
		Logger:     logger,
		Ranges:     ranges,
		L0:         l0,
	})
	if err != nil {
		return nil, err
	}
	// Serve before announcing the address, so that it answers once
	// members can see it.
	srv := rpc.NewServer(ingest.RPCHandler(node), rpc.Options{})
	serving := make(chan struct{})
	var serveErr error
	go func() {
		defer close(serving)
		serveErr = srv.Serve(ln)
	}()
	served = true
	roles, _ := s.cfg.Roles() // checked by Validate
	member := manifest.Member{ID: id, Roles: roles, Addr: addr, Shards: node.Shards(), Unflushed: node.UnflushedMember()}
	if err := m.Heartbeat(ctx, member); err != nil {
		return nil, errors.Join(fmt.Errorf("heartbeat: %w", err), srv.Close(), node.Close())
	}
	logger.Info("ingest node open", "shards", node.Shards(), "commitlog", ncfg.Commitlog.Dir, "rpc", ln.Addr().String(), "address", addr)

	// Before the heartbeat loop, which reads the node's unflushed writes.
	s.nodeID, s.ingest, s.committer, s.rpcAddr = id, node, committer, ln.Addr().String()
	hbCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	beater := m.NewBeater(s.cfg.Node.HeartbeatInterval, func() manifest.Member {
		member.Unflushed = node.UnflushedMember()
		return member
	}, logger)
	done := make(chan struct{})
	go func() {
		defer close(done)
		beater.Run(hbCtx)
	}()
	ready := func() error {
		select {
		case <-serving:
			return fmt.Errorf("rpc server stopped: %w", serveErr)
		default:
		}
		if err := beater.Err(); err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
		return nil
	}
	return newSimple(ready, func() error {
		ctx, cancelStop := context.WithTimeout(context.Background(), stopTimeout)
		defer cancelStop()
		cancel()
		<-done
		// No more writes come in, so the flush leaves nothing behind;
		// frontends see the node unavailable, which they may retry.
		if err := srv.Close(); err != nil {
			logger.Warn("closing the rpc server", "err", err)
		}
		<-serving
		errs := []error{node.Flush(ctx)}
		if errs[0] != nil {
			errs[0] = fmt.Errorf("flush on stop (the commitlog keeps what is left): %w", errs[0])
		}
		errs = append(errs, node.Close())
		if cfg.LeaveOnStop {
			if errs[0] == nil {
				errs = append(errs, releaseRanges(ctx, committer, logger))
			} else {
				errs = append(errs, errors.New("-ingest.leave-on-stop: ranges kept, since writes are left unflushed"))
			}
		}
		return errors.Join(append(errs, m.Leave(ctx, id))...)
	}), nil
}

// stopTimeout bounds the ingest node's stop: its last flush, and leaving.
const stopTimeout = 25 * time.Second

// claimRanges claims, under the claim lease, the ranges that are free or
// already the node's, and returns them.
func (s *Sediment) claimRanges(ctx context.Context, c *ingest.ManifestCommitter, id string, n int) ([]int, error) {
	m := s.manifest
	held, err := s.acquireClaimLease(ctx, id)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := m.ReleaseLease(context.WithoutCancel(ctx), claimLease, id); err != nil {
			s.logger.Warn("releasing the range-claim lease", "err", err)
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
		if _, err := c.Claim(ctx, r); err != nil {
			return nil, err
		}
		claimed = append(claimed, r)
	}
	return claimed, nil
}

// releaseRanges releases every range the node owns, for a node leaving the
// cluster; a range it fails to release stays the node's.
func releaseRanges(ctx context.Context, c *ingest.ManifestCommitter, logger *slog.Logger) error {
	owned := c.Owned()
	var errs []error
	for _, r := range owned {
		if err := c.Release(ctx, r); err != nil {
			errs = append(errs, fmt.Errorf("release range %d: %w", r, err))
		}
	}
	logger.Info("token ranges released", "released", len(owned)-len(errs), "kept", len(errs))
	return errors.Join(errs...)
}

// acquireClaimLease waits until the node holds the claim lease and returns
// when it took it.
func (s *Sediment) acquireClaimLease(ctx context.Context, id string) (time.Time, error) {
	const wait = 200 * time.Millisecond
	for logged := false; ; {
		now := time.Now()
		_, err := s.manifest.AcquireLease(ctx, claimLease, id, claimLeaseTTL)
		if err == nil {
			return now, nil
		}
		if !errors.Is(err, manifest.ErrLeaseHeld) {
			return time.Time{}, err
		}
		if !logged {
			s.logger.Info("waiting for another node to finish claiming ranges", "err", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(wait):
		}
	}
}
