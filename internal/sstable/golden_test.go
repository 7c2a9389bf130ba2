package sstable

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden tables in testdata/")

// goldenEntries are the contents of the golden tables: partitions of a few
// rows with compressible values, deterministic across runs and platforms.
func goldenEntries() []entry {
	rng := rand.New(rand.NewPCG(2026, 11))
	var es []entry
	for p := range 24 {
		for c := range 1 + p%3 {
			key := fmt.Appendf(nil, "%02x/part%03d/row%02d", p*10, p, c)
			words := []string{"alpha", "beta", "gamma", "delta"}
			var v []byte
			for range 4 + rng.IntN(20) {
				v = append(v, words[rng.IntN(len(words))]...)
			}
			es = append(es, entry{key, v})
		}
	}
	return es
}

func goldenOptions(c Compression) WriterOptions {
	return WriterOptions{
		BlockSize: 256, RestartInterval: 4, Compression: c, BloomBitsPerKey: 10,
		Split: func(k []byte) int { return bytes.LastIndexByte(k, '/') + 1 },
		Stats: func(k, v []byte) EntryStats {
			return EntryStats{MinTimestamp: int64(len(v)), MaxTimestamp: int64(len(v)) * 2, MinLocalDeletionTime: NoDeletionTime, Rows: 1, Cells: uint64(len(v) / 5)}
		},
		WriterID:  "golden",
		CreatedAt: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
	}
}

// TestGolden pins the format: the stored tables must still read back, and
// writing the same contents must give the same bytes. A compression
// library upgrade may change compressed bytes; rewrite (-rewrite) only
// after the read half of this test passes on the old files.
func TestGolden(t *testing.T) {
	es := goldenEntries()
	for _, c := range compressions {
		t.Run(c.String(), func(t *testing.T) {
			path := filepath.Join("testdata", "golden-"+c.String()+".sst")
			data, _ := writeTable(t, es, goldenOptions(c))
			if *rewrite {
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := readAll(want, es); err != nil {
				t.Fatalf("golden table no longer reads: %v", err)
			}
			r := openTable(t, want, ReaderOptions{})
			if p := r.Properties(); p.WriterID != "golden" || p.Partitions != 24 || p.Compression != c {
				t.Fatalf("golden properties %+v", p)
			}
			if !bytes.Equal(data, want) {
				t.Fatalf("writer output (%d bytes) differs from %s (%d bytes): the format changed", len(data), path, len(want))
			}
			if _, ok, err := r.Get(context.Background(), es[5].key); !ok || err != nil {
				t.Fatal(ok, err)
			}
		})
	}
}
