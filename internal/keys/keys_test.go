package keys

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/cqltype/cqltypetest"
	"github.com/sedimentdb/sediment/internal/token"
)

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
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

func TestTokenOrder(t *testing.T) {
	toks := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -1, 0, 1, 1 << 40, math.MaxInt64}
	for i, a := range toks {
		for j, b := range toks {
			if got := bytes.Compare(AppendToken(nil, a), AppendToken(nil, b)); got != sign(i-j) {
				t.Errorf("token %d vs %d: %d", a, b, got)
			}
		}
		if got, err := Token(AppendToken(nil, a)); err != nil || got != a {
			t.Errorf("Token(AppendToken(%d)) = %d, %v", a, got, err)
		}
	}
}

func randomKey(r *rand.Rand) []byte {
	b := make([]byte, r.IntN(6))
	for i := range b {
		b[i] = []byte{0, 1, 0xff, 'a'}[r.IntN(4)]
	}
	return b
}

// TestPartitionOrder checks that partitions sort by token, then by raw key
// bytes (forcing token collisions), with each header before its rows.
func TestPartitionOrder(t *testing.T) {
	forSeeds(t, 1, func(t *testing.T, r *rand.Rand) {
		type part struct {
			tok int64
			pk  []byte
		}
		var parts []part
		for range 300 {
			pk := randomKey(r)
			tok := token.Murmur3(pk)
			if r.IntN(3) == 0 {
				tok = int64(r.IntN(3)) - 1 // collide
			}
			parts = append(parts, part{tok, pk})
		}
		ref := func(a, b part) int {
			if a.tok != b.tok {
				return cmp.Compare(a.tok, b.tok)
			}
			return bytes.Compare(a.pk, b.pk)
		}
		row := func(p part) []byte {
			k, err := RowKey(nil, p.tok, p.pk, [][]byte{{0xff, 0xff, 0xff, 0xff}}, []*cqltype.Type{cqltype.IntType}, []bool{false})
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		for _, a := range parts {
			ha, ra := HeaderKey(nil, a.tok, a.pk), row(a)
			if bytes.Compare(ha, ra) >= 0 {
				t.Fatalf("header %x not before row %x", ha, ra)
			}
			for _, b := range parts {
				want := ref(a, b)
				hb, rb := HeaderKey(nil, b.tok, b.pk), row(b)
				for _, pair := range [][2][]byte{{ha, hb}, {ha, rb}, {ra, hb}, {ra, rb}} {
					got := sign(bytes.Compare(pair[0], pair[1]))
					if want != 0 && got != want {
						t.Fatalf("(%d, %x) vs (%d, %x): keys %x %x compare %d, want %d", a.tok, a.pk, b.tok, b.pk, pair[0], pair[1], got, want)
					}
				}
			}
			for _, k := range [][]byte{ha, ra} {
				tok, err := Token(k)
				if err != nil || tok != a.tok {
					t.Fatalf("Token(%x) = %d, %v; want %d", k, tok, err, a.tok)
				}
				pk, err := PartitionKey(k)
				if err != nil || !bytes.Equal(pk, a.pk) {
					t.Fatalf("PartitionKey(%x) = %x, %v; want %x", k, pk, err, a.pk)
				}
				n, err := PartitionPrefixLen(k)
				if err != nil || !bytes.Equal(k[:n], AppendPartitionPrefix(nil, a.tok, a.pk)) {
					t.Fatalf("PartitionPrefixLen(%x) = %d, %v", k, n, err)
				}
			}
			if k, err := EntryKind(ha); err != nil || k != KindHeader {
				t.Fatalf("EntryKind(header) = %v, %v", k, err)
			}
			if k, err := EntryKind(ra); err != nil || k != KindRow {
				t.Fatalf("EntryKind(row) = %v, %v", k, err)
			}
		}
	})
}

func TestComposePartitionKey(t *testing.T) {
	comps := [][]byte{[]byte("ab"), {}, {0, 0xff, 0}}
	pk, err := ComposePartitionKey(comps)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 2, 'a', 'b', 0, 0, 0, 0, 0, 3, 0, 0xff, 0, 0}
	if !bytes.Equal(pk, want) {
		t.Fatalf("ComposePartitionKey = %x, want %x", pk, want)
	}
	got, err := DecomposePartitionKey(pk, 3)
	if err != nil || len(got) != 3 {
		t.Fatalf("DecomposePartitionKey: %v, %v", got, err)
	}
	for i := range comps {
		if !bytes.Equal(got[i], comps[i]) {
			t.Errorf("component %d = %x, want %x", i, got[i], comps[i])
		}
	}
	for _, bad := range [][]byte{pk[:len(pk)-1], append(slices.Clone(pk), 0), {0, 5, 'a', 0}, {0, 1, 'a', 1}, {0, 3, 'a', 'b', 'c', 1}} {
		if _, err := DecomposePartitionKey(bad, 3); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecomposePartitionKey(%x) = %v, want ErrCorrupt", bad, err)
		}
	}
	if _, err := DecomposePartitionKey(pk, 2); err == nil {
		t.Error("DecomposePartitionKey with too few components succeeded")
	}
	if _, err := ComposePartitionKey([][]byte{make([]byte, 1<<16)}); err == nil {
		t.Error("ComposePartitionKey accepted a 64 KiB component")
	}
	// The largest component there is, 65535 bytes, round-trips.
	big := bytes.Repeat([]byte{7}, 1<<16-1)
	if pk, err := ComposePartitionKey([][]byte{big}); err != nil {
		t.Errorf("ComposePartitionKey of a %d-byte component: %v", len(big), err)
	} else if got, err := DecomposePartitionKey(pk, 1); err != nil || !bytes.Equal(got[0], big) {
		t.Errorf("DecomposePartitionKey of a %d-byte component: %v", len(big), err)
	}
}

