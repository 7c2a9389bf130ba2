package manifest

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// View is an in-memory copy of the whole catalog, kept current by one KV
// watcher per bucket. Reads never touch NATS, so a node that loses NATS
// goes on serving from its last view and catches up once it is back.
//
// Values a View returns are shared and must not be modified.
type View struct {
	m      *Manifest
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.RWMutex
	docs map[string]map[string]any // bucket kind → KV key → decoded document
	// schema is built from the schema documents at each change of them,
	// so that its index serves every lookup until the next.
	schema *Schema
	// tables indexes the sstables documents by table and range.
	tables map[uuid.UUID]map[int]*TableSSTables
	// sstRev is the highest revision of the sstables bucket applied.
	sstRev uint64
	// rolesRev is the highest revision of the roles bucket applied.
	rolesRev uint64
	changed  chan struct{} // closed and replaced at every change
}

// decoders turn a document of each bucket kind into its Go value.
// A document must sit under the key its content names, since the View
// indexes it by content.
var decoders = map[string]func(key string, raw []byte) (any, error){
	kindSchema: func(key string, raw []byte) (any, error) {
		return decodeAt(key, raw, func(ks *Keyspace) string { return keyspaceKey(ks.Name) })
	},
	kindSSTables: func(key string, raw []byte) (any, error) {
		if strings.HasPrefix(key, "l.") {
			return decodeAt(key, raw, func(l *Load) string { return loadKey(l.ID) })
		}
		return decodeAt(key, raw, func(ts *TableSSTables) string { return sstablesKey(ts.Table, ts.Range) })
	},
	kindOwnership: func(key string, raw []byte) (any, error) {
		if key == rangesKey {
			return decodeAt(key, raw, func(*Ranges) string { return rangesKey })
		}
		return decodeAt(key, raw, func(o *Ownership) string { return rangeKey(o.Range) })
	},
	kindMembers: func(key string, raw []byte) (any, error) {
		return decodeAt(key, raw, func(m *Member) string { return memberKey(m.ID) })
	},
	kindLeases: func(key string, raw []byte) (any, error) {
		return decodeAt(key, raw, func(l *Lease) string { return leaseKey(l.Name) })
	},
	kindRoles: func(key string, raw []byte) (any, error) {
		return decodeAt(key, raw, func(r *Role) string { return roleKey(r.Name) })
	},
}

// decodeAt decodes a T and checks that it sits under the key it names.
func decodeAt[T any](key string, raw []byte, keyOf func(*T) string) (any, error) {
	v := new(T)
	if err := decodeDoc(raw, v); err != nil {
		return nil, err
	}
	if k := keyOf(v); k != key {
		return nil, fmt.Errorf("%w: document of key %q under key %q", ErrCorrupt, k, key)
	}
	return v, nil
}

// Watch starts a View and returns once it holds every bucket's current
// contents. It runs until Close or until ctx is done.
func (m *Manifest) Watch(ctx context.Context) (*View, error) {
	wctx, cancel := context.WithCancel(ctx)
	v := &View{m: m, cancel: cancel, docs: map[string]map[string]any{}, tables: map[uuid.UUID]map[int]*TableSSTables{}, changed: make(chan struct{})}
	v.schema = NewSchema(nil)
	buckets := map[string]*bucket{
		kindSchema: m.schema, kindSSTables: m.sstables, kindOwnership: m.ownership,
		kindMembers: m.members, kindLeases: m.leases, kindRoles: m.roles,
	}
	ready := make(chan error, len(buckets))
	for kind := range buckets {
		v.docs[kind] = map[string]any{}
	}
	for kind, b := range buckets {
		v.wg.Go(func() { v.follow(wctx, kind, b, ready) })
	}
	for range buckets {
		select {
		case err := <-ready:
			if err != nil {
				v.Close()
				return nil, err
			}
		case <-ctx.Done():
			v.Close()
			return nil, ctx.Err()
		}
	}
	return v, nil
}

// Close stops the watchers. The View keeps answering with its last state.
func (v *View) Close() {
	v.cancel()
	v.wg.Wait()
}

