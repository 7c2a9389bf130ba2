package cqltype_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/cqltype/cqltypetest"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		typ     string
		in, out []byte
	}{
		{"frozen<set<int>>", seqOf(be32(3), be32(1), be32(3), be32(2)), seqOf(be32(1), be32(2), be32(3))},
		{"frozen<set<int>>", seqOf(), seqOf()},
		{"frozen<list<int>>", seqOf(be32(3), be32(1)), seqOf(be32(3), be32(1))},
		{"frozen<map<int, text>>",
			mapOf(be32(2), []byte("x"), be32(1), []byte("a"), be32(2), []byte("y")),
			mapOf(be32(1), []byte("a"), be32(2), []byte("y"))},
		// Equal keys keep the first key's bytes (1.0) and the last value.
		{"frozen<map<decimal, int>>",
			mapOf(dec(1, 10), be32(1), dec(2, 100), be32(2)),
			mapOf(dec(1, 10), be32(2))},
		// Nested sets are normalized before the outer set is sorted, so
		// {{2, 1}} and {{1, 2}} are one element.
		{"frozen<set<frozen<set<int>>>>",
			seqOf(seqOf(be32(2), be32(1)), seqOf(be32(1), be32(2)), seqOf(be32(0))),
			seqOf(seqOf(be32(0)), seqOf(be32(1), be32(2)))},
		{"tuple<int, frozen<set<text>>>",
			tup(nil, seqOf([]byte("b"), []byte("a"))),
			tup(nil, seqOf([]byte("a"), []byte("b")))},
		{"tuple<int, frozen<set<text>>>", tup(be32(1), seqOf()), tup(be32(1), seqOf())},
	} {
		typ := cqltype.MustParse(tc.typ)
		got, err := cqltype.Normalize(typ, tc.in)
		if err != nil {
			t.Errorf("Normalize(%s, %x): %v", tc.typ, tc.in, err)
			continue
		}
		if !bytes.Equal(got, tc.out) {
			t.Errorf("Normalize(%s, %x) = %x, want %x", tc.typ, tc.in, got, tc.out)
		}
	}
	if _, err := cqltype.Normalize(cqltype.MustParse("frozen<set<int>>"), seqOf([]byte{1})); err == nil {
		t.Error("Normalize accepted an invalid set")
	}
}

// TestNormalizeProperty checks that normalized values are valid, stable
// under a second Normalize, Compare-equal to the normalized form of a
// shuffled copy, and hold sorted, distinct set elements.
func TestNormalizeProperty(t *testing.T) {
	forSeeds(t, 5, func(t *testing.T, r *rand.Rand) {
		for range 2000 {
			typ := cqltypetest.KeyType(r, 3)
			v := cqltypetest.Value(r, typ)
			n, err := cqltype.Normalize(typ, v)
			if err != nil {
				t.Fatalf("Normalize(%s, %x): %v", typ, v, err)
			}
			if err := cqltype.Validate(typ, n); err != nil {
				t.Fatalf("Normalize(%s, %x) = %x, invalid: %v", typ, v, n, err)
			}
			if again, _ := cqltype.Normalize(typ, n); !bytes.Equal(again, n) {
				t.Fatalf("%s: Normalize not idempotent: %x then %x", typ, n, again)
			}
			if typ.Kind == cqltype.Set && len(n) > 0 {
				elems := splitSeq(n)
				if !slices.IsSortedFunc(elems, func(a, b []byte) int { return cqltype.Compare(typ.Elems[0], a, b) }) {
					t.Fatalf("%s: %x not sorted", typ, n)
				}
				for i := 1; i < len(elems); i++ {
					if cqltype.Compare(typ.Elems[0], elems[i-1], elems[i]) == 0 {
						t.Fatalf("%s: %x has duplicates", typ, n)
					}
				}
				// Any order of the same elements normalizes to the same set.
				shuffled := slices.Clone(splitSeq(v))
				r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				if m, _ := cqltype.Normalize(typ, seqOf(shuffled...)); cqltype.Compare(typ, m, n) != 0 {
					t.Fatalf("%s: %x and its shuffle normalize to %x and %x", typ, v, n, m)
				}
			}
		}
	})
}

func splitSeq(v []byte) [][]byte {
	n := int(be32u(v))
	v = v[4:]
	out := make([][]byte, n)
	for i := range out {
		l := int(be32u(v))
		out[i] = v[4 : 4+l]
		v = v[4+l:]
	}
	return out
}

func be32u(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
