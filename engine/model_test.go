package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/keys"
)

// TestRandomAgainstModel applies random inserts, deletions and flushes and
// compares every read with an in-memory model of the table.
func TestRandomAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	te := newTestEnv(t, 64<<10) // small memtables: flushes happen by themselves too
	now := time.Now().Unix()

	const parts, cks = 6, 16
	model := map[string]map[int64]string{}
	pkOf := func() string { return "m" + strconv.Itoa(rng.IntN(parts)) }
	ts := int64(0)
	ops := 2000
	if testing.Short() {
		ops = 200
	}
	for op := range ops {
		ts++
		pk := pkOf()
		if model[pk] == nil {
			model[pk] = map[int64]string{}
		}
		switch x := rng.IntN(100); {
		case x < 45:
			ck := rng.Int64N(cks)
			v := fmt.Sprintf("v%d", op)
			te.apply(insert(pk, ck, ts, v, 0, now))
			model[pk][ck] = v
		case x < 55:
			ck := rng.Int64N(cks)
			te.apply(deleteRow(pk, ck, ts, now))
			delete(model[pk], ck)
		case x < 60:
			a := rng.Int64N(cks)
			b := a + rng.Int64N(cks-a)
			te.apply(deleteRange(pk, a, b, ts, now))
			for ck := a; ck <= b; ck++ {
				delete(model[pk], ck)
			}
		case x < 62:
			te.apply(deletePartition(pk, ts, now))
			model[pk] = map[int64]string{}
		case x < 65:
			te.flush()
		case x < 68:
			limit := rng.IntN(5)
			order, rows := te.scanAll(math.MinInt64, math.MaxInt64, limit, now, false)
			for _, pk := range order {
				if len(model[pk]) == 0 {
					t.Fatalf("op %d: scan returned empty partition %s", op, pk)
				}
			}
			for pk, want := range model {
				if got := rows[pk]; !slices.Equal(got, sortedKeys(want)) {
					t.Fatalf("op %d: scan of %s: %v, want %v", op, pk, got, sortedKeys(want))
				}
			}
		default:
			s := Slice{Table: te.table, Key: []byte(pk), Reverse: rng.IntN(2) == 0, Limit: rng.IntN(5), Now: now}
			lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
			if rng.IntN(2) == 0 {
				c := rng.Int64N(cks)
				if rng.IntN(2) == 0 {
					s.Start, lo = bound(pk, c, keys.Before), c
				} else {
					s.Start, lo = bound(pk, c, keys.After), c+1
				}
			}
			if rng.IntN(2) == 0 {
				c := rng.Int64N(cks)
				if rng.IntN(2) == 0 {
					s.End, hi = bound(pk, c, keys.After), c
				} else {
					s.End, hi = bound(pk, c, keys.Before), c-1
				}
			}
			var want []int64
			for _, ck := range sortedKeys(model[pk]) {
				if ck >= lo && ck <= hi {
					want = append(want, ck)
				}
			}
			if s.Reverse {
				slices.Reverse(want)
			}
			if s.Limit > 0 && len(want) > s.Limit {
				want = want[:s.Limit]
			}
			p, err := te.e.Read(te.ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			got, vs := values(t, p)
			if !slices.Equal(got, want) {
				t.Fatalf("op %d: read %s [%d, %d] reverse=%v limit=%d: %v, want %v", op, pk, lo, hi, s.Reverse, s.Limit, got, want)
			}
			for i, ck := range got {
				if vs[i] != model[pk][ck] {
					t.Fatalf("op %d: %s row %d = %q, want %q", op, pk, ck, vs[i], model[pk][ck])
				}
			}
		}
	}
}

func sortedKeys(m map[int64]string) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
