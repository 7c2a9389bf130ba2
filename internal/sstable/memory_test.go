package sstable

import (
	"encoding/binary"
	"io"
	"runtime"
	"testing"
)

// TestWriterMemoryBounded writes 64 MiB through a Writer and checks that the
// live heap stays near a block, the buffer and the index, not the data.
func TestWriterMemoryBounded(t *testing.T) {
	const valueLen = 4 << 10
	n := 16 << 10 // 64 MiB of values
	if testing.Short() {
		n /= 4
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	w := NewWriter(io.Discard, WriterOptions{Compression: S2, BlockSize: 32 << 10, BufferSize: 64 << 10})
	key := make([]byte, 16)
	value := make([]byte, valueLen)
	base := heap()
	var peak uint64
	for i := range n {
		binary.BigEndian.PutUint64(key, uint64(i))
		binary.BigEndian.PutUint64(value, uint64(i)*0x9e3779b97f4a7c15) // defeat compression a little
		if err := w.Add(key, value); err != nil {
			t.Fatal(err)
		}
		if i%(n/8) == n/8-1 {
			peak = max(peak, heap()-min(base, heap()))
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// One block (and its compressed copy), the buffer, an index entry and a
	// filter hash per 8 entries: about 1 MiB at most.
	if limit := uint64(2 << 20); peak > limit {
		t.Fatalf("writer heap grew by %d bytes while writing %d MiB (limit %d)", peak, n*valueLen>>20, limit)
	}
	t.Logf("heap growth %d KiB for %d MiB written", peak>>10, n*valueLen>>20)
}
