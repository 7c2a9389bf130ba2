package main

// `admin getendpoints` and `admin removenode`: nodetool's questions about
// which node holds a key, and its way to forget a dead node.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/status"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/manifest"
)

// EndpointsReport is the result of `admin getendpoints`: where a partition
// key lives.
type EndpointsReport struct {
	Table      string `json:"table"`
	Key        string `json:"key"`
	Token      int64  `json:"token"`
	Range      int    `json:"range"`
	FirstToken int64  `json:"first_token"`
	LastToken  int64  `json:"last_token"`
	// Owner is the ingest node that holds the range's unflushed writes
	// ("" when unowned); its SSTables are in the bucket, readable by
	// every frontend.
	Owner     string `json:"owner"`
	OwnerAddr string `json:"owner_addr"`
	Epoch     uint64 `json:"epoch"`
	Healthy   bool   `json:"healthy"`
}

// partitionKey serializes key, the text form of table t's partition key,
// as nodetool getendpoints reads it: each component as Cassandra's
// fromString parses it (values.Parse), components of a composite key
// separated by ':'.
func partitionKey(t *manifest.Table, key string) ([]byte, error) {
	parts := []string{key}
	if len(t.PartitionKey) > 1 {
		parts = strings.Split(key, ":")
		if len(parts) != len(t.PartitionKey) {
			return nil, fmt.Errorf("the partition key of %s.%s has %d components; give them separated by ':' (%d given)", t.Keyspace, t.Name, len(t.PartitionKey), len(parts))
		}
	}
	comps := make([][]byte, len(parts))
	for i, id := range t.PartitionKey {
		c := t.Columns[slices.IndexFunc(t.Columns, func(c manifest.Column) bool { return c.ID == id })]
		typ, err := cqltype.Parse(c.Type, nil)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		if comps[i], err = values.Parse(typ, parts[i]); err != nil {
			return nil, fmt.Errorf("%q is not a %s for column %s: %w", parts[i], c.Type, c.Name, err)
		}
	}
	if len(comps) == 1 {
		return comps[0], nil
	}
	return keys.ComposePartitionKey(comps)
}

func adminGetEndpoints(ctx context.Context, a *admin, args []string) (report, error) {
	if len(args) != 2 {
		return nil, errors.New("want a table and a partition key: getendpoints <keyspace.table> <key> (composite keys as a:b)")
	}
	ks, name, ok := strings.Cut(args[0], ".")
	if !ok {
		return nil, fmt.Errorf("%q is not keyspace.table", args[0])
	}
	m, s, err := a.openSchema(ctx)
	if err != nil {
		return nil, err
	}
	t, ok := s.Table(ks, name)
	if !ok {
		return nil, fmt.Errorf("no table %q ('sediment admin tables' lists them)", args[0])
	}
	pk, err := partitionKey(t, args[1])
	if err != nil {
		return nil, err
	}
	n, err := m.RangeCount(ctx)
	if errors.Is(err, manifest.ErrNotFound) {
		return nil, errors.New("the cluster has no token ranges yet: start an ingest node")
	}
	if err != nil {
		return nil, err
	}
	rep := &EndpointsReport{Table: args[0], Key: args[1], Token: token.Murmur3(pk)}
	rep.Range = manifest.RangeOf(rep.Token, n)
	rep.FirstToken, rep.LastToken = manifest.RangeBounds(rep.Range, n)
	o, err := m.Ownership(ctx, rep.Range)
	if err != nil && !errors.Is(err, manifest.ErrNotFound) {
		return nil, err
	}
	rep.Owner, rep.Epoch = o.Owner, o.Epoch
	if rep.Owner != "" {
		mems, err := m.Members(ctx)
		if err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(mems, func(mem manifest.Member) bool { return mem.ID == rep.Owner }); i >= 0 {
			rep.OwnerAddr = mems[i].Addr
			rep.Healthy = mems[i].Live(a.now(), a.cfg.MaxAge)
		}
	}
	return rep, nil
}

func (r *EndpointsReport) text(w io.Writer) error {
	owner, health := r.Owner, "healthy"
	switch {
	case owner == "":
		owner, health = "(none)", "UNOWNED"
	case r.OwnerAddr == "":
		health = "NOT A MEMBER"
	case !r.Healthy:
		health = "STALE"
	}
	return table(w, "TOKEN\tRANGE\tFIRST TOKEN\tLAST TOKEN\tOWNER\tADDRESS\tEPOCH\tHEALTH", [][]string{{
		strconv.FormatInt(r.Token, 10), strconv.Itoa(r.Range), strconv.FormatInt(r.FirstToken, 10), strconv.FormatInt(r.LastToken, 10),
		owner, r.OwnerAddr, strconv.FormatUint(r.Epoch, 10), health,
	}})
}

// RemoveNodeReport is the result of `admin removenode`.
type RemoveNodeReport struct {
	ID string `json:"id"`
	// Ranges are those the removed member owned: they stay assigned to it
	// until a live ingest node claims them.
	Ranges []int `json:"ranges"`
}

