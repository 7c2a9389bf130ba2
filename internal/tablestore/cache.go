package tablestore

import (
	"container/list"
	"context"
	"sync"

	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/objectstore"
)

// DefaultCachedReaders is the number of readers a ReaderCache keeps open
// when its size is not given.
const DefaultCachedReaders = 1024

// ReaderCache keeps opened SSTable readers by object key, least recently
// used first out. Objects never change, so a kept reader is never stale;
// one that is evicted is merely opened again (one ranged read of the
// object's tail). It is safe for concurrent use.
type ReaderCache struct {
	store  objectstore.Store
	blocks BlockCache // nil: blocks are read from the store directly
	max    int

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

// NewReaderCache returns a cache of at most max readers of SSTables in
// store (DefaultCachedReaders if max is 0 or less), whose blocks are read
// through blocks if it is not nil.
func NewReaderCache(store objectstore.Store, blocks BlockCache, max int) *ReaderCache {
	if max <= 0 {
		max = DefaultCachedReaders
	}
	return &ReaderCache{store: store, blocks: blocks, max: max, entries: map[string]*list.Element{}}
}

// Open returns the reader of object key, opening it at most once at a
// time: concurrent callers wait for the first one's open. Failed opens are
// not kept.
func (rs *ReaderCache) Open(ctx context.Context, key string) (*sstable.Reader, error) {
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

	r, err := Open(ctx, rs.store, key, rs.blocks)
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

// Len returns the number of readers kept.
func (rs *ReaderCache) Len() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.lru.Len()
}