// rowKey encodes one row of a fixed partition.
func rowKey(t testing.TB, comps [][]byte, types []*cqltype.Type, desc []bool) []byte {
	k, err := RowKey(nil, 42, []byte("pk"), comps, types, desc)
	if err != nil {
		t.Fatalf("RowKey(%x, %v): %v", comps, types, err)
	}
	return k
}

// exactKinds have one serialized form per value, so decoding must give
// back the very bytes.
var exactKinds = map[cqltype.Kind]bool{
	cqltype.Ascii: true, cqltype.Bigint: true, cqltype.Blob: true, cqltype.Date: true,
	cqltype.Inet: true, cqltype.Int: true, cqltype.Smallint: true, cqltype.Text: true,
	cqltype.Time: true, cqltype.Timestamp: true, cqltype.Timeuuid: true,
	cqltype.Tinyint: true, cqltype.UUID: true,
}

// TestValueOrderProperty checks, for random values of every key type
// (natives and nested tuples, frozen collections and UDTs) in both orders,
// that the encoding orders as cqltype.Compare and decodes back.
func TestValueOrderProperty(t *testing.T) {
	forSeeds(t, 2, func(t *testing.T, r *rand.Rand) {
		// Pairs of natives grow quadratically; nested types vary more.
		natives, nested := 150, 200
		if testing.Short() {
			natives, nested = 50, 40
		}
		check := func(typ *cqltype.Type, n int) {
			for _, desc := range []bool{false, true} {
				types, descs := []*cqltype.Type{typ}, []bool{desc}
				vals := make([][]byte, n)
				keys := make([][]byte, n)
				for i := range vals {
					vals[i] = cqltypetest.Value(r, typ)
					keys[i] = rowKey(t, [][]byte{vals[i]}, types, descs)
					got, err := DecodeClustering(keys[i], types, descs)
					if err != nil {
						t.Fatalf("%s desc=%v: decode %x: %v", typ, desc, keys[i], err)
					}
					if len(got) != 1 || cqltype.Compare(typ, got[0], vals[i]) != 0 {
						t.Fatalf("%s desc=%v: %x decoded as %x", typ, desc, vals[i], got)
					}
					if exactKinds[typ.Kind] && !bytes.Equal(got[0], vals[i]) {
						t.Fatalf("%s desc=%v: %x decoded as %x", typ, desc, vals[i], got[0])
					}
					if again := rowKey(t, got, types, descs); !bytes.Equal(again, keys[i]) {
						t.Fatalf("%s desc=%v: %x re-encodes as %x, not %x", typ, desc, got[0], again, keys[i])
					}
				}
				for i := range vals {
					for j := range vals {
						want := sign(cqltype.Compare(typ, vals[i], vals[j]))
						if desc {
							want = -want
						}
						if got := sign(bytes.Compare(keys[i], keys[j])); got != want {
							t.Fatalf("%s desc=%v: values %x, %x: keys %x, %x compare %d, want %d",
								typ, desc, vals[i], vals[j], keys[i], keys[j], got, want)
						}
					}
				}
			}
		}
		for _, k := range cqltypetest.KeyKinds {
			check(cqltypetest.Native(k), natives)
		}
		for range nested {
			check(cqltypetest.KeyType(r, 3), 20)
		}
	})
}

