package status

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sedimentdb/sediment/objectstore"
)

// archivePrefix starts every object of the manifest archive:
// manifest/<bucket>/<key>/<%020d version> (manifest/archive.go).
const archivePrefix = "manifest/"

// Version is one archived version of one catalog key.
type Version struct {
	Object, Bucket, Key string
	// What names what the key holds, with the schema's names.
	What     string
	Version  uint64
	Size     int64
	Archived time.Time
}

// parseVersion splits an archive object's key; it is outside bytes, so a
// key of another shape is an error, not a guess.
func parseVersion(a objectstore.Attrs) (Version, error) {
	rest, ok := strings.CutPrefix(a.Key, archivePrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || parts[0] == "" || parts[1] == "" || len(parts[2]) != 20 {
		return Version{}, fmt.Errorf("status: not a manifest archive object: %q", a.Key)
	}
	v, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil || v == 0 {
		return Version{}, fmt.Errorf("status: not a manifest archive object: %q", a.Key)
	}
	return Version{Object: a.Key, Bucket: parts[0], Key: parts[1], Version: v, Size: a.Size, Archived: a.ModTime.UTC()}, nil
}

// archive returns the newest archived versions of the cluster's catalog,
// listing the bucket at most once per ArchiveEvery.
func (h *handler) archive(ctx context.Context, cat Catalog, now time.Time) ([]Version, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.listed.IsZero() && now.Sub(h.listed) < h.src.ArchiveEvery {
		return h.versions, nil
	}
	// The catalog's buckets are named <cluster>_<kind>.
	prefix := archivePrefix
	if cat.Cluster != "" {
		prefix += cat.Cluster + "_"
	}
	var vs []Version
	err := cat.Store.List(ctx, prefix, func(a objectstore.Attrs) error {
		v, err := parseVersion(a)
		if err != nil {
			return err
		}
		vs = append(vs, v)
		return nil
	})
	// Newest first; versions of one key in descending order.
	slices.SortStableFunc(vs, func(x, y Version) int {
		if c := y.Archived.Compare(x.Archived); c != 0 {
			return c
		}
		return strings.Compare(y.Object, x.Object)
	})
	if len(vs) > h.src.ArchiveLimit {
		vs = vs[:h.src.ArchiveLimit]
	}
	if err != nil {
		// Not cached: the next request tries again.
		return vs, err
	}
	h.listed, h.versions = now, vs
	return vs, nil
}
