package memtable

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func alignUp(n int64) int64 { return (n + align - 1) &^ (align - 1) }

// entrySize returns the arena bytes of node n and its index record.
func entrySize(m *Memtable, n uint32) int64 {
	meta := *m.word(n, nodeMeta)
	h, klen := int64(meta&0xff), int64(meta>>8)
	size := alignUp(nodeSize + klen + int64(*m.word(n, nodeValLen)))
	if h > 1 {
		size += alignUp(indexNext1 + 4*(h-1))
	}
	return size
}

// dirSize returns the bytes of the current directory.
func dirSize(m *Memtable) int64 {
	if d := m.dir.Load(); d != nil {
		return int64(len(d.slots)) * slotSize
	}
	return 0
}

// recordSizes walks every node and version and sums their arena bytes.
func recordSizes(m *Memtable) int64 {
	total := int64(headSize)
	for n := m.next(m.head); n != 0; n = m.next(n) {
		total += entrySize(m, n)
		for v := *m.word(n, nodeHead); v != 0; v = *m.word(v, versionPrev) {
			total += alignUp(versionHeader + int64(*m.word(v, versionValLen)))
		}
	}
	return total
}

// TestSizeExact checks that each Set grows Size by exactly the bytes of the
// node or version it adds, and that Size is the sum of all records.
func TestSizeExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := New(Options{Merge: maxMerge})
	if m.Size() != headSize {
		t.Fatalf("empty Size = %d, want %d", m.Size(), headSize)
	}
	for i := range 3000 {
		k := fmt.Appendf(nil, "%08x-row-%d", rng.Uint32N(64), rng.IntN(20))
		v := make([]byte, rng.IntN(300))
		for j := range v {
			v[j] = byte(rng.IntN(255))
		}
		n, found := m.seekGE(k)
		var oldLen int
		if found {
			oldLen = len(m.versionValue(n, *m.word(n, nodeHead)))
		}
		before, dirBefore := m.Size(), m.dirSize.Load()
		mustSet(t, m, k, v)
		var want int64
		if found {
			merged := m.versionValue(n, *m.word(n, nodeHead))
			if len(merged) != len(v) && len(merged) != oldLen {
				t.Fatalf("merged value has length %d, inputs %d and %d", len(merged), oldLen, len(v))
			}
			want = alignUp(versionHeader + int64(len(merged)))
		} else {
			n, _ = m.seekGE(k)
			want = entrySize(m, n) + m.dirSize.Load() - dirBefore
		}
		if got := m.Size() - before; got != want {
			t.Fatalf("Set %d grew Size by %d, want %d", i, got, want)
		}
		if i%500 == 0 {
			m.Commit()
		}
	}
	if got, want := m.Size(), recordSizes(m)+dirSize(m); got != want {
		t.Fatalf("Size = %d, records and directory sum to %d", got, want)
	}
	if dirSize(m) == 0 {
		t.Fatal("test never built a directory")
	}
}

// chunkMirror restates the arena's allocation rule to predict the chunk
// tails it skips.
type chunkMirror struct {
	chunk, off, waste int64
}

func (c *chunkMirror) alloc(size int64) {
	if c.off != 0 && c.off+size > c.chunk {
		c.waste += c.chunk - c.off
		c.off = 0
	}
	c.off += size
	if c.off > c.chunk {
		c.off = 0 // an oversized chunk is used up
	}
}

// TestSizeChunkTails checks that the tail of a chunk skipped because an
// entry did not fit, and entries larger than a chunk, are counted exactly.
func TestSizeChunkTails(t *testing.T) {
	const chunk = 4096
	m := New(Options{ChunkSize: chunk})
	rng := rand.New(rand.NewPCG(5, 6))
	nodes := chunkMirror{chunk: chunk, off: nodeSize}
	index := chunkMirror{chunk: chunk, off: indexNext1 + 4*(maxHeight-1)}
	for i := range 3000 {
		vlen := rng.IntN(900)
		if i%100 == 99 {
			vlen = chunk + rng.IntN(3*chunk) // a chunk of its own
		}
		k := fmt.Appendf(nil, "key-%06d", rng.IntN(1<<20))
		if _, found := m.seekGE(k); found {
			continue
		}
		mustSet(t, m, k, make([]byte, vlen))
		n, _ := m.seekGE(k)
		nodes.alloc(alignUp(nodeSize + int64(len(k)) + int64(vlen)))
		if h := int64(*m.word(n, nodeMeta) & 0xff); h > 1 {
			index.alloc(alignUp(indexNext1 + 4*(h-1)))
		}
		if i%25 != 0 && i != 2999 {
			continue // walking every record is O(n)
		}
		waste := nodes.waste + index.waste + dirSize(m)
		if got, want := m.Size(), recordSizes(m)+waste; got != want {
			t.Fatalf("after %d sets Size = %d, want records %d + waste and directory %d", i+1, got, want-waste, waste)
		}
	}
	if nodes.waste == 0 || index.waste == 0 {
		t.Fatal("test never filled a chunk")
	}
}