// TestRowsAndBounds checks multi-column clustering order and that bounds on
// every prefix enclose exactly the rows with that prefix.
func TestRowsAndBounds(t *testing.T) {
	forSeeds(t, 3, func(t *testing.T, r *rand.Rand) {
		iters := 300
		if testing.Short() {
			iters = 40
		}
		prefix := AppendPartitionPrefix(nil, 42, []byte("pk"))
		for range iters {
			n := 1 + r.IntN(3)
			types := make([]*cqltype.Type, n)
			desc := make([]bool, n)
			pools := make([][][]byte, n)
			for i := range types {
				types[i] = cqltypetest.KeyType(r, 1)
				desc[i] = r.IntN(2) == 0
				for range 3 {
					pools[i] = append(pools[i], cqltypetest.Value(r, types[i]))
				}
			}
			ref := func(a, b [][]byte) int {
				for i := range min(len(a), len(b)) {
					c := sign(cqltype.Compare(types[i], a[i], b[i]))
					if desc[i] {
						c = -c
					}
					if c != 0 {
						return c
					}
				}
				return 0
			}
			rows := make([][][]byte, 30)
			keys := make([][]byte, len(rows))
			for i := range rows {
				rows[i] = make([][]byte, n)
				for c := range rows[i] {
					rows[i][c] = pools[c][r.IntN(len(pools[c]))]
				}
				keys[i] = rowKey(t, rows[i], types, desc)
			}
			for i := range rows {
				for j := range rows {
					if got, want := sign(bytes.Compare(keys[i], keys[j])), ref(rows[i], rows[j]); got != want {
						t.Fatalf("%v desc %v: rows %x %x compare %d, want %d", types, desc, rows[i], rows[j], got, want)
					}
				}
			}
			for range 10 {
				k := r.IntN(n + 1)
				p := rows[r.IntN(len(rows))][:k]
				before, err := AppendBound(nil, prefix, p, types, desc, Before)
				if err != nil {
					t.Fatal(err)
				}
				after, err := AppendBound(nil, prefix, p, types, desc, After)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Compare(before, after) >= 0 {
					t.Fatalf("before %x not below after %x", before, after)
				}
				for i, key := range keys {
					rel := ref(rows[i][:k], p)
					cb, ca := bytes.Compare(key, before), bytes.Compare(key, after)
					if cb == 0 || ca == 0 {
						t.Fatalf("bound equals row key %x", key)
					}
					inside := cb > 0 && ca < 0
					if inside != (rel == 0) || (rel < 0) != (cb < 0) || (rel > 0) != (ca > 0) {
						t.Fatalf("%v desc %v: row %x vs prefix %x (ref %d): before %d after %d", types, desc, rows[i], p, rel, cb, ca)
					}
				}
			}
		}
	})
}

// TestAppendClusteringReuse decodes many keys into one growing buffer and
// checks every value afterwards, as a reader reusing buffers would.
func TestAppendClusteringReuse(t *testing.T) {
	forSeeds(t, 4, func(t *testing.T, r *rand.Rand) {
		types := []*cqltype.Type{cqltype.TextType, cqltype.DecimalType, cqltype.MustParse("frozen<list<blob>>")}
		desc := []bool{true, false, true}
		var want, vals [][]byte
		buf := []byte("unrelated prefix")
		for range 50 {
			row := make([][]byte, len(types))
			for i, typ := range types {
				row[i] = cqltypetest.Value(r, typ)
			}
			canon, err := DecodeClustering(rowKey(t, row, types, desc), types, desc)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, canon...)
			if vals, buf, err = AppendClustering(vals, buf, rowKey(t, row, types, desc), types, desc); err != nil {
				t.Fatal(err)
			}
		}
		if string(buf[:16]) != "unrelated prefix" || len(vals) != len(want) {
			t.Fatalf("buffer prefix %q, %d values, want %d", buf[:16], len(vals), len(want))
		}
		for i := range want {
			if !bytes.Equal(vals[i], want[i]) {
				t.Fatalf("value %d = %x, want %x", i, vals[i], want[i])
			}
		}
	})
}

