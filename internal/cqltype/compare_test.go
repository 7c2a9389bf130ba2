package cqltype_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/cqltype/cqltypetest"
)

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
func f32(f float32) []byte { return be32(math.Float32bits(f)) }
func f64(f float64) []byte { return be64(math.Float64bits(f)) }
func hx(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// dec builds a serialized decimal from a scale and an unscaled int64.
func dec(scale int32, unscaled int64) []byte {
	x := big.NewInt(unscaled)
	return cqltype.AppendBigInt(be32(uint32(scale)), new(big.Int).Abs(x), unscaled < 0)
}

// seqOf serializes a list or set of already serialized elements.
func seqOf(elems ...[]byte) []byte {
	b := be32(uint32(len(elems)))
	for _, e := range elems {
		b = append(be32Append(b, uint32(len(e))), e...)
	}
	return b
}

func be32Append(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

// tup serializes tuple components; nil is null.
func tup(elems ...[]byte) []byte {
	var b []byte
	for _, e := range elems {
		if e == nil {
			b = be32Append(b, math.MaxUint32)
			continue
		}
		b = append(be32Append(b, uint32(len(e))), e...)
	}
	return b
}

// Each group lists values in Cassandra's ascending order; values in one
// inner slice compare equal.
var orderedCases = []struct {
	typ    string
	groups [][][]byte
}{
	{"int", [][][]byte{{{}}, {be32(math.MaxUint32/2 + 1)}, {be32(math.MaxUint32)}, {be32(0)}, {be32(1)}, {be32(math.MaxInt32)}}},
	{"bigint", [][][]byte{{{}}, {be64(1 << 63)}, {be64(math.MaxUint64)}, {be64(0)}, {be64(math.MaxInt64)}}},
	{"timestamp", [][][]byte{{{}}, {be64(math.MaxUint64 - 999)}, {be64(0)}, {be64(1000)}}},
	{"smallint", [][][]byte{{{0x80, 0}}, {{0xff, 0xff}}, {{0, 0}}, {{0x7f, 0xff}}}},
	{"tinyint", [][][]byte{{{0x80}}, {{0xff}}, {{0}}, {{0x7f}}}},
	// date: unsigned days with the epoch at 2^31.
	{"date", [][][]byte{{be32(0)}, {be32(1 << 31)}, {be32(math.MaxUint32)}}},
	{"time", [][][]byte{{be64(0)}, {be64(1)}, {be64(86399999999999)}}},
	{"boolean", [][][]byte{{{}}, {{0}}, {{1}, {2}, {0xff}}}},
	{"varint", [][][]byte{
		{{}},
		{hx("ff00")},
		{hx("80"), hx("ff80"), hx("ffff80")},
		{hx("ff"), hx("ffff")},
		{hx("00"), hx("0000")},
		{hx("01"), hx("000001")},
		{hx("7f")},
		{hx("0080"), hx("000080")},
		{hx("0100")},
	}},
	{"decimal", [][][]byte{
		{{}},
		{dec(-2, -5)},               // -500
		{dec(0, -11), dec(1, -110)}, // -11
		{dec(1, -1), dec(3, -100)},  // -0.1
		{dec(0, 0), dec(5, 0), dec(math.MinInt32, 0), be32(7)},
		{dec(math.MaxInt32, 1)},              // 1e-2147483647
		{dec(3, 1)},                          // 0.001
		{dec(1, 10), dec(0, 1), dec(2, 100)}, // 1
		{dec(0, 2), dec(1, 20)},
		{dec(0, 10), dec(-1, 1)},
		{dec(math.MinInt32, 1)}, // 1e2147483648
	}},
	{"float", [][][]byte{
		{{}},
		{f32(float32(math.Inf(-1)))},
		{f32(-1)},
		{be32(0x80000001)},
		{be32(0x80000000)}, // -0
		{be32(0)},
		{be32(1)},
		{f32(1)},
		{f32(float32(math.Inf(1)))},
		{be32(0x7fc00000), be32(0xffc00000), be32(0x7f800001), be32(0xffffffff)}, // every NaN
	}},
	{"double", [][][]byte{
		{{}},
		{f64(math.Inf(-1))},
		{f64(-2.5)},
		{be64(1 << 63)},
		{be64(0)},
		{f64(math.SmallestNonzeroFloat64)},
		{f64(math.Inf(1))},
		{be64(0x7ff8000000000000), be64(0xfff8000000000000), be64(0x7ff0000000000001)},
	}},
	{"text", [][][]byte{{{}}, {[]byte("\x00")}, {[]byte("a")}, {[]byte("a\x00")}, {[]byte("ab")}, {[]byte("b")}, {[]byte("é")}}},
	{"blob", [][][]byte{{{}}, {{0}}, {{0, 0}}, {{0x7f}}, {{0x80}}, {{0xff}}}},
	{"inet", [][][]byte{{{}}, {hx("00000000000000000000000000000001")}, {hx("0a000001")}, {hx("0a000001000000000000000000000000")}, {hx("c0a80001")}}},
	{"uuid", [][][]byte{
		{{}},
		// version 0 before version 1 before version 4, whatever the bytes.
		{hx("ffffffffffff0fffffffffffffffffff")},
		// version 1 by timestamp (time_hi, time_mid, time_low), then low
		// bytes unsigned.
		{hx("ffffffff00001000ffffffffffffffff")},
		{hx("00000000000110000000000000000000")},
		{hx("00000000000110000000000000000001")},
		{hx("00000000000110008000000000000000")},
		{hx("00000000000011010000000000000000")},
		{hx("00000000000041000000000000000000")},
		{hx("00000000000041008000000000000000")},
		{hx("00000001000040000000000000000000")},
	}},
	{"timeuuid", [][][]byte{
		{{}},
		{hx("ffffffff00001000ffffffffffffffff")},
		// Low bytes compare signed: 0x80 < 0xff < 0x00 < 0x7f.
		{hx("000000000001100080ff000000000000")},
		{hx("00000000000110008000000000000000")},
		{hx("00000000000110000080000000000000")},
		{hx("000000000001100000ff000000000000")},
		{hx("00000000000110000000000000000000")},
		{hx("0000000000011000007f000000000000")},
		{hx("00000000000011010000000000000000")},
	}},
	{"frozen<list<int>>", [][][]byte{
		{{}},
		{seqOf()},
		{seqOf(be32(math.MaxUint32))},
		{seqOf(be32(1))},
		{seqOf(be32(1), be32(0))},
		{seqOf(be32(2))},
	}},
	{"frozen<set<text>>", [][][]byte{{seqOf()}, {seqOf([]byte{})}, {seqOf([]byte("a"))}, {seqOf([]byte("a"), []byte("b"))}, {seqOf([]byte("b"))}}},
	{"frozen<map<int, text>>", [][][]byte{
		{seqOf()},
		{append(seqOf(be32(1), []byte("z"))[:0:0], be32(1)...)}, // placeholder replaced below
	}},
	{"tuple<int, text>", [][][]byte{
		{{}},
		{tup(nil), tup(nil, nil)},
		{tup(nil, []byte{})},
		{tup(nil, []byte("a"))},
		{tup([]byte{}), tup([]byte{}, nil)},
		{tup(be32(math.MaxUint32))},
		{tup(be32(1)), tup(be32(1), nil)},
		{tup(be32(1), []byte{})},
		{tup(be32(1), []byte("a"))},
		{tup(be32(2))},
	}},
}

func mapOf(kv ...[]byte) []byte {
	b := be32(uint32(len(kv) / 2))
	for _, e := range kv {
		b = append(be32Append(b, uint32(len(e))), e...)
	}
	return b
}

func init() {
	for i := range orderedCases {
		if orderedCases[i].typ == "frozen<map<int, text>>" {
			orderedCases[i].groups = [][][]byte{
				{mapOf()},
				{mapOf(be32(1), []byte("a"))},
				{mapOf(be32(1), []byte("a"), be32(0), []byte("a"))},
				{mapOf(be32(1), []byte("b"))},
				{mapOf(be32(2), []byte(""))},
			}
		}
	}
}

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

func TestCompareOrderedCases(t *testing.T) {
	for _, tc := range orderedCases {
		typ := cqltype.MustParse(tc.typ)
		for i, gi := range tc.groups {
			for _, a := range gi {
				for j, gj := range tc.groups {
					for _, b := range gj {
						want := sign(i - j)
						if got := cqltype.Compare(typ, a, b); sign(got) != want {
							t.Errorf("%s: Compare(%x, %x) = %d, want %d", tc.typ, a, b, got, want)
						}
					}
				}
			}
		}
	}
}

// refCompare is an independent reference for the native types, written from
// Cassandra's definitions with math/big and Java semantics rather than the
// bit tricks Compare uses.
func refCompare(t *testing.T, typ *cqltype.Type, a, b []byte) int {
	if len(a) == 0 || len(b) == 0 {
		return sign(len(a) - len(b))
	}
	switch typ.Kind {
	case cqltype.Tinyint, cqltype.Smallint, cqltype.Int, cqltype.Bigint, cqltype.Timestamp, cqltype.Varint:
		return bigOf(a).Cmp(bigOf(b))
	case cqltype.Decimal:
		ra, rb := ratOf(t, a), ratOf(t, b)
		if ra == nil || rb == nil {
			return 2 // unknown: extreme scale
		}
		return ra.Cmp(rb)
	case cqltype.Float:
		return javaCompare(float64(math.Float32frombits(binary.BigEndian.Uint32(a))), float64(math.Float32frombits(binary.BigEndian.Uint32(b))))
	case cqltype.Double:
		return javaCompare(math.Float64frombits(binary.BigEndian.Uint64(a)), math.Float64frombits(binary.BigEndian.Uint64(b)))
	case cqltype.UUID:
		// Cassandra 1.x's UUIDType: version, then timestamp bytes for
		// version 1, then all bytes unsigned.
		va, vb := int(a[6]>>4), int(b[6]>>4)
		if va != vb {
			return sign(va - vb)
		}
		if va == 1 {
			if c := timestampBytes(a, b); c != 0 {
				return c
			}
		}
		return bytes.Compare(a, b)
	case cqltype.Timeuuid:
		// Cassandra 1.x's TimeUUIDType: timestamp bytes, then
		// ByteBuffer.compareTo, which compares signed bytes.
		if c := timestampBytes(a, b); c != 0 {
			return c
		}
		for i := range a {
			if c := sign(int(int8(a[i])) - int(int8(b[i]))); c != 0 {
				return c
			}
		}
		return 0
	case cqltype.Boolean:
		return sign(int(min(a[0], 1)) - int(min(b[0], 1)))
	}
	return bytes.Compare(a, b)
}

func timestampBytes(a, b []byte) int {
	if c := sign(int(a[6]&0xf) - int(b[6]&0xf)); c != 0 {
		return c
	}
	for _, i := range []int{7, 4, 5, 0, 1, 2, 3} {
		if c := sign(int(a[i]) - int(b[i])); c != 0 {
			return c
		}
	}
	return 0
}

func bigOf(v []byte) *big.Int {
	x := new(big.Int).SetBytes(v)
	if v[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v))))
	}
	return x
}

