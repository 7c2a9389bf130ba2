package model

import (
	"fmt"
	"testing"
)

// typicalRow is an INSERT of n columns: text, ints, a timestamp.
func typicalRow(n int, ts int64) Row {
	r := Row{Liveness: Liveness{Present: true, Timestamp: ts}}
	values := [][]byte{[]byte("alice@example.com"), {0, 0, 0, 42}, {0, 0, 1, 0x8c, 0x3a, 0x1f, 0x22, 0x10}, []byte("Paris"), {1}}
	for i := range n {
		r.Cells = append(r.Cells, Cell{Column: uint32(i + 1), Timestamp: ts, Value: values[i%len(values)]})
	}
	return r
}

var sizes = []int{1, 5, 20}

func BenchmarkAppendRow(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("cells=%d", n), func(b *testing.B) {
			r := typicalRow(n, t0)
			buf := AppendRow(nil, &r)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendRow(buf[:0], &r)
			}
		})
	}
}

func BenchmarkDecodeRow(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("cells=%d", n), func(b *testing.B) {
			r := typicalRow(n, t0)
			enc := AppendRow(nil, &r)
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			var out Row
			for b.Loop() {
				if err := DecodeRow(enc, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMerge merges an INSERT with a later UPDATE of two of its
// columns, the common case of a read or compaction meeting two versions.
func BenchmarkMerge(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("cells=%d", n), func(b *testing.B) {
			old := typicalRow(n, t0)
			upd := Row{Cells: []Cell{
				{Column: 1, Timestamp: t0 + 10, Value: []byte("bob@example.com")},
				{Column: uint32(n + 1), Timestamp: t0 + 10, LocalDeletionTime: l0, Tombstone: true},
			}}
			a, c := AppendRow(nil, &old), AppendRow(nil, &upd)
			b.SetBytes(int64(len(a) + len(c)))
			b.ReportAllocs()
			var dst []byte
			var err error
			for b.Loop() {
				if dst, err = Merge(dst[:0], a, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkValueStats(b *testing.B) {
	r := typicalRow(5, t0)
	enc := AppendRow(nil, &r)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ValueStats(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	h := Header{RangeTombstones: []RangeTombstone{
		{Start: []byte("a"), End: []byte("c"), Deletion: Deletion{MarkedForDeleteAt: t0 - 10, LocalDeletionTime: l0}},
		{Start: []byte("m"), End: []byte("p"), Deletion: Deletion{MarkedForDeleteAt: t0 - 5, LocalDeletionTime: l0}},
	}}
	r := typicalRow(5, t0)
	enc := AppendRow(nil, &r)
	b.ReportAllocs()
	var out Row
	for b.Loop() {
		if err := DecodeRow(enc, &out); err != nil {
			b.Fatal(err)
		}
		if !h.Resolve([]byte("b"), &out, l0) {
			b.Fatal("row not live")
		}
	}
}