func TestHeaderSortsBeforeEveryRowAndBound(t *testing.T) {
	prefix := AppendPartitionPrefix(nil, -5, []byte{0})
	header := HeaderKey(nil, -5, []byte{0})
	types := []*cqltype.Type{cqltype.TextType}
	for _, desc := range []bool{false, true} {
		for _, v := range [][]byte{{}, {0}, []byte("zzz")} {
			row, err := RowKey(nil, -5, []byte{0}, [][]byte{v}, types, []bool{desc})
			if err != nil {
				t.Fatal(err)
			}
			before, _ := AppendBound(nil, prefix, nil, types, []bool{desc}, Before)
			after, _ := AppendBound(nil, prefix, nil, types, []bool{desc}, After)
			if !(bytes.Compare(header, before) < 0 && bytes.Compare(before, row) < 0 && bytes.Compare(row, after) < 0) {
				t.Errorf("want header %x < before %x < row %x < after %x", header, before, row, after)
			}
		}
	}
	// The partition end follows every bound; the next partition (same
	// token, greater key) follows the end.
	end := AppendPartitionEnd(nil, prefix)
	next := HeaderKey(nil, -5, []byte{0, 0})
	after, _ := AppendBound(nil, prefix, nil, types, []bool{false}, After)
	if !(bytes.Compare(prefix, header) < 0 && bytes.Compare(after, end) < 0 && bytes.Compare(end, next) < 0) {
		t.Errorf("want prefix %x < header %x, after-all bound %x < end %x < next partition %x", prefix, header, after, end, next)
	}
	for _, other := range [][]byte{{}, {0, 0xff}, {1}, {0xff}} {
		k := HeaderKey(nil, -5, other)
		if c := bytes.Compare(other, []byte{0}); c != bytes.Compare(k, prefix) || c != bytes.Compare(k, end) {
			t.Errorf("partition %x is not wholly on one side of [%x, %x)", other, prefix, end)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, tc := range []struct {
		typ string
		v   []byte
	}{
		{"duration", []byte{2, 4, 6}},
		{"duration", nil},
		{"frozen<list<duration>>", append(binary.BigEndian.AppendUint32(nil, 1), 0, 0, 0, 3, 2, 4, 6)},
		{"int", []byte{1, 2, 3}},
		{"uuid", make([]byte, 15)},
		{"decimal", []byte{1}},
		{"frozen<list<int>>", []byte{0, 0, 0, 1}},
		{"frozen<list<int>>", []byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}},
		{"frozen<list<int>>", []byte{0, 0, 0, 0, 1}},
		{"frozen<list<int>>", []byte{0xff, 0, 0, 0}},
		{"tuple<int>", []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{"tuple<int>", []byte{0, 0, 0, 9}},
	} {
		typ := cqltype.MustParse(tc.typ)
		if k, err := RowKey(nil, 0, nil, [][]byte{tc.v}, []*cqltype.Type{typ}, []bool{false}); err == nil {
			t.Errorf("RowKey(%s, %x) = %x, want error", tc.typ, tc.v, k)
		}
	}
	if _, err := RowKey(nil, 0, nil, [][]byte{{1}, {2}}, []*cqltype.Type{cqltype.BlobType}, []bool{false}); err == nil {
		t.Error("RowKey with more values than types succeeded")
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	types := []*cqltype.Type{cqltype.IntType}
	good := rowKey(t, [][]byte{{0, 0, 0, 1}}, types, []bool{false})
	n, _ := PartitionPrefixLen(good)
	for _, bad := range [][]byte{
		nil,
		good[:7],
		good[:n-1],
		good[:len(good)-1],
		append(slices.Clone(good), 0),
		append(slices.Clone(good[:n]), byte(KindHeader), 1),
		append(slices.Clone(good[:n]), 9),
		append(slices.Clone(good[:n]), byte(KindRow), ascValue, 0, 0, 0, endOfRow),
		append(slices.Clone(good[:n]), byte(KindRow), descValue, 0, 0, 0, 0, endOfRow),
		append(slices.Clone(good[:n]), byte(KindRow), ascEmpty, ascEmpty, endOfRow),
		append(AppendToken(nil, 0), 'a', 0, 7, byte(KindRow), endOfRow),
		good[:n], // a partition prefix without a kind
		append(slices.Clone(good[:len(good)-1]), ascValue, 0, 0, 0, 2, endOfRow), // two values, one type
	} {
		if _, err := DecodeClustering(bad, types, []bool{false}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeClustering(%x) = %v, want ErrCorrupt", bad, err)
		}
	}
	if _, err := EntryKind(good[:n]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("EntryKind of a partition prefix without a kind: %v, want ErrCorrupt", err)
	}
	// A string cut inside its terminator: the escape byte after the 00 is
	// missing.
	text := []*cqltype.Type{cqltype.TextType}
	for _, desc := range []bool{false, true} {
		k := rowKey(t, [][]byte{[]byte("ab")}, text, []bool{desc})
		if _, err := DecodeClustering(k[:len(k)-2], text, []bool{desc}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeClustering(%x), desc=%v = %v, want ErrCorrupt", k[:len(k)-2], desc, err)
		}
	}
}

// fuzzTypes are the clustering layouts the fuzzers decode against.
var fuzzTypes = []string{"int", "text", "decimal", "varint", "double", "uuid", "timeuuid",
	"frozen<map<text, frozen<list<float>>>>", "tuple<int, decimal, frozen<set<varint>>>", "boolean"}

func FuzzDecodeClustering(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for i, s := range fuzzTypes {
		typ := cqltype.MustParse(s)
		for range 3 {
			k, err := RowKey(nil, 7, []byte("p\x00k"), [][]byte{cqltypetest.Value(r, typ)}, []*cqltype.Type{typ}, []bool{i%2 == 1})
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(i), i%2 == 1, k)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, desc bool, key []byte) {
		typ := cqltype.MustParse(fuzzTypes[int(which)%len(fuzzTypes)])
		types, descs := []*cqltype.Type{typ}, []bool{desc}
		if _, err := EntryKind(key); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("EntryKind: %v", err)
		}
		vals, err := DecodeClustering(key, types, descs)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeClustering error %v is not ErrCorrupt", err)
			}
			return
		}
		// Whatever decodes is a well-formed value (the encoder checks the
		// structure; contents such as UTF-8 are the writer's to validate)
		// that encodes back to the very key.
		tok, _ := Token(key)
		pk, _ := PartitionKey(key)
		again, err := RowKey(nil, tok, pk, vals, types[:len(vals)], descs[:len(vals)])
		if err != nil || !bytes.Equal(again, key) {
			t.Fatalf("key %x decodes to %x, which encodes to %x (%v)", key, vals, again, err)
		}
	})
}

