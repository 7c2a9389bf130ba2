package token

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// Tokens published by drivers that implement Cassandra's Murmur3Partitioner:
// the DataStax Python driver (tests/unit/test_metadata.py, _verify_hash) and
// the DataStax Ruby driver (spec/cassandra/murmur3_spec.rb), whose extra
// vectors cover every tail length and bytes >= 0x80 in both block and tail.
var driverVectors = []struct {
	key   []byte
	token int64
}{
	{[]byte("123"), -7468325962851647638},
	{bytes.Repeat([]byte{0x00, 0xff, 0x10, 0xfa, 0x99}, 10), 5837342703291459765},
	{bytes.Repeat([]byte{0xfe}, 8), -8927430733708461935},
	{bytes.Repeat([]byte{0x10}, 8), 1446172840243228796},
	{[]byte(strconv.FormatInt(math.MaxInt64, 10)), 7162290910810015547},
	{seq(1, 16), -5563837382979743776},
	{seq(2, 16), -1513403162740402161},
	{seq(3, 16), -495360443712684655},
	{seq(4, 16), 1734091135765407943},
	{seq(5, 16), -3199412112042527988},
	{seq(6, 16), -6316563938475080831},
	{seq(7, 16), 8228893370679682632},
	{make([]byte, 16), 5457549051747178710},
	{bytes.Repeat([]byte{0xff}, 16), -2824192546314762522},
	{bytes.Repeat([]byte{0xfe}, 16), -833317529301936754},
	{append([]byte{0, 1, 2, 3}, bytes.Repeat([]byte{0xff}, 12)...), 6463632673159404390},
	{bytes.Repeat([]byte{0xfe}, 17), -1672437813826982685},
	{[]byte{0xfe, 0xfe, 0xfe, 0xfe}, 4566408979886474012},
	{[]byte{0, 0, 0, 0}, -3485513579396041028},
	{[]byte{0x00, 0x01, 0x7f, 0x7f}, 6573459401642635627},
	{[]byte{0x00, 0xff, 0xff, 0xff}, 123573637386978882},
	{[]byte{0xff, 0x01, 0x02, 0x03}, -2839127690952877842},
	{[]byte{0xe2, 0xe7}, -8582699461035929883},
	{[]byte{0xe2, 0xe7, 0xe2, 0xe7, 0xe2, 0xe7, 0x01}, 2222373981930033306},
}

// seq returns n bytes counting up from first.
func seq(first byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = first + byte(i)
	}
	return b
}

// Tokens of int partition keys 1..20 (4-byte big-endian) as computed by a
// Cassandra server, from cassandra-dtest (replication_test.py,
// murmur3_hashes); token(1) is also the value cqlsh prints in Cassandra's
// own cqlsh tests.
var intKeyTokens = map[int32]int64{
	1: -4069959284402364209, 2: -3248873570005575792, 3: 9010454139840013625,
	4: -2729420104000364805, 5: -7509452495886106294, 6: 2705480034054113608,
	7: 1634052884888577606, 8: -3799847372828181882, 9: 3728482343045213994,
	10: -6715243485458697746, 11: -4156302194539278891, 12: 8582886034424406875,
	13: -5034495173465742853, 14: 4279681877540623768, 15: -1191135763843456182,
	16: -5477287129830487822, 17: 5467144456125416399, 18: -2695747960476065067,
	19: -3974532302236993209, 20: 1388667306199997068,
}

func TestMurmur3IntKeys(t *testing.T) {
	for k, want := range intKeyTokens {
		key := binary.BigEndian.AppendUint32(nil, uint32(k))
		if got := Murmur3(key); got != want {
			t.Errorf("token(int %d) = %d, want %d", k, got, want)
		}
	}
}

func TestMurmur3DriverVectors(t *testing.T) {
	for _, v := range driverVectors {
		if got := Murmur3(v.key); got != v.token {
			t.Errorf("Murmur3(%x) = %d, want %d", v.key, got, v.token)
		}
	}
}

// The raw first half of the hash, published by gocql (murmur_test.go,
// TestMurmur3H1), including the empty input that the partitioner never hashes.
func TestHash64GocqlVectors(t *testing.T) {
	for _, v := range []struct {
		key  []byte
		want uint64
	}{
		{[]byte{}, 0},
		{[]byte{0}, 0x4610abe56eff5cb5},
		{[]byte{0, 1}, 0x7cb3f5c58dab264c},
		{[]byte{0, 1, 2}, 0xb872a12fef53e6be},
		{[]byte{0, 1, 2, 3}, 0xe1c594ae0ddfaf10},
		{[]byte("hello"), 0xcbd8a7b341bd9b02},
		{[]byte("hello, world"), 0x342fac623a5ebc8e},
		{[]byte("19 Jan 2038 at 3:14:07 AM"), 0xb89e5988b737affc},
		{[]byte("The quick brown fox jumps over the lazy dog."), 0xcd99481f9ee902c9},
	} {
		if got := hash64(v.key); got != v.want {
			t.Errorf("hash64(%x) = %#x, want %#x", v.key, got, v.want)
		}
	}
}

func TestMurmur3EmptyKeyIsMin(t *testing.T) {
	if got := Murmur3(nil); got != Min {
		t.Fatalf("Murmur3(nil) = %d, want Min", got)
	}
}

// TestMurmur3NeverMin checks over random keys that only the empty key maps to
// the reserved minimum token, and that the result depends only on the bytes.
func TestMurmur3NeverMin(t *testing.T) {
	forSeeds(t, 1, func(t *testing.T, r *rand.Rand) {
		for range 20000 {
			k := make([]byte, 1+r.IntN(40))
			for i := range k {
				k[i] = byte(r.Uint32())
			}
			got := Murmur3(k)
			if got == Min {
				t.Fatalf("Murmur3(%x) = Min", k)
			}
			if again := Murmur3(append([]byte(nil), k...)); again != got {
				t.Fatalf("Murmur3(%x) not deterministic: %d then %d", k, got, again)
			}
		}
	})
}

func FuzzMurmur3(f *testing.F) {
	for _, v := range driverVectors {
		f.Add(v.key)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, key []byte) {
		tok := Murmur3(key)
		if (tok == Min) != (len(key) == 0) {
			t.Fatalf("Murmur3(%x) = %d", key, tok)
		}
	})
}

func BenchmarkMurmur3(b *testing.B) {
	for _, n := range []int{8, 16, 36, 128} {
		key := seq(0, n)
		b.Run("len="+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			var sink int64
			for b.Loop() {
				sink += Murmur3(key)
			}
			_ = sink
		})
	}
}

// forSeeds runs a randomized test with a fixed seed, then with a random one
// that is logged so a failure can be reproduced.
func forSeeds(t *testing.T, stream uint64, f func(t *testing.T, r *rand.Rand)) {
	for _, seed := range []uint64{1, rand.Uint64()} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			f(t, rand.New(rand.NewPCG(seed, stream)))
		})
	}
}

func TestShard(t *testing.T) {
	const n = 5
	if Shard(math.MinInt64, n) != 0 || Shard(math.MaxInt64, n) != n-1 {
		t.Fatal("the ring's ends are not in the first and last shard")
	}
	prev, seen := 0, map[int]bool{}
	for i := range 1000 {
		tok := math.MinInt64 + int64(i)*(math.MaxUint64/1000)
		s := Shard(tok, n)
		if s < prev {
			t.Fatalf("token %d in shard %d after shard %d", tok, s, prev)
		}
		prev = s
		seen[s] = true
	}
	if len(seen) != n {
		t.Fatalf("tokens met %d shards, want %d", len(seen), n)
	}
}
