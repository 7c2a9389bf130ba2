package manifest

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
)

// BenchmarkCommitSSTables measures one flush commit (compare-and-set in NATS
// plus the archived copy in the file store) as the table's live SSTable list
// grows: the whole list is one document, so its size sets the cost.
func BenchmarkCommitSSTables(b *testing.B) {
	for _, live := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			m := newEnv(b).open("bench")
			initRanges(b, m)
			ctx := context.Background()
			tbl := uuid.New()
			// One commit makes the list: committing it one SSTable at a
			// time rewrites a growing document, quadratic in live.
			base := make([]SSTable, live)
			for i := range base {
				base[i] = sst(fmt.Sprintf("base/%d", i), 0, 1)
			}
			if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: base}); err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				// A complete flush, then a compaction that found its data
				// all dead and retires it, keep the list at size. With no
				// output to carry the flush's position, the compaction
				// raises the shard's watermark to it, as the compactor's
				// commitJob does.
				key := fmt.Sprintf("new/%d", i)
				flush := sst(key, 0, 1)
				pos := LogPosition{Node: "n1", Shard: 1, Segment: 8, Offset: int64(i), Parts: 1}
				flush.Covers = []LogPosition{pos}
				if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{flush}}); err != nil {
					b.Fatal(err)
				}
				if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Remove: []string{key}, Flushed: []LogPosition{pos}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(2*b.N), "µs/commit")
		})
	}
}

// BenchmarkViewSSTables measures the read every query makes: the live
// SSTables of a table, from the View's memory.
func BenchmarkViewSSTables(b *testing.B) {
	m := newEnv(b).open("bench")
	initRanges(b, m)
	ctx := context.Background()
	tbl := uuid.New()
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{sst("a", 0, 1)}}); err != nil {
		b.Fatal(err)
	}
	v, err := m.Watch(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	for b.Loop() {
		if len(v.SSTablesInRange(tbl, testRange)) != 1 {
			b.Fatal("view lost the table")
		}
	}
}