func FuzzPartitionKey(f *testing.F) {
	f.Add(HeaderKey(nil, 1, []byte{0, 1, 0xff}))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 0, 0xff, 0})
	f.Add([]byte{0, 2, 'a', 'b', 0, 0, 1, 'c', 0})
	f.Fuzz(func(t *testing.T, key []byte) {
		if pk, err := PartitionKey(key); err == nil {
			tok, _ := Token(key)
			n, _ := PartitionPrefixLen(key)
			if !bytes.Equal(AppendPartitionPrefix(nil, tok, pk), key[:n]) {
				t.Fatalf("%x: partition key %x does not re-encode", key, pk)
			}
		}
		for n := range 3 {
			if comps, err := DecomposePartitionKey(key, n+1); err == nil {
				again, err := ComposePartitionKey(comps)
				if err != nil || !bytes.Equal(again, key) {
					t.Fatalf("%x decomposes to %x, composes to %x", key, comps, again)
				}
			}
		}
	})
}

func BenchmarkRowKey(b *testing.B) {
	// A typical time series row: bigint partition, timestamp DESC and text
	// clustering.
	pk := binary.BigEndian.AppendUint64(nil, 123456789)
	tok := token.Murmur3(pk)
	types := []*cqltype.Type{cqltype.TimestampType, cqltype.TextType}
	desc := []bool{true, false}
	clustering := [][]byte{binary.BigEndian.AppendUint64(nil, 1764460800000), []byte("sensor-0042/temperature")}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = RowKey(buf[:0], tok, pk, clustering, types, desc); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("encode+token", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = RowKey(buf[:0], token.Murmur3(pk), pk, clustering, types, desc)
		}
	})
	key, _ := RowKey(nil, tok, pk, clustering, types, desc)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeClustering(key, types, desc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-reuse", func(b *testing.B) {
		b.ReportAllocs()
		var vals [][]byte
		var buf []byte
		for b.Loop() {
			var err error
			if vals, buf, err = AppendClustering(vals[:0], buf[:0], key, types, desc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("prefix", func(b *testing.B) {
		for b.Loop() {
			if _, err := PartitionPrefixLen(key); err != nil {
				b.Fatal(err)
			}
		}
	})
}
