// Package workload makes the deterministic data sets that benchmarks share,
// so that comparisons in different packages and modules run on the same bytes.
package workload

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
)

// KV is one key-value entry.
type KV struct{ Key, Value []byte }

// FlushRows returns n rows sorted by key, shaped like a memtable flush:
// partitions of 1-4 rows, keys of 32 bytes (8-byte random token, 12-byte
// partition key, 12-byte clustering key), values of 100-200 bytes that
// compress about 2:1. The same n always gives the same bytes.
func FlushRows(n int) []KV {
	rng := rand.New(rand.NewPCG(42, 42))
	words := []string{"sediment", "bucket", "tombstone", "partition", "cell", "row", "token", "flush"}
	out := make([]KV, 0, n+4)
	for p := 0; len(out) < n; p++ {
		pk := binary.BigEndian.AppendUint64(nil, rng.Uint64())
		pk = fmt.Appendf(pk, "user%08d", p)
		for c := range 1 + rng.IntN(4) {
			key := fmt.Appendf(slices.Clone(pk), "ev%010d", c)
			size := 100 + rng.IntN(101)
			v := make([]byte, 0, size+16)
			for len(v) < size {
				if rng.IntN(2) == 0 {
					v = append(v, words[rng.IntN(len(words))]...)
				} else {
					v = binary.BigEndian.AppendUint32(v, rng.Uint32())
				}
			}
			out = append(out, KV{key, v[:size]})
		}
	}
	out = out[:n]
	slices.SortFunc(out, func(a, b KV) int { return bytes.Compare(a.Key, b.Key) })
	return out
}

// Size is the number of key and value bytes in rows.
func Size(rows []KV) int64 {
	var n int64
	for _, r := range rows {
		n += int64(len(r.Key) + len(r.Value))
	}
	return n
}
