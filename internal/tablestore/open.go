package tablestore

import (
	"context"
	"fmt"

	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/objectstore"
)

// BlockCache puts a cache in front of the reads of an object's blocks: the
// frontend's block caches (frontend/cache) are one.
type BlockCache interface {
	// Wrap returns a ReaderAt of object that reads through the cache,
	// from src on a miss.
	Wrap(object string, src sstable.ReaderAt) sstable.ReaderAt
}

// Open opens the SSTable object key in store: a HEAD, then one ranged read
// of its tail (footer, index, filter, properties). Its data blocks are read
// through blocks, if not nil, then from the store.
func Open(ctx context.Context, store objectstore.Store, key string, blocks BlockCache) (*sstable.Reader, error) {
	obj, err := objectstore.NewReaderAt(ctx, store, key)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", key, err)
	}
	var src sstable.ReaderAt = obj
	if blocks != nil {
		src = blocks.Wrap(key, obj)
	}
	r, err := OpenAt(ctx, src, obj.Size(), 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", key, err)
	}
	return r, nil
}

// OpenAt opens an SSTable of size bytes read through src; tailSize is the
// size of the first read (sstable.DefaultTailSize if 0).
func OpenAt(ctx context.Context, src sstable.ReaderAt, size int64, tailSize int) (*sstable.Reader, error) {
	return sstable.Open(ctx, src, size, sstable.ReaderOptions{TailSize: tailSize, Split: Split})
}
