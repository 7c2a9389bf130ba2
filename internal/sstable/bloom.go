package sstable

import (
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
)

// DefaultBloomBitsPerKey gives a false-positive rate near 1%.
const DefaultBloomBitsPerKey = 10

// bloomHash is the hash a filter stores; the format fixes it to XXH64.
func bloomHash(key []byte) uint64 { return xxhash.Sum64(key) }

// bloomProbes is the number of probes minimizing false positives for a
// filter with bitsPerKey bits per key: bitsPerKey·ln 2.
func bloomProbes(bitsPerKey int) int {
	return min(max(int(math.Round(float64(bitsPerKey)*math.Ln2)), 1), 30)
}

// BloomFPRate is the expected false-positive rate of a filter with
// bitsPerKey bits per key: (1 - e^(-k/b))^k.
func BloomFPRate(bitsPerKey int) float64 {
	k := float64(bloomProbes(bitsPerKey))
	return math.Pow(1-math.Exp(-k/float64(bitsPerKey)), k)
}

// buildBloom returns the filter block for the given key hashes: a bitmap of
// m bytes followed by one byte holding the number of probes.
func buildBloom(hashes []uint64, bitsPerKey int) []byte {
	nbits := max(uint64(len(hashes))*uint64(bitsPerKey), 64)
	nbytes := (nbits + 7) / 8
	nbits = nbytes * 8
	k := bloomProbes(bitsPerKey)
	out := make([]byte, nbytes+1)
	for _, h := range hashes {
		delta := h>>33 | 1
		for range k {
			pos := h % nbits
			out[pos/8] |= 1 << (pos % 8)
			h += delta
		}
	}
	out[nbytes] = byte(k)
	return out
}

// bloomFilter is a decoded filter block.
type bloomFilter struct {
	bits  []byte
	nbits uint64
	k     int
}

func decodeBloom(b []byte) (bloomFilter, error) {
	if len(b) < 2 {
		return bloomFilter{}, fmt.Errorf("%w: filter of %d bytes", ErrCorrupt, len(b))
	}
	k := int(b[len(b)-1])
	if k < 1 || k > 30 {
		return bloomFilter{}, fmt.Errorf("%w: filter with %d probes", ErrCorrupt, k)
	}
	bits := b[:len(b)-1]
	return bloomFilter{bits: bits, nbits: uint64(len(bits)) * 8, k: k}, nil
}

func (f *bloomFilter) mayContain(h uint64) bool {
	delta := h>>33 | 1
	for range f.k {
		pos := h % f.nbits
		if f.bits[pos/8]&(1<<(pos%8)) == 0 {
			return false
		}
		h += delta
	}
	return true
}
