package sstable

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"
)

// FuzzBlockIter feeds arbitrary raw blocks and operation sequences to the
// block iterator: it must never panic, only report ErrCorrupt, and its
// forward and reverse walks must agree.
func FuzzBlockIter(f *testing.F) {
	for _, restart := range []int{1, 2, 16} {
		b := blockBuilder{restartInterval: restart}
		var last []byte
		for _, e := range randomEntries(rand.New(rand.NewPCG(1, uint64(restart))), 20) {
			b.add(e.key, e.value, sharedPrefix(e.key, last))
			last = e.key
		}
		raw := b.finish()
		f.Add(bytes.Clone(raw), []byte{0, 1, 2, 3, 4, 5})
		f.Add(raw[:len(raw)/2], []byte{3, 5, 5})
	}
	f.Add([]byte{0, 0, 0, 0}, []byte{0})
	f.Fuzz(func(t *testing.T, raw, ops []byte) {
		var it blockIter
		if err := it.init(raw); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatal(err)
			}
			return
		}
		var fwd, rev [][]byte
		for ok := it.First(); ok; ok = it.Next() {
			fwd = append(fwd, bytes.Clone(it.key))
		}
		fwdErr := it.err
		it.err = nil
		for ok := it.Last(); ok; ok = it.Prev() {
			rev = append(rev, bytes.Clone(it.key))
		}
		if fwdErr == nil && it.err == nil {
			if len(fwd) != len(rev) {
				t.Fatalf("forward walk saw %d entries, reverse %d", len(fwd), len(rev))
			}
			for i := range fwd {
				if !bytes.Equal(fwd[i], rev[len(rev)-1-i]) {
					t.Fatalf("entry %d differs between walks", i)
				}
			}
		}
		it.err = nil
		for i, op := range ops {
			key := ops[i:min(len(ops), i+3)]
			switch op % 6 {
			case 0:
				it.SeekGE(key)
			case 1:
				it.SeekLT(key)
			case 2:
				it.First()
			case 3:
				it.Last()
			case 4:
				it.Next()
			case 5:
				it.Prev()
			}
			if it.err != nil && !errors.Is(it.err, ErrCorrupt) {
				t.Fatal(it.err)
			}
		}
	})
}

// FuzzDecodeBlock checks decompression of arbitrary payloads whose checksum
// is right, as only a forged block could be.
func FuzzDecodeBlock(f *testing.F) {
	raw := bytes.Repeat([]byte("sediment block "), 50)
	for _, c := range compressions {
		cp := compressor{kind: c}
		p, kind := cp.compress(raw)
		f.Add(bytes.Clone(p), byte(kind))
		f.Add(bytes.Clone(p[:len(p)/2]), byte(kind))
	}
	f.Fuzz(func(t *testing.T, payload []byte, kind byte) {
		phys := appendTrailer(bytes.Clone(payload), payload, Compression(kind))
		out, err := decodeBlock(phys, nil, 1<<20)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatal(err)
			}
			return
		}
		if Compression(kind) == NoCompression && !bytes.Equal(out, payload) {
			t.Fatal("uncompressed block changed")
		}
		phys[0] ^= 1 // any flip under the checksum must be caught
		if len(payload) > 0 {
			if _, err := decodeBlock(phys, nil, 1<<20); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flipped block: %v", err)
			}
		}
	})
}

// FuzzOpen opens and reads mutated tables: no panics, and every failure is
// ErrCorrupt.
func FuzzOpen(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, c := range compressions {
		es := randomEntries(rng, 12)
		var buf bytes.Buffer
		w := NewWriter(&buf, WriterOptions{BlockSize: 200, Compression: c, RestartInterval: 4})
		for _, e := range es {
			if err := w.Add(e.key, e.value); err != nil {
				f.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			f.Fatal(err)
		}
		data := buf.Bytes()
		f.Add(bytes.Clone(data))
		f.Add(data[:len(data)-1])
		f.Add(data[len(data)/3:])
		flipped := bytes.Clone(data)
		flipped[rng.IntN(len(flipped))] ^= 0x10
		f.Add(flipped)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := readAll(data, nil); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatal(err)
		}
		// Bounded iteration and seeks over whatever opened.
		r, err := Open(context.Background(), FromReaderAt(bytes.NewReader(data)), int64(len(data)), ReaderOptions{TailSize: 100})
		if err != nil {
			return
		}
		it := r.NewIter(context.Background(), []byte("a"), []byte("c"))
		it.SeekGE([]byte("b"))
		it.Prev()
		it.SeekLT([]byte("b"))
		it.Next()
		if err := it.Error(); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatal(err)
		}
	})
}