func ratOf(t *testing.T, v []byte) *big.Rat {
	scale := int32(binary.BigEndian.Uint32(v))
	if scale > 1000 || scale < -1000 {
		return nil
	}
	u := big.NewInt(0)
	if len(v) > 4 {
		u = bigOf(v[4:])
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(scale, -scale))), nil)
	r := new(big.Rat).SetInt(u)
	if scale >= 0 {
		return r.Quo(r, new(big.Rat).SetInt(p))
	}
	return r.Mul(r, new(big.Rat).SetInt(p))
}

// javaCompare is java.lang.Double.compare.
func javaCompare(a, b float64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	bits := func(f float64) int64 {
		if math.IsNaN(f) {
			return 0x7ff8000000000000
		}
		return int64(math.Float64bits(f))
	}
	return sign(int(cmp.Compare(bits(a), bits(b))))
}

func TestCompareMatchesReference(t *testing.T) {
	forSeeds(t, 2, func(t *testing.T, r *rand.Rand) {
		for _, k := range cqltypetest.KeyKinds {
			typ := cqltypetest.Native(k)
			for range 3000 {
				a, b := cqltypetest.Value(r, typ), cqltypetest.Value(r, typ)
				want := refCompare(t, typ, a, b)
				if want == 2 {
					continue
				}
				if got := cqltype.Compare(typ, a, b); sign(got) != want {
					t.Fatalf("%s: Compare(%x, %x) = %d, reference %d", typ, a, b, got, want)
				}
			}
		}
	})
}

