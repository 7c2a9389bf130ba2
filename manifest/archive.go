package manifest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/objectstore"
)

// archivePrefix starts every archived object key.
const archivePrefix = "manifest/"

// archiveKey names the copy of version v of key in bucket. The version is
// zero-padded so that lexical order, the order List returns, is version order.
func archiveKey(bucket, key string, v uint64) string {
	return fmt.Sprintf("%s%s/%s/%020d", archivePrefix, bucket, key, v)
}

// parseArchiveKey splits an archived object key into bucket, KV key and
// version.
func parseArchiveKey(k string) (bucket, key string, v uint64, err error) {
	rest, ok := strings.CutPrefix(k, archivePrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || parts[0] == "" || parts[1] == "" || len(parts[2]) != 20 {
		return "", "", 0, fmt.Errorf("%w: archive key %q", ErrCorrupt, k)
	}
	v, err = strconv.ParseUint(parts[2], 10, 64)
	if err != nil || v == 0 {
		return "", "", 0, fmt.Errorf("%w: archive key %q", ErrCorrupt, k)
	}
	return parts[0], parts[1], v, nil
}

// archive writes val, version v of key, to the object store, unless b is
// not archived. The object is immutable: if it exists it must hold val.
func (m *Manifest) archive(ctx context.Context, b *bucket, key string, val []byte, v uint64) error {
	if !b.archive {
		return nil
	}
	ok := archiveKey(b.name, key, v)
	_, err := m.store.PutIf(ctx, ok, val, objectstore.IfAbsent())
	if objectstore.IsPreconditionFailed(err) {
		var have []byte
		if have, err = readObject(ctx, m.store, ok); err == nil && !bytes.Equal(have, val) {
			return fmt.Errorf("%w: %s", ErrArchiveConflict, ok)
		}
	}
	if err != nil {
		m.opts.Logger.Warn("archive failed", "object", ok, "err", err)
		return fmt.Errorf("%w: %s: %w", ErrNotArchived, ok, err)
	}
	return nil
}

func readObject(ctx context.Context, s objectstore.Store, key string) ([]byte, error) {
	r, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close() //nolint:errcheck // read-only
	return io.ReadAll(r)
}

// RestoreStats counts what Restore did.
type RestoreStats struct {
	Buckets int // buckets found in the archive
	Keys    int // keys written to NATS
	Present int // keys NATS already held with the archived value
}

// Restore rebuilds the archived buckets (schema, SSTables, ownership) of
// every cluster in store from the newest archived version of each key. Keys
// already in NATS must hold exactly that version (ErrRestoreConflict
// otherwise), so an interrupted Restore can be run again.
func Restore(ctx context.Context, store objectstore.Store, js jetstream.JetStream) (RestoreStats, error) {
	var st RestoreStats
	type ref struct{ bucket, key string }
	newest := map[ref]string{} // object key of the highest version
	var order []ref
	err := store.List(ctx, archivePrefix, func(a objectstore.Attrs) error {
		bk, key, _, err := parseArchiveKey(a.Key)
		if err != nil {
			return err
		}
		r := ref{bk, key}
		if _, seen := newest[r]; !seen {
			order = append(order, r)
		}
		newest[r] = a.Key // List is in lexical, hence version, order
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("manifest: restore: list archive: %w", err)
	}
	buckets := map[string]*bucket{}
	for _, r := range order {
		b := buckets[r.bucket]
		if b == nil {
			i := strings.LastIndexByte(r.bucket, '_')
			if i < 0 || !archivedKinds[r.bucket[i+1:]] || !clusterNameRE.MatchString(r.bucket[:i]) {
				return st, fmt.Errorf("%w: archived bucket %q", ErrCorrupt, r.bucket)
			}
			// One replica: the Open that follows raises it to its Replicas.
			if b, err = openBucket(ctx, js, r.bucket, r.bucket[i+1:], 1); err != nil {
				return st, err
			}
			buckets[r.bucket] = b
			st.Buckets++
		}
		val, err := readObject(ctx, store, newest[r])
		if err != nil {
			return st, fmt.Errorf("manifest: restore: %w", err)
		}
		if _, err := decodeEnvelope(val); err != nil {
			return st, fmt.Errorf("%s: %w", newest[r], err)
		}
		_, err = b.kv.Create(ctx, r.key, val)
		if err == nil {
			st.Keys++
			continue
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return st, fmt.Errorf("manifest: restore %s/%s: %w", r.bucket, r.key, err)
		}
		e, err := b.kv.Get(ctx, r.key)
		if err != nil {
			return st, fmt.Errorf("manifest: restore %s/%s: %w", r.bucket, r.key, err)
		}
		if !bytes.Equal(e.Value(), val) {
			return st, fmt.Errorf("%w: %s/%s", ErrRestoreConflict, r.bucket, r.key)
		}
		st.Present++
	}
	return st, nil
}
