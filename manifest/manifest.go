package manifest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/objectstore"
)

// Bucket kinds; a bucket is named "<cluster>_<kind>".
const (
	kindSchema    = "schema"
	kindSSTables  = "sstables"
	kindOwnership = "ownership"
	kindMembers   = "members"
	kindLeases    = "leases"
	kindRoles     = "roles"
)

// archivedKinds are the buckets copied to the object store. Members and
// leases are not: they describe live processes, which rewrite them within a
// heartbeat or lease period, and copying every heartbeat would fill the
// bucket with objects nobody needs.
var archivedKinds = map[string]bool{kindSchema: true, kindSSTables: true, kindOwnership: true, kindRoles: true, kindSnapshots: true}

var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// Options tune a Manifest. The zero value is usable.
type Options struct {
	// MaxAttempts bounds the compare-and-set attempts of one change
	// (default 64).
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the jittered wait between attempts
	// (defaults 1ms and 100ms).
	MinBackoff, MaxBackoff time.Duration
	// Now is the clock for heartbeats, leases and creation times
	// (default time.Now).
	Now func() time.Time
	// Logger receives conflict and archive diagnostics (default slog.Default).
	Logger *slog.Logger
	// Replicas of the buckets' streams (default 1). Open raises buckets
	// that exist to it, and never lowers them.
	Replicas int
}

func (o *Options) fill() {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 64
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(100*time.Millisecond, o.MinBackoff)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Logger = o.Logger.With("component", "manifest")
}

// Manifest reads and changes the catalog of one cluster. It is safe for
// concurrent use, and any number of Manifests, in any number of processes,
// may change the same cluster at once.
type Manifest struct {
	cluster string
	js      jetstream.JetStream
	store   objectstore.Store
	opts    Options

	schema, sstables, ownership, members, leases, roles *bucket

	rangeCount atomic.Int64 // cached; 0 until read
}

// bucket is one KV bucket and whether its changes are archived.
type bucket struct {
	name    string
	kv      jetstream.KeyValue
	stream  jetstream.Stream // the KV's stream, for keys
	archive bool
}

// Open creates the cluster's buckets if they do not exist and returns a
// Manifest over them. Every archived change is also written to store.
func Open(ctx context.Context, js jetstream.JetStream, store objectstore.Store, cluster string, opts Options) (*Manifest, error) {
	if !clusterNameRE.MatchString(cluster) {
		return nil, fmt.Errorf("%w: cluster name %q (want 1-64 of A-Z a-z 0-9 -)", ErrInvalid, cluster)
	}
	if js == nil || store == nil {
		return nil, fmt.Errorf("%w: Open needs JetStream and an object store", ErrInvalid)
	}
	opts.fill()
	m := &Manifest{cluster: cluster, js: js, store: store, opts: opts}
	for _, b := range []struct {
		kind string
		dst  **bucket
	}{
		{kindSchema, &m.schema},
		{kindSSTables, &m.sstables},
		{kindOwnership, &m.ownership},
		{kindMembers, &m.members},
		{kindLeases, &m.leases},
		{kindRoles, &m.roles},
	} {
		bk, err := openBucket(ctx, js, cluster+"_"+b.kind, b.kind, opts.Replicas)
		if err != nil {
			return nil, err
		}
		*b.dst = bk
	}
	return m, nil
}

func openBucket(ctx context.Context, js jetstream.JetStream, name, kind string, replicas int) (*bucket, error) {
	// A process of default configuration must not scale a cluster's
	// buckets down.
	if s, err := js.Stream(ctx, "KV_"+name); err == nil {
		replicas = max(replicas, s.CachedInfo().Config.Replicas)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      name,
		Description: "sediment manifest: " + kind,
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("manifest: open bucket %s: %w", name, err)
	}
	return newBucket(ctx, js, kv, name, archivedKinds[kind])
}

// newBucket wraps the KV bucket kv, named name, with its stream.
func newBucket(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, name string, archive bool) (*bucket, error) {
	stream, err := js.Stream(ctx, "KV_"+name)
	if err != nil {
		return nil, fmt.Errorf("manifest: open bucket %s: %w", name, err)
	}
	return &bucket{name: name, kv: kv, stream: stream, archive: archive}, nil
}

// keys returns the bucket's keys matching filter (a subject filter over
// keys, such as ">" or "t.>"), in order. It asks the server for the
// subjects of the bucket's stream, which it answers from one state of the
// stream: a key watcher (KeyValue.ListKeys) misses a key that is updated
// while it lists, and heartbeats update the members' keys all the time.
// Deleted documents are tombstones, so every key ever written is listed.
func (b *bucket) keys(ctx context.Context, filter string) ([]string, error) {
	prefix := "$KV." + b.name + "."
	info, err := b.stream.Info(ctx, jetstream.WithSubjectFilter(prefix+filter))
	if err != nil {
		return nil, fmt.Errorf("manifest: list %s: %w", b.name, err)
	}
	keys := make([]string, 0, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		keys = append(keys, strings.TrimPrefix(subject, prefix))
	}
	slices.Sort(keys)
	return keys, nil
}

// Cluster returns the cluster name.
func (m *Manifest) Cluster() string { return m.cluster }

