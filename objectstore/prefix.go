package objectstore

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// prefixed keeps every key of a Store under a fixed prefix, so that many
// clusters can share one bucket.
type prefixed struct {
	s      Store
	prefix string // ends in "/"
}

var _ Store = (*prefixed)(nil)

// WithPrefix returns a Store that keeps its objects in s under prefix (a
// slash is added if missing). Keys passed to and returned by it do not
// include the prefix.
func WithPrefix(s Store, prefix string) (Store, error) {
	p, err := prefixOf(prefix)
	if err != nil || p == "" {
		return s, err
	}
	return &prefixed{s: s, prefix: p}, nil
}

// prefixOf returns prefix with a trailing slash, or "" for no prefix.
func prefixOf(prefix string) (string, error) {
	if prefix == "" {
		return "", nil
	}
	p := strings.TrimSuffix(prefix, "/")
	if err := checkKey(p); err != nil {
		return "", fmt.Errorf("objectstore: prefix %q: %w", prefix, err)
	}
	return p + "/", nil
}

func (p *prefixed) key(key string) (string, error) {
	// Check here too: an empty key would otherwise name the prefix itself.
	if err := checkKey(key); err != nil {
		return "", err
	}
	return p.prefix + key, nil
}

func (p *prefixed) Put(ctx context.Context, key string, data []byte) (string, error) {
	k, err := p.key(key)
	if err != nil {
		return "", err
	}
	return p.s.Put(ctx, k, data)
}

func (p *prefixed) PutIf(ctx context.Context, key string, data []byte, cond Condition) (string, error) {
	k, err := p.key(key)
	if err != nil {
		return "", err
	}
	return p.s.PutIf(ctx, k, data, cond)
}

func (p *prefixed) NewWriter(ctx context.Context, key string) (Writer, error) {
	k, err := p.key(key)
	if err != nil {
		return nil, err
	}
	return p.s.NewWriter(ctx, k)
}

func (p *prefixed) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	k, err := p.key(key)
	if err != nil {
		return nil, err
	}
	return p.s.Get(ctx, k)
}

func (p *prefixed) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	k, err := p.key(key)
	if err != nil {
		return nil, err
	}
	return p.s.GetRange(ctx, k, off, length)
}

func (p *prefixed) Head(ctx context.Context, key string) (Attrs, error) {
	k, err := p.key(key)
	if err != nil {
		return Attrs{}, err
	}
	a, err := p.s.Head(ctx, k)
	a.Key = key
	return a, err
}

func (p *prefixed) List(ctx context.Context, prefix string, fn func(Attrs) error) error {
	return p.s.List(ctx, p.prefix+prefix, func(a Attrs) error {
		a.Key = strings.TrimPrefix(a.Key, p.prefix)
		return fn(a)
	})
}

func (p *prefixed) Delete(ctx context.Context, key string) error {
	k, err := p.key(key)
	if err != nil {
		return err
	}
	return p.s.Delete(ctx, k)
}
