package bulk

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// The sorter spills to runs past its limit; the merge returns every key
// once, in order, with the values written to it merged.
func TestSorterSpillsAndMerges(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	a, b := newSorter(fs, "tmp", "a", 4<<10), newSorter(fs, "tmp", "b", 4<<10)
	want := map[string][]byte{}
	for i := range 3000 {
		k := []byte(fmt.Sprintf("key-%05d", rnd.IntN(1000)))
		v := model.AppendRow(nil, &model.Row{Cells: []model.Cell{{Column: 1, Timestamp: int64(i), Value: []byte{byte(i)}}}})
		if old, ok := want[string(k)]; ok {
			m, err := model.Merge(nil, old, v)
			if err != nil {
				t.Fatal(err)
			}
			want[string(k)] = m
		} else {
			want[string(k)] = v
		}
		s := a
		if i%2 == 1 {
			s = b
		}
		if err := s.add(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if len(a.runs) < 2 || len(b.runs) < 2 {
		t.Fatalf("runs %d and %d: the sorters did not spill", len(a.runs), len(b.runs))
	}
	var srcs []source
	for _, s := range []*sorter{a, b} {
		ss, err := s.sources()
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, ss...)
	}
	// More runs than one merge may read: reduce merges them first.
	if len(srcs) <= 4 {
		t.Fatalf("%d sources, want more than the fan-in", len(srcs))
	}
	srcs, err := reduce(fs, "tmp", srcs, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) > 4 {
		t.Fatalf("%d sources after reduce", len(srcs))
	}
	var last []byte
	n := 0
	err = merge(srcs, func(k, v []byte) error {
		if last != nil && bytes.Compare(last, k) >= 0 {
			t.Fatalf("key %q after %q", k, last)
		}
		last = bytes.Clone(k)
		if !bytes.Equal(v, want[string(k)]) {
			t.Fatalf("key %q: merged value differs", k)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Fatalf("%d keys, want %d", n, len(want))
	}
	a.remove()
	b.remove()
}