// follow keeps one bucket's documents current. Each round starts a watcher,
// which first delivers every current value and then every change, and
// replaces the bucket's documents with the initial values, so changes missed
// while no watcher ran (deletions included) are caught up. A round ends when
// the connection reconnects (the server may have lost the watcher's
// consumer) or the watcher's subscription closes.
func (v *View) follow(ctx context.Context, kind string, b *bucket, ready chan<- error) {
	log := v.m.opts.Logger.With("bucket", b.name)
	reconnected := v.m.js.Conn().StatusChanged(nats.CONNECTED)
	defer v.m.js.Conn().RemoveStatusListener(reconnected)
	first := true
	backoff := v.m.opts.MinBackoff
	for ctx.Err() == nil {
		w, err := b.kv.WatchAll(ctx)
		if err != nil {
			if first {
				ready <- fmt.Errorf("manifest: watch %s: %w", b.name, err)
				return
			}
			log.Warn("watch failed; view is stale until it restarts", "err", err)
			select {
			case <-ctx.Done():
			case <-reconnected:
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = v.m.opts.MinBackoff
		v.watch(ctx, kind, w, reconnected, log, func() {
			if first {
				first = false
				ready <- nil
			}
		})
		stopWatcher(w)
	}
	if first {
		ready <- ctx.Err()
	}
}

// stopWatcher stops w and drains its channel, so that a delivery blocked on
// a full channel cannot hold the subscription open. The wait is bounded in
// case the client never reports the subscription closed.
func stopWatcher(w jetstream.KeyWatcher) {
	_ = w.Stop()
	deadline := time.After(time.Second)
	for {
		select {
		case _, ok := <-w.Updates():
			if !ok {
				return
			}
		case <-deadline:
			return
		}
	}
}

// watch applies one watcher's entries until it ends, ctx is done or the
// connection reconnects; loaded is called once the initial values are in.
func (v *View) watch(ctx context.Context, kind string, w jetstream.KeyWatcher, reconnected <-chan nats.Status, log *slog.Logger, loaded func()) {
	initial := map[string]any{}
	var initialRev uint64
	loading := true
	for {
		var e jetstream.KeyValueEntry
		select {
		case <-ctx.Done():
			return
		case <-reconnected:
			return
		case ent, ok := <-w.Updates():
			if !ok {
				return
			}
			e = ent
		}
		if e == nil { // all initial values delivered
			loading = false
			v.replace(kind, initial, initialRev)
			loaded()
			continue
		}
		key, val, err := decodeEntry(kind, e)
		if err != nil {
			log.Error("skipping undecodable value", "key", e.Key(), "revision", e.Revision(), "err", err)
			if !loading {
				v.set(kind, "", noDoc, e.Revision())
			} else {
				initialRev = max(initialRev, e.Revision())
			}
			continue
		}
		if !loading {
			v.set(kind, key, val, e.Revision())
		} else if val == nil {
			delete(initial, key)
		} else {
			initial[key] = val
		}
		if loading {
			initialRev = max(initialRev, e.Revision())
		}
	}
}

// noDoc is set's value for an entry that changes no document but whose
// revision the View has reached.
var noDoc = new(struct{})

// decodeEntry returns the document of a watched entry, nil for a deletion.
func decodeEntry(kind string, e jetstream.KeyValueEntry) (string, any, error) {
	if e.Operation() != jetstream.KeyValuePut {
		return e.Key(), nil, nil
	}
	env, err := decodeEnvelope(e.Value())
	if err != nil || env.Deleted {
		return e.Key(), nil, err
	}
	val, err := decoders[kind](e.Key(), env.Data)
	return e.Key(), val, err
}

func (v *View) replace(kind string, docs map[string]any, rev uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.docs[kind] = docs
	if kind == kindRoles {
		v.rolesRev = max(v.rolesRev, rev)
	}
	if kind == kindSSTables {
		v.sstRev = max(v.sstRev, rev)
		v.tables = map[uuid.UUID]map[int]*TableSSTables{}
		for _, d := range docs {
			ts, ok := d.(*TableSSTables)
			if !ok {
				continue // a load record
			}
			if v.tables[ts.Table] == nil {
				v.tables[ts.Table] = map[int]*TableSSTables{}
			}
			v.tables[ts.Table][ts.Range] = ts
		}
	}
	v.changedLocked(kind)
}

func (v *View) set(kind, key string, val any, rev uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if kind == kindSSTables {
		v.sstRev = max(v.sstRev, rev)
	}
	if kind == kindRoles {
		v.rolesRev = max(v.rolesRev, rev)
	}
	if val == noDoc {
		v.changedLocked(kind)
		return
	}
	m := maps.Clone(v.docs[kind]) // readers may hold the old map
	old := m[key]
	if val == nil {
		delete(m, key)
	} else {
		m[key] = val
	}
	v.docs[kind] = m
	if kind == kindSSTables {
		ts, _ := val.(*TableSSTables)
		if ts == nil {
			ts, _ = old.(*TableSSTables)
		}
		if ts != nil {
			ranges := maps.Clone(v.tables[ts.Table])
			if ranges == nil {
				ranges = map[int]*TableSSTables{}
			}
			if val == nil {
				delete(ranges, ts.Range)
			} else {
				ranges[ts.Range] = ts
			}
			v.tables[ts.Table] = ranges
		}
	}
	v.changedLocked(kind)
}

func (v *View) changedLocked(kind string) {
	if kind == kindSchema {
		v.schema = NewSchema(v.keyspacesLocked())
	}
	close(v.changed)
	v.changed = make(chan struct{})
}

func (v *View) keyspacesLocked() map[string]*Keyspace {
	out := map[string]*Keyspace{}
	for _, d := range v.docs[kindSchema] {
		ks := d.(*Keyspace)
		out[ks.Name] = ks
	}
	return out
}

// SSTablesRevision returns the highest revision of the sstables bucket the
// view has applied. Revisions of one bucket only grow, so a view whose
// SSTablesRevision is at least one another view reported lists every
// SSTable that view listed then (or what replaced them since).
func (v *View) SSTablesRevision() uint64 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.sstRev
}

// Manifest returns the Manifest the view watches, through which changes go.
func (v *View) Manifest() *Manifest { return v.m }

// Changed returns a channel that is closed at the next change of the view.
func (v *View) Changed() <-chan struct{} {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.changed
}

// WaitFor blocks until cond holds for the view or ctx is done.
func (v *View) WaitFor(ctx context.Context, cond func(*View) bool) error {
	for {
		ch := v.Changed()
		if cond(v) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (v *View) doc(kind, key string) any {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.docs[kind][key]
}

// Schema returns the schema as the view last saw it.
func (v *View) Schema() *Schema {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.schema
}

// SchemaVersion returns the schema version as the view last saw it.
func (v *View) SchemaVersion() uuid.UUID { return v.Schema().Version }

// Keyspace returns a keyspace, or nil.
func (v *View) Keyspace(name string) *Keyspace {
	ks, _ := v.doc(kindSchema, keyspaceKey(name)).(*Keyspace)
	return ks
}

// Table returns table ks.name, or nil.
func (v *View) Table(ks, name string) *Table {
	if k := v.Keyspace(ks); k != nil {
		return k.Tables[name]
	}
	return nil
}

// TableByID returns the table with ID id, or nil.
func (v *View) TableByID(id uuid.UUID) *Table { return v.Schema().TableByID(id) }

// SSTables returns the live SSTables of a table in range order.
func (v *View) SSTables(table uuid.UUID) []SSTable {
	v.mu.RLock()
	ranges := v.tables[table]
	v.mu.RUnlock()
	var out []SSTable
	for _, r := range slices.Sorted(maps.Keys(ranges)) {
		out = append(out, v.SSTablesInRange(table, r)...)
	}
	return out
}

// SSTablesInRange returns the live SSTables of a table in range r, without
// those of loads not committed.
func (v *View) SSTablesInRange(table uuid.UUID, r int) []SSTable {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if ts := v.tables[table][r]; ts != nil {
		docs := v.docs[kindSSTables]
		list, _ := visibleSSTables(ts.SSTables, func(id uuid.UUID) (*Load, error) {
			l, _ := docs[loadKey(id)].(*Load)
			return l, nil
		})
		return list
	}
	return nil
}

// GarbageInRange returns the garbage list of a table in range r: objects
// removed from it, not yet deleted.
func (v *View) GarbageInRange(table uuid.UUID, r int) []Garbage {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if ts := v.tables[table][r]; ts != nil {
		return ts.Garbage
	}
	return nil
}

// RangeCount returns the number of token ranges, 0 before InitRanges.
func (v *View) RangeCount() int {
	r, _ := v.doc(kindOwnership, rangesKey).(*Ranges)
	if r == nil {
		return 0
	}
	return r.Count
}

// Ownership returns the owner of range r.
func (v *View) Ownership(r int) (Ownership, bool) {
	o, _ := v.doc(kindOwnership, rangeKey(r)).(*Ownership)
	if o == nil {
		return Ownership{}, false
	}
	return *o, true
}

// Members returns every member, by ID.
func (v *View) Members() []Member {
	v.mu.RLock()
	docs := v.docs[kindMembers]
	v.mu.RUnlock()
	out := make([]Member, 0, len(docs))
	for _, d := range docs {
		out = append(out, *d.(*Member))
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Lease returns lease name, expired or not.
func (v *View) Lease(name string) (Lease, bool) {
	l, _ := v.doc(kindLeases, leaseKey(name)).(*Lease)
	if l == nil {
		return Lease{}, false
	}
	return *l, true
}