func (r *RemoveNodeReport) text(w io.Writer) error {
	fmt.Fprintf(w, "removed %s from the members\n", r.ID)
	if len(r.Ranges) > 0 {
		fmt.Fprintf(w, "it owned ranges %v: they stay unserved until a live ingest node claims them\n", r.Ranges)
	}
	return nil
}

// adminRemoveNode removes a member that is gone from the member list, as
// nodetool removenode does: a live member is refused, since it would
// announce itself again with its next heartbeat; stop it instead.
func adminRemoveNode(ctx context.Context, a *admin, args []string) (report, error) {
	if len(args) != 1 {
		return nil, errors.New("want one member ID: removenode <id> ('sediment admin status' lists them)")
	}
	id := args[0]
	m, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	mems, err := m.Members(ctx)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(mems, func(mem manifest.Member) bool { return mem.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("no member %q ('sediment admin status' lists them)", id)
	}
	if mems[i].Live(a.now(), a.cfg.MaxAge) {
		return nil, fmt.Errorf("member %s is live (heartbeat %.1fs ago): stop the process, which leaves on its own, or wait until its heartbeat is older than -max-heartbeat-age=%s", id, a.now().Sub(mems[i].Heartbeat).Seconds(), a.cfg.MaxAge)
	}
	rep := &RemoveNodeReport{ID: id, Ranges: []int{}}
	owners, err := rangeOwnerships(ctx, m)
	if err != nil {
		return nil, err
	}
	for r, o := range owners {
		if o.Owner == id {
			rep.Ranges = append(rep.Ranges, r)
		}
	}
	if err := m.Leave(ctx, id); err != nil {
		return nil, err
	}
	return rep, nil
}

// InfoReport is the result of `admin info`: nodetool info's questions,
// per member.
type InfoReport struct {
	Nodes []NodeInfo `json:"nodes"`
}

// NodeInfo is one member: what it runs and what it is responsible for.
type NodeInfo struct {
	ID           string   `json:"id"`
	Roles        []string `json:"roles"`
	Addr         string   `json:"addr"`
	HeartbeatAge float64  `json:"heartbeat_age_seconds"`
	Healthy      bool     `json:"healthy"`
	// Ranges are the token ranges it owns; Load the bytes of the live
	// SSTables in them, over every table (Cassandra's "Load": the data a
	// node is responsible for; in Sediment it lives in the bucket).
	Ranges   []int `json:"ranges"`
	Load     int64 `json:"load_bytes"`
	SSTables int   `json:"sstables"`
	// UnflushedTables counts the tables it holds unflushed writes of.
	UnflushedTables int `json:"unflushed_tables"`
}

func (r *InfoReport) text(w io.Writer) error {
	var rows [][]string
	for _, n := range r.Nodes {
		health := "healthy"
		if !n.Healthy {
			health = "STALE"
		}
		ranges := "-"
		if len(n.Ranges) > 0 {
			ranges = fmt.Sprint(len(n.Ranges))
		}
		rows = append(rows, []string{n.ID, strings.Join(n.Roles, ","), n.Addr, health, ranges,
			status.HumanBytes(n.Load), strconv.Itoa(n.SSTables), strconv.Itoa(n.UnflushedTables)})
	}
	return table(w, "MEMBER\tROLES\tADDRESS\tHEALTH\tRANGES\tLOAD\tSSTABLES\tUNFLUSHED TABLES", rows)
}

// adminInfo reports every member with the ranges it owns and their data.
func adminInfo(ctx context.Context, a *admin, args []string) (report, error) {
	if err := noArgs(args); err != nil {
		return nil, err
	}
	m, _, tables, err := a.chosenTables(ctx)
	if err != nil {
		return nil, err
	}
	mems, err := m.Members(ctx)
	if err != nil {
		return nil, err
	}
	owners, err := rangeOwnerships(ctx, m)
	if err != nil {
		return nil, err
	}
	rep := &InfoReport{Nodes: []NodeInfo{}}
	byID := map[string]*NodeInfo{}
	now := a.now()
	for _, mem := range mems {
		rep.Nodes = append(rep.Nodes, NodeInfo{ID: mem.ID, Roles: mem.Roles, Addr: mem.Addr, Ranges: []int{},
			HeartbeatAge: now.Sub(mem.Heartbeat).Seconds(), Healthy: mem.Live(now, a.cfg.MaxAge), UnflushedTables: len(mem.Unflushed)})
	}
	for i := range rep.Nodes {
		byID[rep.Nodes[i].ID] = &rep.Nodes[i]
	}
	for r, o := range owners {
		if ni := byID[o.Owner]; ni != nil {
			ni.Ranges = append(ni.Ranges, r)
		}
	}
	for _, t := range tables {
		for r, o := range owners {
			ni := byID[o.Owner]
			if ni == nil {
				continue
			}
			ssts, err := m.SSTablesInRange(ctx, t.ID, r)
			if err != nil {
				return nil, err
			}
			for _, s := range ssts {
				ni.Load += s.Size
				ni.SSTables++
			}
		}
	}
	return rep, nil
}
