package exec

import (
	"context"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"time"

	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/manifest"
)

// Events.
//
// Drivers keep one control connection registered for events and refresh
// their metadata when told. A schema change may be made through any
// frontend, so each frontend tells its own clients about every change its
// View shows, its own included: Watch compares each new schema with the one
// before and publishes one SCHEMA_CHANGE per keyspace, table and type
// created, updated or dropped. It does the same for the frontends in the
// member list: a CQL endpoint that appears is a NEW_NODE that is UP, one that
// goes (left, or its heartbeat too old) is DOWN and REMOVED_NODE.

// Watch publishes events for the changes of the View until ctx ends.
func (e *Executor) Watch(ctx context.Context, publish func(*wire.Event)) {
	schema := e.view.Schema()
	hosts := e.peerAddrs()
	tick := time.NewTicker(e.cfg.MemberMaxAge / 3)
	defer tick.Stop()
	for {
		changed := e.view.Changed()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
		if next := e.view.Schema(); next != schema {
			for _, c := range schemaChanges(schema, next) {
				publish(SchemaEvent(c))
			}
			schema = next
		}
		next := e.peerAddrs()
		for _, ev := range topologyEvents(hosts, next) {
			publish(ev)
		}
		hosts = next
	}
}

// peerAddrs returns the CQL addresses of the other live frontends.
func (e *Executor) peerAddrs() map[netip.AddrPort]bool {
	out := map[netip.AddrPort]bool{}
	for _, h := range e.frontends() {
		if h.hostID != e.cfg.Local.HostID && h.addr.IsValid() {
			out[h.addr] = true
		}
	}
	return out
}

// topologyEvents returns the events of the frontends that came and went.
func topologyEvents(before, after map[netip.AddrPort]bool) []*wire.Event {
	var evs []*wire.Event
	for _, a := range slices.SortedFunc(maps.Keys(after), netip.AddrPort.Compare) {
		if !before[a] {
			evs = append(evs,
				&wire.Event{Type: wire.TopologyChange, Change: "NEW_NODE", Addr: a},
				&wire.Event{Type: wire.StatusChange, Change: "UP", Addr: a})
		}
	}
	for _, a := range slices.SortedFunc(maps.Keys(before), netip.AddrPort.Compare) {
		if !after[a] {
			evs = append(evs,
				&wire.Event{Type: wire.StatusChange, Change: "DOWN", Addr: a},
				&wire.Event{Type: wire.TopologyChange, Change: "REMOVED_NODE", Addr: a})
		}
	}
	return evs
}

// schemaChanges lists what changed from one schema to the next, as
// Cassandra announces it: a keyspace created or dropped is one change; in a
// keyspace that stays, its own options, then each type and table.
func schemaChanges(before, after *manifest.Schema) []SchemaChange {
	var out []SchemaChange
	names := map[string]bool{}
	for n := range before.Keyspaces {
		names[n] = true
	}
	for n := range after.Keyspaces {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		b, a := before.Keyspaces[n], after.Keyspaces[n]
		switch {
		case b == nil:
			out = append(out, SchemaChange{Change: ChangeCreated, Target: TargetKeyspace, Keyspace: n})
			// A keyspace is created empty; anything in it came with a
			// later change the View merged into this one.
			out = append(out, memberChanges(n, TargetType, nil, a.Types)...)
			out = append(out, memberChanges(n, TargetTable, nil, a.Tables)...)
		case a == nil:
			out = append(out, SchemaChange{Change: ChangeDropped, Target: TargetKeyspace, Keyspace: n})
		case b.Version != a.Version:
			if !maps.Equal(b.Replication, a.Replication) || b.DurableWrites != a.DurableWrites {
				out = append(out, SchemaChange{Change: ChangeUpdated, Target: TargetKeyspace, Keyspace: n})
			}
			out = append(out, memberChanges(n, TargetType, b.Types, a.Types)...)
			out = append(out, memberChanges(n, TargetTable, b.Tables, a.Tables)...)
		}
	}
	return out
}

// memberChanges compares the tables or types of a keyspace.
func memberChanges[T any](ks, target string, before, after map[string]*T) []SchemaChange {
	var out []SchemaChange
	names := map[string]bool{}
	for n := range before {
		names[n] = true
	}
	for n := range after {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		b, a := before[n], after[n]
		sc := SchemaChange{Target: target, Keyspace: ks, Name: n}
		switch {
		case b == nil:
			sc.Change = ChangeCreated
		case a == nil:
			sc.Change = ChangeDropped
		case !reflect.DeepEqual(b, a):
			sc.Change = ChangeUpdated
		default:
			continue
		}
		out = append(out, sc)
	}
	return out
}
