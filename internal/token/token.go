// Package token computes partition tokens exactly as Cassandra's
// Murmur3Partitioner does, so that token(), driver token-awareness and
// token-range scans agree with every Cassandra driver.
//
// The hash is the x64 128-bit variant of MurmurHash3 with seed 0, with one
// deliberate deviation inherited from Cassandra's MurmurHash.java: the tail
// bytes (the final len%16 bytes) are read as signed Java bytes and so are
// sign-extended before being shifted into place. Full 16-byte blocks are read
// as unsigned little-endian words. The token is the first 64-bit half of the
// hash, with math.MinInt64 mapped to math.MaxInt64 because Cassandra reserves
// the minimum value for the ring's minimum token. An empty key is the minimum
// token itself (Cassandra never hashes it).
package token

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Min is the ring's minimum token. No non-empty key hashes to it; it is the
// token of the empty key and the lower bound of full-ring scans.
const Min int64 = math.MinInt64

// Max is the largest token.
const Max int64 = math.MaxInt64

const (
	c1 = 0x87c37b91114253d5
	c2 = 0x4cf5ad432745937f
)

// Murmur3 returns the Murmur3Partitioner token of a serialized partition key.
func Murmur3(key []byte) int64 {
	if len(key) == 0 {
		return Min
	}
	h1 := int64(hash64(key))
	if h1 == math.MinInt64 {
		return math.MaxInt64
	}
	return h1
}

// hash64 returns the first half of Cassandra's hash3_x64_128(key, seed 0).
func hash64(key []byte) uint64 {
	var h1, h2 uint64
	n := len(key)
	p := key
	for len(p) >= 16 {
		k1 := binary.LittleEndian.Uint64(p)
		k2 := binary.LittleEndian.Uint64(p[8:])
		p = p[16:]

		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729

		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}

	// Tail: each byte is sign-extended (Java's (long) of a signed byte), so
	// a byte >= 0x80 also flips every bit above its position.
	var k1, k2 uint64
	switch len(p) {
	case 15:
		k2 ^= sx(p[14]) << 48
		fallthrough
	case 14:
		k2 ^= sx(p[13]) << 40
		fallthrough
	case 13:
		k2 ^= sx(p[12]) << 32
		fallthrough
	case 12:
		k2 ^= sx(p[11]) << 24
		fallthrough
	case 11:
		k2 ^= sx(p[10]) << 16
		fallthrough
	case 10:
		k2 ^= sx(p[9]) << 8
		fallthrough
	case 9:
		k2 ^= sx(p[8])
		k2 *= c2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= c1
		h2 ^= k2
		fallthrough
	case 8:
		k1 ^= sx(p[7]) << 56
		fallthrough
	case 7:
		k1 ^= sx(p[6]) << 48
		fallthrough
	case 6:
		k1 ^= sx(p[5]) << 40
		fallthrough
	case 5:
		k1 ^= sx(p[4]) << 32
		fallthrough
	case 4:
		k1 ^= sx(p[3]) << 24
		fallthrough
	case 3:
		k1 ^= sx(p[2]) << 16
		fallthrough
	case 2:
		k1 ^= sx(p[1]) << 8
		fallthrough
	case 1:
		k1 ^= sx(p[0])
		k1 *= c1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= c2
		h1 ^= k1
	}

	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1 = fmix(h1)
	h2 = fmix(h2)
	h1 += h2
	return h1
}

// sx sign-extends a byte the way Java widens a signed byte to long.
func sx(b byte) uint64 { return uint64(int64(int8(b))) }

func fmix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// Shard returns which of n equal slices of the ring, numbered in token
// order, holds tok: how an ingest node splits its tokens among its shards.
func Shard(tok int64, n int) int {
	// Flipping the sign bit maps the signed ring onto [0, 2^64) in order;
	// the high word of u*n is then floor(u*n / 2^64).
	hi, _ := bits.Mul64(uint64(tok)^1<<63, uint64(n))
	return int(hi)
}