// envelope is the stored form of every value: the document, or a tombstone
// for a deleted one, with a per-key version that grows by one with every
// change. Deletions are tombstones rather than KV deletes so that the
// version, and with it the archive key, never goes back.
type envelope struct {
	Version uint64          `json:"version"`
	Deleted bool            `json:"deleted,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func decodeEnvelope(b []byte) (envelope, error) {
	var e envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return envelope{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return envelope{}, fmt.Errorf("%w: trailing data", ErrCorrupt)
	}
	if e.Version == 0 {
		return envelope{}, fmt.Errorf("%w: version 0", ErrCorrupt)
	}
	if e.Deleted == (len(e.Data) != 0) {
		return envelope{}, fmt.Errorf("%w: want exactly one of data and deleted", ErrCorrupt)
	}
	return e, nil
}

// decodeDoc decodes a document strictly: unknown fields are corruption, so
// a value written by a newer format is never half-read.
func decodeDoc(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data", ErrCorrupt)
	}
	if n, ok := v.(interface{ named() }); ok {
		n.named() // fields a document implies rather than stores
	}
	return nil
}

// errUnchanged, returned by a mutation function, ends the update without
// writing and without error; like any error of the mutation function, it
// still archives the current version, which makes a retried change
// idempotent.
var errUnchanged = errors.New("manifest: unchanged")

// update applies fn to the current document under key and stores the result
// with a compare-and-set on the key's revision. fn gets nil for an absent or
// deleted key and returns the new document, or nil to delete it. On a lost
// race update reloads and re-runs fn, up to MaxAttempts times with jittered
// exponential backoff. The change is archived before update returns; when
// nothing is written (fn fails, or deletes a deleted key) the current
// version is archived instead, and an archive failure takes precedence over
// fn's error.
func (m *Manifest) update(ctx context.Context, b *bucket, key string, fn func(cur []byte) ([]byte, error)) error {
	backoff := m.opts.MinBackoff
	for attempt := 1; ; attempt++ {
		var (
			cur []byte
			rev uint64
			env envelope
		)
		e, err := b.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return fmt.Errorf("manifest: get %s/%s: %w", b.name, key, err)
		default:
			rev = e.Revision()
			if env, err = decodeEnvelope(e.Value()); err != nil {
				return fmt.Errorf("%s/%s: %w", b.name, key, err)
			}
			if !env.Deleted {
				cur = env.Data
			}
		}
		next, err := fn(cur)
		if err != nil || (next == nil && cur == nil) {
			// Nothing to write: fn refused (a retried create finds what it
			// created, a retried drop finds the tombstone it wrote) or the
			// key is already deleted. The current version may be a change
			// whose archive copy failed, so write the copy before answering:
			// a caller must not rely on a state that Restore would lose.
			if rev != 0 {
				if aerr := m.archive(ctx, b, key, e.Value(), env.Version); aerr != nil {
					return aerr
				}
			}
			if errors.Is(err, errUnchanged) {
				return nil
			}
			return err
		}
		nenv := envelope{Version: env.Version + 1, Deleted: next == nil, Data: next}
		val, err := json.Marshal(nenv)
		if err != nil {
			return fmt.Errorf("manifest: encode: %w", err)
		}
		if rev == 0 {
			_, err = b.kv.Create(ctx, key, val)
		} else {
			_, err = b.kv.Update(ctx, key, val, rev)
		}
		if err == nil {
			return m.archive(ctx, b, key, val, nenv.Version)
		}
		if !isConflict(err) {
			return fmt.Errorf("manifest: put %s/%s: %w", b.name, key, err)
		}
		if attempt >= m.opts.MaxAttempts {
			return fmt.Errorf("%w: %s/%s after %d attempts", ErrConflict, b.name, key, attempt)
		}
		d := backoff/2 + rand.N(backoff/2+1)
		backoff = min(2*backoff, m.opts.MaxBackoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
}

// isConflict reports whether a KV write lost a compare-and-set.
func isConflict(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// get returns the current document under key, or nil if there is none.
func get(ctx context.Context, b *bucket, key string) ([]byte, error) {
	data, _, err := getVersion(ctx, b, key)
	return data, err
}

// getVersion returns the current document under key, or nil if there is
// none, and its envelope version (0 if the key was never written).
func getVersion(ctx context.Context, b *bucket, key string) ([]byte, uint64, error) {
	e, err := b.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("manifest: get %s/%s: %w", b.name, key, err)
	}
	env, err := decodeEnvelope(e.Value())
	if err != nil {
		return nil, 0, fmt.Errorf("%s/%s: %w", b.name, key, err)
	}
	if env.Deleted {
		return nil, env.Version, nil
	}
	return env.Data, env.Version, nil
}

// list returns every live document of b by key.
func list(ctx context.Context, b *bucket) (map[string][]byte, error) {
	keys, err := b.keys(ctx, ">")
	if err != nil {
		return nil, err
	}
	docs := make(map[string][]byte, len(keys))
	for _, k := range keys {
		d, err := get(ctx, b, k)
		if err != nil {
			return nil, err
		}
		if d != nil {
			docs[k] = d
		}
	}
	return docs, nil
}

// mutateJSON adapts a typed mutation to update: fn gets the decoded current
// document (nil if absent) and returns the new one (nil to delete).
func mutateJSON[T any](ctx context.Context, m *Manifest, b *bucket, key string, fn func(cur *T) (*T, error)) error {
	return m.update(ctx, b, key, func(raw []byte) ([]byte, error) {
		var cur *T
		if raw != nil {
			cur = new(T)
			if err := decodeDoc(raw, cur); err != nil {
				return nil, fmt.Errorf("%s/%s: %w", b.name, key, err)
			}
		}
		next, err := fn(cur)
		if err != nil || next == nil {
			return nil, err
		}
		return json.Marshal(next)
	})
}

// getJSON decodes the document under key into a new T, or returns nil.
func getJSON[T any](ctx context.Context, b *bucket, key string) (*T, error) {
	raw, err := get(ctx, b, key)
	if err != nil || raw == nil {
		return nil, err
	}
	v := new(T)
	if err := decodeDoc(raw, v); err != nil {
		return nil, fmt.Errorf("%s/%s: %w", b.name, key, err)
	}
	return v, nil
}
