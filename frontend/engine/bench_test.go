package engine

import (
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/cache"
)

const benchParts, benchRows = 1000, 10

// benchEnv holds benchParts partitions of benchRows rows of 100 bytes,
// flushed to SSTables if flush is set.
func benchEnv(b *testing.B, flush bool, tier cache.Tier) *testEnv {
	te := newEnvWith(b, envOptions{memtableSize: 64 << 20, tier: tier})
	now := time.Now().Unix()
	v := fmt.Sprintf("%0100d", 0)
	for p := range benchParts {
		es := make([]Entry, benchRows)
		for ck := range es {
			es[ck] = insert("p"+strconv.Itoa(p), int64(ck), 1, v, 0, now)
		}
		te.apply(es...)
	}
	if flush {
		te.flush()
	}
	return te
}

// BenchmarkRead reads whole partitions of 10 rows from the memtables,
// from SSTables whose blocks are in the memory cache, and from SSTables
// through a ranged GET per read (readers kept in both cases).
func BenchmarkRead(b *testing.B) {
	for _, c := range []struct {
		name  string
		flush bool
		tier  cache.Tier
	}{
		{"memtable", false, nil},
		{"sstable/cached", true, cache.NewMemory(256<<20, cache.Options{})},
		{"sstable/uncached", true, nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			te := benchEnv(b, c.flush, c.tier)
			now := time.Now().Unix()
			read := func(i int) {
				p, err := te.e.Read(te.ctx, Slice{Table: te.table, Key: []byte("p" + strconv.Itoa(i%benchParts)), Now: now})
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Rows) != benchRows {
					b.Fatalf("%d rows", len(p.Rows))
				}
			}
			for i := range benchParts {
				read(i) // open the readers, fill the cache
			}
			gets := te.store.gets.Load()
			i := 0
			for b.Loop() {
				read(i)
				i++
			}
			b.ReportMetric(float64(te.store.gets.Load()-gets)/float64(b.N), "GETs/op")
		})
	}
}

// BenchmarkScan reads pages of 100 rows of a whole-ring scan from SSTables
// in the memory cache.
func BenchmarkScan(b *testing.B) {
	te := benchEnv(b, true, cache.NewMemory(256<<20, cache.Options{}))
	now := time.Now().Unix()
	var after []byte
	b.SetBytes(100 * 100)
	for b.Loop() {
		page, err := te.e.Scan(te.ctx, Scan{Table: te.table, First: math.MinInt64, Last: math.MaxInt64, After: after, Limit: 100, Now: now})
		if err != nil {
			b.Fatal(err)
		}
		after = page.Next
	}
}
