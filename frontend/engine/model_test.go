package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/keys"
)

// TestRandomAgainstModel applies random inserts, deletions, flushes, clean
// restarts and crashes of the ingest nodes, and compares every read (point
// slices forward and reverse with bounds and limits, and paged scans of
// the ring) with an in-memory model of the table. It runs over a Local
// engine with one node and over a Remote one with two.
func TestRandomAgainstModel(t *testing.T) {
	for _, remote := range []bool{false, true} {
		name := "local"
		if remote {
			name = "remote"
		}
		t.Run(name, func(t *testing.T) {
			seed := uint64(modelSeed)
			if seed == 0 {
				seed = uint64(time.Now().UnixNano())
			}
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("seed %d (set modelSeed to replay)", seed)
				}
			})
			ops := 600
			if testing.Short() {
				ops = 200
			}
			runModel(t, newRestartEnv(t, remote), rand.New(rand.NewPCG(seed, 0)), ops)
		})
	}
}

// modelSeed, if set, replays a failed run of TestRandomAgainstModel.
const modelSeed = 0

func runModel(t *testing.T, env *restartEnv, rng *rand.Rand, ops int) {
	now := time.Now().Unix()
	const parts, cks = 6, 16
	model := map[string]map[int64]string{}
	pkOf := func() string { return "m" + strconv.Itoa(rng.IntN(parts)) }
	apply := func(op int, what string, entries ...Entry) {
		t.Helper()
		if err := env.engine().Apply(env.ctx, &Mutation{Table: env.table, Entries: entries}); err != nil {
			t.Fatalf("op %d: %s: %v", op, what, err)
		}
	}
	var restarts, crashes int
	ts := int64(0)
	for op := range ops {
		ts++
		pk := pkOf()
		if model[pk] == nil {
			model[pk] = map[int64]string{}
		}
		switch x := rng.IntN(100); {
		case x < 45:
			ck := rng.Int64N(cks)
			// Values of a few hundred bytes fill the small memtables.
			v := fmt.Sprintf("v%d-%0*d", op, rng.IntN(400), 0)
			apply(op, "insert", insert(pk, ck, ts, v, 0, now))
			model[pk][ck] = v
		case x < 55:
			ck := rng.Int64N(cks)
			apply(op, "delete row", deleteRow(pk, ck, ts, now))
			delete(model[pk], ck)
		case x < 60:
			a := rng.Int64N(cks)
			b := a + rng.Int64N(cks-a)
			apply(op, "delete range", deleteRange(pk, a, b, ts, now))
			for ck := a; ck <= b; ck++ {
				delete(model[pk], ck)
			}
		case x < 62:
			apply(op, "delete partition", deletePartition(pk, ts, now))
			model[pk] = map[int64]string{}
		case x < 64:
			env.flush()
		case x < 66:
			n := env.nodes[rng.IntN(len(env.nodes))]
			if rng.IntN(2) == 0 {
				env.crash(n)
				crashes++
			} else {
				env.restart(n, rng.IntN(2) == 0)
				restarts++
			}
		case x < 69:
			first, last := scanBounds(rng, parts)
			checkScan(t, env, op, first, last, rng.IntN(6), now, model)
		default:
			checkSlice(t, env, op, rng, pk, cks, now, model[pk])
		}
	}
	// A last crash and a full comparison: every write is in the model.
	for _, n := range env.nodes {
		env.crash(n)
	}
	checkScan(t, env, ops, math.MinInt64, math.MaxInt64, 0, now, model)
	for pk := range model {
		checkSlice(t, env, ops, rng, pk, cks, now, model[pk])
	}
	t.Logf("%d ops, %d clean restarts, %d crashes", ops, restarts, crashes+len(env.nodes))
}