// TestCompareIsTotalOrder sorts random values of random nested types and
// checks antisymmetry and transitivity along the sorted order.
func TestCompareIsTotalOrder(t *testing.T) {
	forSeeds(t, 3, func(t *testing.T, r *rand.Rand) {
		for range 300 {
			typ := cqltypetest.KeyType(r, 2)
			vals := make([][]byte, 40)
			for i := range vals {
				vals[i] = cqltypetest.Value(r, typ)
				if err := cqltype.Validate(typ, vals[i]); err != nil {
					t.Fatalf("%s: generated invalid value %x: %v", typ, vals[i], err)
				}
			}
			slices.SortFunc(vals, func(a, b []byte) int { return cqltype.Compare(typ, a, b) })
			for i := range vals {
				for j := range vals {
					c, d := sign(cqltype.Compare(typ, vals[i], vals[j])), sign(cqltype.Compare(typ, vals[j], vals[i]))
					if c != -d {
						t.Fatalf("%s: not antisymmetric: %x %x", typ, vals[i], vals[j])
					}
					if i < j && c > 0 {
						t.Fatalf("%s: not transitive: %x sorted before %x", typ, vals[i], vals[j])
					}
				}
			}
		}
	})
}

func FuzzCompare(f *testing.F) {
	f.Add("int", []byte{1, 2, 3, 4}, []byte{})
	f.Add("decimal", dec(3, -7), dec(1, 100))
	f.Add("frozen<map<int, text>>", mapOf(be32(1), []byte("a")), mapOf())
	f.Add("tuple<int, frozen<list<varint>>>", tup(be32(1), seqOf([]byte{0xff})), tup(nil, []byte{}))
	f.Add("timeuuid", hx("00000000000110008000000000000000"), hx("000000000001100080"))
	f.Fuzz(func(t *testing.T, typStr string, a, b []byte) {
		typ, err := cqltype.Parse(typStr, nil)
		if err != nil {
			return
		}
		c, d := cqltype.Compare(typ, a, b), cqltype.Compare(typ, b, a)
		if cqltype.Validate(typ, a) == nil && cqltype.Validate(typ, b) == nil && sign(c) != -sign(d) {
			t.Fatalf("%s: Compare(%x, %x) = %d but reversed %d", typ, a, b, c, d)
		}
		if cqltype.Compare(typ, a, a) != 0 {
			t.Fatalf("%s: %x not equal to itself", typ, a)
		}
	})
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
