package compactor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// TestReadahead checks reads against the object's bytes: sequential runs
// of random lengths, as an iterator makes, with jumps forward and back and
// reads past the data region, which go to the store directly.
func TestReadahead(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		size := 1 + rng.Int64N(10_000)
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		s := newMemStore()
		s.objects["obj"] = data
		var g gauge
		chunk := 1 + rng.Int64N(2000)
		r := newReadahead(context.Background(), s, "obj", size, chunk, &g)
		limit := rng.Int64N(size + 1)
		r.setLimit(limit)
		off := int64(0)
		for range 100 {
			switch rng.IntN(10) {
			case 0: // anywhere
				off = rng.Int64N(size)
			case 1: // back a little
				off = max(0, off-rng.Int64N(100))
			}
			n := min(rng.Int64N(3*chunk+1), size-off)
			p := make([]byte, n)
			got, err := r.ReadAt(context.Background(), p, off)
			if err != nil || int64(got) != n {
				t.Fatalf("trial %d: ReadAt(%d bytes at %d): %d, %v", trial, n, off, got, err)
			}
			if !bytes.Equal(p, data[off:off+n]) {
				t.Fatalf("trial %d: wrong bytes at %d+%d (chunk %d, limit %d)", trial, off, n, chunk, limit)
			}
			if off += n; off >= size {
				off = 0
			}
		}
		if r.allocated > 2*chunk {
			t.Fatalf("trial %d: %d bytes of buffers, chunks of %d", trial, r.allocated, chunk)
		}
		if held := g.peak.Load(); held > 2*chunk {
			t.Fatalf("trial %d: held %d bytes, chunks of %d", trial, held, chunk)
		}
		r.close()
		if g.cur.Load() != 0 {
			t.Fatalf("trial %d: %d bytes held after close", trial, g.cur.Load())
		}
	}
}

func TestReadaheadErrors(t *testing.T) {
	s := newMemStore()
	s.objects["obj"] = make([]byte, 1000)
	var g gauge
	r := newReadahead(context.Background(), s, "obj", 1000, 100, &g)
	defer r.close()
	if _, err := r.ReadAt(context.Background(), make([]byte, 10), 1000); err == nil {
		t.Fatal("read past the end succeeded")
	}
	if n, err := r.ReadAt(context.Background(), make([]byte, 10), 995); n != 5 || err != io.EOF {
		t.Fatalf("short read at the end: %d, %v", n, err)
	}
	r.setLimit(900)
	// The object changes under the reader: the chunk read falls short.
	s.objects["obj"] = make([]byte, 150)
	if _, err := r.ReadAt(context.Background(), make([]byte, 300), 0); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short chunk: %v", err)
	}
	if _, err := r.ReadAt(context.Background(), make([]byte, 10), 120); err == nil {
		t.Fatal("read after a failed fetch succeeded")
	}
}