// checkSlice reads a random slice of pk and compares it with rows, the
// model of the partition.
func checkSlice(t *testing.T, env *restartEnv, op int, rng *rand.Rand, pk string, cks int64, now int64, rows map[int64]string) {
	t.Helper()
	s := Slice{Table: env.table, Key: []byte(pk), Reverse: rng.IntN(2) == 0, Limit: rng.IntN(5), Now: now}
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
	for _, ck := range sortedKeys(rows) {
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
	p, err := env.engine().Read(env.ctx, s)
	if err != nil {
		t.Fatalf("op %d: read %s: %v", op, pk, err)
	}
	got, vs := values(t, p)
	if !slices.Equal(got, want) {
		t.Fatalf("op %d: read %s [%d, %d] reverse=%v limit=%d: %v, want %v", op, pk, lo, hi, s.Reverse, s.Limit, got, want)
	}
	for i, ck := range got {
		if vs[i] != rows[ck] {
			t.Fatalf("op %d: %s row %d = %.10q, want %.10q", op, pk, ck, vs[i], rows[ck])
		}
	}
}

// scanBounds returns the token range of a scan: the whole ring, or bounds
// at, just inside or just outside the tokens of the model's partitions, or
// anywhere.
func scanBounds(rng *rand.Rand, parts int) (first, last int64) {
	if rng.IntN(3) == 0 {
		return math.MinInt64, math.MaxInt64
	}
	near := func() int64 {
		if rng.IntN(4) == 0 {
			return int64(rng.Uint64())
		}
		tok := tokenOf("m" + strconv.Itoa(rng.IntN(parts)))
		switch d := int64(rng.IntN(3)) - 1; {
		case d < 0 && tok == math.MinInt64, d > 0 && tok == math.MaxInt64:
			return tok
		default:
			return tok + d
		}
	}
	first, last = near(), near()
	if first > last {
		first, last = last, first
	}
	return first, last
}

// checkScan scans the tokens [first, last] in pages of limit rows (0: no
// limit) and compares every partition, row and value with the model.
func checkScan(t *testing.T, env *restartEnv, op int, first, last int64, limit int, now int64, model map[string]map[int64]string) {
	t.Helper()
	got := map[string]map[int64]string{}
	var after []byte
	prev, lastPK := first, ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatalf("op %d: scan does not end", op)
		}
		page, err := env.engine().Scan(env.ctx, Scan{Table: env.table, First: first, Last: last, After: after, Limit: limit, Now: now})
		if err != nil {
			t.Fatalf("op %d: scan [%d, %d]: %v", op, first, last, err)
		}
		n := 0
		for i := range page.Partitions {
			p := &page.Partitions[i]
			pk := string(p.Key)
			if p.Token < prev || p.Token > last {
				t.Fatalf("op %d: scan [%d, %d]: token %d after %d", op, first, last, p.Token, prev)
			}
			rows, seen := got[pk]
			if seen && pk != lastPK {
				t.Fatalf("op %d: scan: partition %s read again after another", op, pk)
			}
			if !seen {
				rows = map[int64]string{}
				got[pk] = rows
			}
			prev, lastPK = p.Token, pk
			cks, vs := values(t, p)
			for i, ck := range cks {
				if _, dup := rows[ck]; dup {
					t.Fatalf("op %d: scan: %s row %d twice", op, pk, ck)
				}
				rows[ck] = vs[i]
			}
			n += max(len(cks), 1)
		}
		if limit > 0 && n > limit {
			t.Fatalf("op %d: scan: page of %d rows, limit %d", op, n, limit)
		}
		if after = page.Next; after == nil {
			break
		}
	}
	for pk, rows := range got {
		if len(rows) == 0 {
			t.Fatalf("op %d: scan returned the empty partition %s", op, pk)
		}
	}
	for pk, want := range model {
		if tok := tokenOf(pk); tok < first || tok > last {
			want = nil
		}
		rows := got[pk]
		if !slices.Equal(sortedKeys(rows), sortedKeys(want)) {
			t.Fatalf("op %d: scan [%d, %d] of %s (token %d, limit %d): rows %v, want %v", op, first, last, pk, tokenOf(pk), limit, sortedKeys(rows), sortedKeys(want))
		}
		for ck, v := range want {
			if rows[ck] != v {
				t.Fatalf("op %d: scan of %s row %d = %.10q, want %.10q", op, pk, ck, rows[ck], v)
			}
		}
	}
	for pk := range got {
		if _, ok := model[pk]; !ok {
			t.Fatalf("op %d: scan returned %s, which no write made", op, pk)
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
