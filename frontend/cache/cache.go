package cache

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrCorrupt marks a disk cache file that failed verification. Such a file is
// removed and its range loaded again; it is never served.
var ErrCorrupt = errors.New("cache: corrupt entry")

// Key names an immutable byte range: Length bytes of Object from Offset.
type Key struct {
	Object string
	Offset int64
	Length int64
}

// LoadFunc fetches the bytes of a key from the next tier on a miss.
type LoadFunc func(ctx context.Context) ([]byte, error)

// Tier is a read-through cache of immutable byte ranges.
type Tier interface {
	// Get returns the bytes of key, calling load on a miss. Concurrent misses
	// on one key share a single call of load. Load errors are returned and
	// not cached. The returned slice is shared: callers must not modify it.
	Get(ctx context.Context, key Key, load LoadFunc) ([]byte, error)
}

// Options are the settings shared by every tier.
type Options struct {
	// Name is the value of the "cache" label on the tier's metrics; it lets
	// several caches share one registry.
	Name string
	// Registerer receives the tier's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger reports dropped corrupt entries and disk errors; nil discards.
	Logger *slog.Logger
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// Stack returns a tier that consults tiers in order: a miss in one falls
// through to the next, and a miss in the last calls load. Each tier keeps
// what the tiers behind it returned, so a memory tier in front of a disk tier
// serves a block the disk tier fetched once.
func Stack(tiers ...Tier) Tier { return stack(tiers) }

type stack []Tier

var _ Tier = stack(nil)

func (s stack) Get(ctx context.Context, key Key, load LoadFunc) ([]byte, error) {
	if len(s) == 0 {
		return load(ctx)
	}
	if len(s) == 1 {
		return s[0].Get(ctx, key, load)
	}
	return s[0].Get(ctx, key, func(ctx context.Context) ([]byte, error) {
		return s[1:].Get(ctx, key, load)
	})
}
