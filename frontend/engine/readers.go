package engine

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/objectstore"
)

// readers keeps opened SSTable readers by object key, least recently used
// first out. Objects never change, so a kept reader is never stale; one that
// is evicted is merely opened again (one ranged read of the object's tail).
type readers struct {
	store objectstore.Store
	tier  cache.Tier // nil: blocks are read from the store directly
	max   int

	mu      sync.Mutex
	lru     list.List // of *readerEntry, most recent first
	entries map[string]*list.Element
}

type readerEntry struct {
	key  string
	done chan struct{} // closed once r or err is set
	r    *sstable.Reader
	err  error
}

func newReaders(store objectstore.Store, tier cache.Tier, max int) *readers {
	return &readers{store: store, tier: tier, max: max, entries: map[string]*list.Element{}}
}

// open returns the reader of object key, opening it at most once at a time:
// concurrent callers wait for the first one's open. Failed opens are not kept.
func (rs *readers) open(ctx context.Context, key string) (*sstable.Reader, error) {
	rs.mu.Lock()
	for {
		el, ok := rs.entries[key]
		if !ok {
			break
		}
		rs.lru.MoveToFront(el)
		e := el.Value.(*readerEntry)
		rs.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err == nil {
			return e.r, nil
		}
		// The open we waited for failed, perhaps only because its
		// caller gave up: try again under our own context.
		rs.mu.Lock()
	}
	e := &readerEntry{key: key, done: make(chan struct{})}
	rs.entries[key] = rs.lru.PushFront(e)
	rs.mu.Unlock()

	r, err := rs.load(ctx, key)
	rs.mu.Lock()
	if err != nil {
		// Forget the entry before waking its waiters, so that they open
		// the object afresh.
		if el, ok := rs.entries[key]; ok && el.Value == e {
			rs.lru.Remove(el)
			delete(rs.entries, key)
		}
	}
	// Evict after the open, so that failed opens keep the readers that
	// work. An entry evicted while it opens still serves its waiters.
	for rs.lru.Len() > rs.max {
		old := rs.lru.Back()
		rs.lru.Remove(old)
		delete(rs.entries, old.Value.(*readerEntry).key)
	}
	rs.mu.Unlock()
	e.r, e.err = r, err
	close(e.done)
	return r, err
}

func (rs *readers) load(ctx context.Context, key string) (*sstable.Reader, error) {
	obj, err := objectstore.NewReaderAt(ctx, rs.store, key)
	if err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", key, err)
	}
	var src sstable.ReaderAt = obj
	if rs.tier != nil {
		src = cache.NewReaderAt(rs.tier, key, obj)
	}
	r, err := sstable.Open(ctx, src, obj.Size(), sstable.ReaderOptions{Split: splitPartition})
	if err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", key, err)
	}
	return r, nil
}

// len returns the number of readers kept.
func (rs *readers) len() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.lru.Len()
}

// splitPartition is the flushes' Split (ingest): the partition prefix of a
// storage key, which SSTable filters hold.
func splitPartition(key []byte) int {
	n, err := keys.PartitionPrefixLen(key)
	if err != nil {
		return len(key)
	}
	return n
}
