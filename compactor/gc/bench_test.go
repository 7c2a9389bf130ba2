package gc

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/manifest"
)

// BenchmarkCollect measures a pass that deletes and unlists n garbage
// objects of one table and range: the cost per object of the object-store
// delete and of the share of the manifest update, against the file backend
// and an embedded NATS.
func BenchmarkCollect(b *testing.B) {
	for _, n := range []int{16, 256} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			e := newEnv(b)
			c := e.collector("bench", nil)
			lo, hi := manifest.RangeBounds(0, ranges)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				add := make([]manifest.SSTable, n)
				errs := make([]error, n)
				var wg sync.WaitGroup
				for j := range add {
					key := fmt.Sprintf("obj/%d/%d", i, j)
					add[j] = manifest.SSTable{Key: key, Size: 1, MinToken: lo, MaxToken: hi}
					wg.Go(func() { _, errs[j] = e.store.Put(e.ctx, key, []byte("x")) })
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					b.Fatal(err)
				}
				if _, err := e.m.CommitSSTables(e.ctx, manifest.Commit{Table: e.table, Range: 0, Add: add}); err != nil {
					b.Fatal(err)
				}
				if _, err := e.m.DropSSTables(e.ctx, e.table); err != nil {
					b.Fatal(err)
				}
				e.clock.Add(2 * time.Hour)
				b.StartTimer()
				st, err := c.Collect(e.ctx)
				if err != nil || st.Deleted != n {
					b.Fatalf("pass: %+v, %v", st, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
		})
	}
}

// BenchmarkOrphanSweep measures a sweep over n objects under the swept
// prefixes, all referenced by live SSTables of one table: the listing,
// the catalog read and the comparison, which every sweep pays however few
// orphans it finds.
func BenchmarkOrphanSweep(b *testing.B) {
	for _, n := range []int{256, 1024} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			e := newEnv(b)
			e.schemaTable()
			add := make([]manifest.SSTable, n)
			lo, hi := manifest.RangeBounds(0, ranges)
			for j := range add {
				key := fmt.Sprintf("sst/n1/%06d.sst", j)
				if _, err := e.store.Put(e.ctx, key, []byte("x")); err != nil {
					b.Fatal(err)
				}
				add[j] = manifest.SSTable{Key: key, Size: 1, MinToken: lo, MaxToken: hi}
			}
			if _, err := e.m.CommitSSTables(e.ctx, manifest.Commit{Table: e.table, Range: 0, Add: add}); err != nil {
				b.Fatal(err)
			}
			c := e.orphanCollector("n1", nil)
			b.ResetTimer()
			for range b.N {
				var st Stats
				if err := c.sweep(e.ctx, &st); err != nil || st.Orphans+st.Suspects+st.YoungOrphans != 0 {
					b.Fatalf("sweep: %+v, %v", st, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
		})
	}
}
