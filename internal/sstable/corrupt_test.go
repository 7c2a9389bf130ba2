package sstable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// readAll opens data and reads every entry both ways and by Get. It returns
// the first error; a nil error means the table read back exactly as es.
func readAll(data []byte, es []entry) error {
	ctx := context.Background()
	r, err := Open(ctx, FromReaderAt(bytes.NewReader(data)), int64(len(data)), ReaderOptions{})
	if err != nil {
		return err
	}
	it := r.NewIter(ctx, nil, nil)
	defer it.Close()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if es != nil && (i >= len(es) || !bytes.Equal(it.Key(), es[i].key) || !bytes.Equal(it.Value(), es[i].value)) {
			return fmt.Errorf("wrong data at entry %d", i)
		}
		i++
	}
	if err := it.Error(); err != nil {
		return err
	}
	for ok := it.Last(); ok; ok = it.Prev() {
	}
	if err := it.Error(); err != nil {
		return err
	}
	for _, e := range es {
		if _, _, err := r.Get(ctx, e.key); err != nil {
			return err
		}
	}
	if es != nil && i != len(es) {
		return fmt.Errorf("read %d entries, want %d", i, len(es))
	}
	return nil
}

// TestBitFlipsAreDetected flips one bit at every position of small tables:
// every byte is under a checksum, so each flip must be reported as ErrCorrupt
// by Open or by the first read of the damaged block, never as wrong data.
func TestBitFlipsAreDetected(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	es := randomEntries(rng, 40)
	for _, c := range compressions {
		t.Run(c.String(), func(t *testing.T) {
			data, _ := writeTable(t, es, WriterOptions{BlockSize: 512, Compression: c, Split: func(k []byte) int { return min(len(k), 2) }})
			if err := readAll(data, es); err != nil {
				t.Fatal(err)
			}
			step := max(1, len(data)/600)
			for pos := 0; pos < len(data); pos += step {
				bad := bytes.Clone(data)
				bad[pos] ^= 1 << rng.IntN(8)
				if err := readAll(bad, es); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("flip at %d of %d: got %v, want ErrCorrupt", pos, len(data), err)
				}
			}
		})
	}
}

func TestTruncationsAreDetected(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(7, 8)), 100)
	data, _ := writeTable(t, es, WriterOptions{BlockSize: 256, Compression: S2})
	for n := 0; n < len(data); n += 7 {
		if err := readAll(data[:n], es); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: got %v, want ErrCorrupt", n, err)
		}
	}
}

// shortReaderAt claims a larger object than it holds, as a stale size would.
type shortReaderAt struct{ data []byte }

func (s shortReaderAt) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	return bytes.NewReader(s.data).ReadAt(p, off)
}

func TestShortReadIsAnError(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(9, 10)), 100)
	data, _ := writeTable(t, es, WriterOptions{BlockSize: 256})
	r, err := Open(context.Background(), shortReaderAt{data}, int64(len(data)), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.r = shortReaderAt{data[:len(data)/2]}
	it := r.NewIter(context.Background(), nil, nil)
	for ok := it.First(); ok; ok = it.Next() {
	}
	if it.Error() == nil {
		t.Fatal("scan over a short object succeeded")
	}
}

func TestCanceledContext(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(11, 12)), 100)
	data, _ := writeTable(t, es, WriterOptions{BlockSize: 256})
	r := openTable(t, data, ReaderOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := r.Get(ctx, es[0].key); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with canceled context: %v", err)
	}
	it := r.NewIter(ctx, nil, nil)
	if it.First() || !errors.Is(it.Error(), context.Canceled) {
		t.Fatalf("iterator with canceled context: %v", it.Error())
	}
}
