package cache_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"

	"github.com/sedimentdb/sediment/frontend/cache"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// store stands in for an object in the bucket, counting its ranged reads.
type store struct {
	data  *bytes.Reader
	reads int
}

func (s *store) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	s.reads++
	return s.data.ReadAt(p, off)
}

func Example() {
	dir, err := os.MkdirTemp("", "cache")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	tiers, err := cache.New(cache.Config{MemoryBytes: 64 << 20, DiskBytes: 1 << 30, DiskDir: dir}, vfs.Default, cache.Options{Name: "blocks"})
	if err != nil {
		log.Fatal(err)
	}
	obj := &store{data: bytes.NewReader(bytes.Repeat([]byte("sediment"), 1024))}
	r := cache.NewReaderAt(tiers, "tables/ks/t/000001.sst", obj)

	block := make([]byte, 4096)
	for range 3 {
		if _, err := r.ReadAt(context.Background(), block, 4096); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("%s… read %d time(s) from the store\n", block[:8], obj.reads)
	// Output: sediment… read 1 time(s) from the store
}
