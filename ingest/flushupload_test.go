package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/objectstore/faultstore"
)

// storedCommitter checks, at every commit, that each SSTable of the flush
// is stored whole: a flush must finish every upload before committing.
type storedCommitter struct {
	*MemCommitter
	store *faultstore.Store
	t     *testing.T
}

func (c storedCommitter) Commit(ctx context.Context, f Flush) error {
	for _, t := range f.Tables {
		a, err := c.store.Head(ctx, t.Key)
		if err != nil {
			c.t.Errorf("commit of %s before its upload finished: %v", t.Key, err)
		} else if a.Size != t.Size {
			c.t.Errorf("commit of %s with %d bytes stored, %d written", t.Key, a.Size, t.Size)
		}
	}
	return c.MemCommitter.Commit(ctx, f)
}

// TestFlushWaitsForUploads flushes memtables of several tables, each an
// SSTable, while the bucket is slow to finish uploads and, once, fails to
// finish the second table's: nothing is committed before every object is
// stored, the failed flush is retried, and every row is readable.
func TestFlushWaitsForUploads(t *testing.T) {
	e := newEnv(t)
	const tables = 4
	e.faults.Inject(faultstore.Rule{Op: faultstore.OpClose, KeyPrefix: fmt.Sprintf("sst/%08x/", 2), Times: 1, Err: errors.New("test: upload lost")})
	e.faults.Inject(faultstore.Rule{Op: faultstore.OpClose, Latency: 20 * time.Millisecond})
	s, err := Open(context.Background(), e.cfg, 7, NodeDeps{
		FS:         e.fs,
		Store:      e.faults,
		Committer:  storedCommitter{MemCommitter: e.committer, store: e.faults, t: t},
		Reader:     e.committer,
		Registerer: prometheus.NewRegistry(),
		ChunkSize:  4 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	want := map[storage.TableID]int{}
	for round := range 3 {
		for i := range 40 {
			table := storage.TableID(1 + i%tables)
			if err := s.Apply(ctx, rowMutation(table, "p"+strconv.Itoa(i), int64(round), 1, "v")); err != nil {
				t.Fatal(err)
			}
			want[table]++
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := counterValue(s.m.flushFailures); n != 1 {
		t.Fatalf("%v failed flushes, want the 1 whose upload was lost", n)
	}
	for table := storage.TableID(1); table <= tables; table++ {
		if n := len(e.committer.SSTables(table)); n != 3 {
			t.Fatalf("table %d: %d SSTables committed, want one per flush", table, n)
		}
		if got := contents(t, s, e.committer, table); len(got) != want[table] {
			t.Fatalf("table %d: %d rows readable, %d written", table, len(got), want[table])
		}
	}
}
