package memtable

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDirectory fills a memtable with random-token keys, checks that every
// directory slot holds a record below its bucket, and that searches started
// from the directory find what a sorted slice finds.
func TestDirectory(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	m := New(Options{})
	n := 20000
	if testing.Short() {
		n = 5000
	}
	keys := make([][]byte, 0, n)
	for range n {
		k := binary.BigEndian.AppendUint64(nil, rng.Uint64()>>rng.UintN(3)) // uneven buckets too
		k = append(k, byte(rng.IntN(3)))
		if err := m.Set(k, k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	m.Commit()
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)

	d := m.dir.Load()
	if d == nil || len(d.slots) < m.records {
		t.Fatalf("directory has %d slots for %d index records", len(d.slots), m.records)
	}
	for b, r := range d.slots {
		if r != 0 && m.prefix(r)>>d.shift >= uint64(b) {
			t.Fatalf("slot %d holds a record of bucket %d", b, m.prefix(r)>>d.shift)
		}
	}

	s := m.Snapshot()
	for _, k := range keys {
		if v, ok := s.Get(k); !ok || !bytes.Equal(v, k) {
			t.Fatalf("Get(%x) = %x, %v", k, v, ok)
		}
	}
	it := s.NewIter(nil, nil)
	for range 2000 {
		probe := binary.BigEndian.AppendUint64(nil, rng.Uint64())
		i, _ := slices.BinarySearchFunc(keys, probe, bytes.Compare)
		if ok := it.SeekGE(probe); ok != (i < len(keys)) || ok && !bytes.Equal(it.Key(), keys[i]) {
			t.Fatalf("SeekGE(%x) = %v at %x, want index %d", probe, ok, it.Key(), i)
		}
		if ok := it.SeekLT(probe); ok != (i > 0) || ok && !bytes.Equal(it.Key(), keys[i-1]) {
			t.Fatalf("SeekLT(%x) = %v, want index %d", probe, ok, i-1)
		}
	}
}
