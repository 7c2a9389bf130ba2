package exec

import (
	"fmt"
	"testing"
)

// BenchmarkSystemRowOrder measures what putting a system table's rows in
// token order adds to each scan of it (each page repeats it): keying and
// sorting system_schema.columns rows for schemas of growing size.
func BenchmarkSystemRowOrder(b *testing.B) {
	cols := sysTables[ksSystemSchema]["columns"]
	for _, tables := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("tables=%d", tables), func(b *testing.B) {
			var rows [][][]byte
			for i := range tables {
				ks := fmt.Sprintf("ks%d", i%7)
				for _, c := range []string{"pk", "ck", "v", "tags", "at"} {
					rows = append(rows, columnRow(cols, ks, fmt.Sprintf("t%04d", i), c, "regular", "text", -1, false))
				}
			}
			t := *cols
			t.rows = func(*Executor) [][][]byte { return append([][][]byte(nil), rows...) }
			keep := func([][]byte) bool { return true }
			b.ReportAllocs()
			for b.Loop() {
				if _, err := t.sortedRows(nil, keep); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(rows)), "ns/row")
		})
	}
}
