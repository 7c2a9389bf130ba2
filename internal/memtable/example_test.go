package memtable_test

import (
	"fmt"
	"strings"

	"github.com/sedimentdb/sediment/internal/memtable"
)

func Example() {
	m := memtable.New(memtable.Options{
		// Keep the longer value, standing in for the data model's merge.
		Merge: func(dst, a, b []byte) ([]byte, error) {
			if len(b) > len(a) {
				a = b
			}
			return append(dst, a...), nil
		},
	})
	// The writer stages a batch, then publishes it at once.
	m.Set([]byte("k1"), []byte("a"))
	m.Set([]byte("k2"), []byte("b"))
	m.Commit()
	before := m.Snapshot()

	m.Set([]byte("k1"), []byte("longer"))
	m.Commit()
	after := m.Snapshot()

	for _, s := range []memtable.Snapshot{before, after} {
		var entries []string
		it := s.NewIter(nil, nil)
		for ok := it.First(); ok; ok = it.Next() {
			entries = append(entries, fmt.Sprintf("%s=%s", it.Key(), it.Value()))
		}
		it.Close()
		fmt.Println(strings.Join(entries, " "))
	}
	// Output:
	// k1=a k2=b
	// k1=longer k2=b
}
