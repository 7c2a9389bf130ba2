package compactor

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/manifest"
)

var planTable = uuid.MustParse("7a1e0000-0000-4000-8000-000000000001")

var planEpoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// tsst returns an SSTable of level over tokens [lo, hi], created at the
// given second.
func tsst(key string, level int, lo, hi, size int64, created int) manifest.SSTable {
	return manifest.SSTable{Key: key, Level: level, MinToken: lo, MaxToken: hi, Size: size, Created: planEpoch.Add(time.Duration(created) * time.Second)}
}

// testStrategy has small sizes: L1 400 bytes, L2 1600, ….
var testStrategy = Strategy{TargetSize: 100, Fanout: 4, L0Threshold: 4, L0Limit: 12, BaseLevelSize: 400, MaxInputBytes: 1000}

func keysOf(ts []manifest.SSTable) string {
	var ks []string
	for _, t := range ts {
		ks = append(ks, t.Key)
	}
	return strings.Join(ks, " ")
}

// planString renders plans as "range:level:inputs" lines.
func planString(ps []Plan) string {
	var lines []string
	for _, p := range ps {
		lines = append(lines, fmt.Sprintf("%d:L%d:%s", p.Range, p.OutputLevel, keysOf(p.Inputs)))
	}
	return strings.Join(lines, "\n")
}

func TestPlanCases(t *testing.T) {
	l0 := func(n, size int64) []manifest.SSTable { // n flushes over the whole range, newest first
		var ts []manifest.SSTable
		for i := n - 1; i >= 0; i-- {
			ts = append(ts, tsst(fmt.Sprintf("f%d", i), 0, 0, 999, size, int(i)))
		}
		return ts
	}
	// l1 has four 100-byte tables over [0, 999].
	l1 := []manifest.SSTable{tsst("a", 1, 0, 249, 100, 0), tsst("b", 1, 250, 499, 100, 0), tsst("c", 1, 500, 749, 100, 0), tsst("d", 1, 750, 999, 100, 0)}
	busy := func(level int, ts ...manifest.SSTable) Plan {
		return Plan{Table: planTable, Range: 0, Inputs: ts, OutputLevel: level, TargetSize: 100}
	}
	for _, tc := range []struct {
		name   string
		s      Strategy
		tables []manifest.SSTable
		busy   []Plan
		want   string
	}{
		{name: "empty"},
		{name: "L0 below threshold", tables: l0(3, 10)},
		{name: "L0 at threshold, oldest first", tables: l0(4, 10), want: "0:L1:f0 f1 f2 f3"},
		{name: "L0 with all of L1", tables: append(l0(5, 10), l1...), want: "0:L1:f0 f1 f2 f3 f4 a b c d"},
		{name: "L0 with the L1 it overlaps", tables: append(l1,
			tsst("p", 0, 260, 300, 10, 1), tsst("q", 0, 480, 520, 10, 2), tsst("r", 0, 300, 400, 10, 3), tsst("s", 0, 490, 490, 10, 4)),
			want: "0:L1:p q r s b c"},
		{name: "L0 bounded in bytes", tables: l0(8, 300), want: "0:L1:f0 f1 f2"},
		{name: "L0 bounded with L1", tables: append(l0(8, 200), l1...), want: "0:L1:f0 f1 f2 a b c d"},
		{name: "L0 alone over the bound", tables: append(l0(4, 900), l1...), want: "0:L1:f0 a b c d"},
		{name: "L0 waits for a busy L0 plan", tables: l0(7, 10),
			busy: []Plan{busy(1, tsst("f0", 0, 0, 999, 10, 0), tsst("f1", 0, 0, 999, 10, 1), tsst("f2", 0, 0, 999, 10, 2), tsst("f3", 0, 0, 999, 10, 3))}},
		{name: "L0 skips a flush whose L1 is busy", tables: append(l1,
			tsst("p", 0, 0, 100, 10, 1), tsst("q", 0, 600, 700, 10, 2), tsst("r", 0, 800, 900, 10, 3), tsst("s", 0, 900, 999, 10, 4), tsst("t", 0, 510, 520, 10, 5)),
			busy: []Plan{busy(2, tsst("a", 1, 0, 249, 100, 0))},
			want: "0:L1:q r s t c d"},
		{name: "L0 output would overlap a busy L1 write", tables: l0(4, 10),
			busy: []Plan{busy(1, tsst("x", 0, 999, 1200, 10, 0))}},
		{name: "L1 over target moves the least overlapping table", tables: []manifest.SSTable{
			tsst("a", 1, 0, 99, 100, 0), tsst("b", 1, 100, 199, 100, 0), tsst("c", 1, 200, 299, 100, 0), tsst("d", 1, 300, 399, 100, 0), tsst("e", 1, 400, 499, 100, 0),
			tsst("A", 2, 0, 150, 100, 0), tsst("B", 2, 160, 250, 100, 0), tsst("C", 2, 300, 450, 100, 0)},
			// a, c, d and e overlap 100 bytes below, b 200: the first goes.
			want: "0:L2:a A"},
		{name: "L1 excess covered by one move", tables: []manifest.SSTable{
			tsst("a", 1, 0, 99, 100, 0), tsst("b", 1, 100, 199, 100, 0), tsst("c", 1, 200, 299, 150, 0), tsst("d", 1, 300, 399, 150, 0),
			tsst("A", 2, 0, 150, 100, 0), tsst("C", 2, 320, 450, 100, 0)},
			// Excess 100: c (no overlap) covers it.
			want: "0:L2:c"},
		{name: "L1 excess needs two moves", tables: []manifest.SSTable{
			tsst("a", 1, 0, 99, 100, 0), tsst("b", 1, 100, 199, 100, 0), tsst("c", 1, 200, 299, 150, 0), tsst("d", 1, 300, 399, 250, 0),
			tsst("A", 2, 0, 150, 100, 0), tsst("C", 2, 320, 450, 100, 0)},
			// Excess 200: c (ratio 0), then d (0.4) before a and b (1).
			want: "0:L2:c\n0:L2:d C"},
		{name: "L1 move blocked by a busy L2 write", tables: []manifest.SSTable{
			tsst("a", 1, 0, 99, 300, 0), tsst("b", 1, 100, 199, 300, 0)},
			busy: []Plan{busy(2, tsst("z", 1, 50, 60, 300, 0))},
			want: "0:L2:b"},
		{name: "keys separate tables that share a token", tables: []manifest.SSTable{
			{Key: "a", Level: 1, MinToken: 0, MaxToken: 10, FirstKey: []byte("0a"), LastKey: []byte("10a"), Size: 500},
			{Key: "B", Level: 2, MinToken: 10, MaxToken: 20, FirstKey: []byte("10b"), LastKey: []byte("20"), Size: 100},
			{Key: "A", Level: 2, MinToken: 0, MaxToken: 10, FirstKey: []byte("0"), LastKey: []byte("10a"), Size: 100}},
			want: "0:L2:a A"},
		{name: "a last key missing covers its token", tables: []manifest.SSTable{
			{Key: "a", Level: 1, MinToken: 0, MaxToken: 10, Size: 500},
			{Key: "B", Level: 2, MinToken: 10, MaxToken: 20, FirstKey: []byte("10b"), LastKey: []byte("20"), Size: 100}},
			want: "0:L2:a B"},
		{name: "last level stays", s: Strategy{TargetSize: 100, Fanout: 2, L0Threshold: 4, L0Limit: 12, BaseLevelSize: 1, MaxInputBytes: 1000},
			tables: []manifest.SSTable{tsst("x", NumLevels-1, 0, 9, 500, 0)}},
		{name: "highest score first", tables: append(l0(4, 10), // L0 score 1, L1 score 2
			tsst("a", 1, 0, 499, 400, 0), tsst("b", 1, 500, 999, 400, 0)),
			want: "0:L2:a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			if s == (Strategy{}) {
				s = testStrategy
			}
			snap := Snapshot{Table: planTable, Ranges: map[int][]manifest.SSTable{0: tc.tables}}
			got := s.Plan(snap, tc.busy)
			if ps := planString(got); ps != tc.want {
				t.Fatalf("plans:\n%s\nwant:\n%s", ps, tc.want)
			}
			for _, p := range got {
				if p.Table != planTable || p.TargetSize != s.TargetSize {
					t.Fatalf("plan %+v", p)
				}
			}
			checkPlans(t, s, snap, tc.busy, got)
		})
	}
}

func TestPlanRanges(t *testing.T) {
	snap := Snapshot{Table: planTable, Ranges: map[int][]manifest.SSTable{}}
	for _, r := range []int{7, 2, 11} {
		for i := range 4 {
			snap.Ranges[r] = append(snap.Ranges[r], tsst(fmt.Sprintf("r%d-%d", r, i), 0, int64(r*1000), int64(r*1000+999), 10, i))
		}
	}
	// A busy plan of another table or range blocks nothing here.
	busy := []Plan{{Table: uuid.New(), Range: 2, Inputs: snap.Ranges[2], OutputLevel: 1}, {Table: planTable, Range: 3, Inputs: snap.Ranges[2], OutputLevel: 1}}
	got := planString(testStrategy.Plan(snap, busy))
	want := "2:L1:r2-0 r2-1 r2-2 r2-3\n7:L1:r7-0 r7-1 r7-2 r7-3\n11:L1:r11-0 r11-1 r11-2 r11-3"
	if got != want {
		t.Fatalf("plans:\n%s\nwant:\n%s", got, want)
	}
}

func TestPlanJob(t *testing.T) {
	p := Plan{Table: planTable, Range: 3, Inputs: []manifest.SSTable{tsst("a", 0, 0, 9, 10, 0), tsst("b", 1, 0, 9, 32, 0)}, OutputLevel: 1, TargetSize: 77}
	if p.Bytes() != 42 {
		t.Fatalf("Bytes = %d", p.Bytes())
	}
	j := p.Job("job-1")
	want := Job{ID: "job-1", Table: planTable, Inputs: p.Inputs, OutputLevel: 1, TargetSize: 77, OldestOutside: math.MaxInt64}
	if !reflect.DeepEqual(j, want) {
		t.Fatalf("Job = %+v, want %+v", j, want)
	}
	if err := j.validate(); err != nil {
		t.Fatal(err)
	}
	j.Inputs[0].Key = "changed"
	if p.Inputs[0].Key != "a" {
		t.Fatal("Job shares the plan's inputs")
	}
}

func TestPlanOldestOutside(t *testing.T) {
	ts := func(t manifest.SSTable, minTS int64) manifest.SSTable { t.MinTimestamp = minTS; return t }
	in1, in2 := ts(tsst("in1", 0, 100, 200, 10, 0), 50), ts(tsst("in2", 1, 150, 300, 10, 0), 10)
	snap := Snapshot{Table: planTable, Ranges: map[int][]manifest.SSTable{
		0: {in1, in2, ts(tsst("over", 0, 300, 400, 10, 0), 40), ts(tsst("apart", 0, 301, 400, 10, 0), 1), ts(tsst("under", 2, 0, 99, 10, 0), 2),
			ts(tsst("deep", 3, 199, 199, 10, 0), 30)},
		1: {ts(tsst("other range", 0, 100, 200, 10, 0), 0)},
	}}
	p := Plan{Table: planTable, Range: 0, Inputs: []manifest.SSTable{in1, in2}, OutputLevel: 1}
	if got := p.OldestOutside(snap); got != 30 {
		t.Fatalf("OldestOutside = %d, want 30 (deep)", got)
	}
	snap.Ranges[0] = []manifest.SSTable{in1, in2}
	if got := p.OldestOutside(snap); got != math.MaxInt64 {
		t.Fatalf("OldestOutside with nothing outside = %d", got)
	}
	if got := p.OldestOutside(Snapshot{Table: uuid.New(), Ranges: snap.Ranges}); got != math.MaxInt64 {
		t.Fatalf("OldestOutside of another table's snapshot = %d", got)
	}
}

func TestPressureAndBacklog(t *testing.T) {
	s := testStrategy // threshold 4, limit 12, L1 target 400
	snap := Snapshot{Table: planTable, Ranges: map[int][]manifest.SSTable{}}
	if p := s.L0Pressure(snap); p != 0 {
		t.Fatalf("empty pressure %v", p)
	}
	for i := range 8 {
		snap.Ranges[0] = append(snap.Ranges[0], tsst(fmt.Sprint("a", i), 0, 0, 9, 10, i))
	}
	for i := range 3 {
		snap.Ranges[1] = append(snap.Ranges[1], tsst(fmt.Sprint("b", i), 0, 0, 9, 10, i))
	}
	snap.Ranges[1] = append(snap.Ranges[1], tsst("l1", 1, 0, 9, 450, 0), tsst("l2", 2, 0, 9, 5000, 0), tsst("l6", NumLevels-1, 0, 9, 1<<40, 0))
	if p := s.L0Pressure(snap); p != 0.5 {
		t.Fatalf("pressure %v, want 0.5 (8 of 4..12)", p)
	}
	for i := range 8 {
		snap.Ranges[2] = append(snap.Ranges[2], tsst(fmt.Sprint("c", i), 0, 0, 9, 10, i), tsst(fmt.Sprint("d", i), 0, 0, 9, 10, i))
	}
	if p := s.L0Pressure(snap); p != 1.5 {
		t.Fatalf("pressure %v, want 1.5 (16 of 4..12)", p)
	}
	// L0: 8+3+16 tables of 10 bytes; L1 50 over 400; L2 3400 over 1600.
	want := Backlog{Bytes: 270 + 50 + 3400, L0Tables: 27, MaxL0: 16}
	if b := s.Backlog(snap); b != want {
		t.Fatalf("backlog %+v, want %+v", b, want)
	}
}

// checkPlans checks the rules every result of Plan must follow.
func checkPlans(t *testing.T, s Strategy, snap Snapshot, busy, plans []Plan) {
	t.Helper()
	type input struct {
		table uuid.UUID
		rng   int
		key   string
	}
	used := map[input]bool{}
	type write struct {
		rng, level int
		sp         span
	}
	var writes []write
	for _, b := range busy {
		for _, in := range b.Inputs {
			used[input{b.Table, b.Range, in.Key}] = true
		}
		if b.Table == snap.Table && len(b.Inputs) > 0 {
			writes = append(writes, write{b.Range, b.OutputLevel, spanOf(b.Inputs)})
		}
	}
	for _, p := range plans {
		if p.Table != snap.Table || len(p.Inputs) == 0 || p.OutputLevel < 1 || p.OutputLevel >= NumLevels {
			t.Fatalf("malformed plan %+v", p)
		}
		live := snap.Ranges[p.Range]
		upper := 0
		for _, in := range p.Inputs {
			k := input{p.Table, p.Range, in.Key}
			if used[k] {
				t.Fatalf("input %s of plan %s is in another plan", in.Key, planString([]Plan{p}))
			}
			used[k] = true
			i := slices.IndexFunc(live, func(t manifest.SSTable) bool { return t.Key == in.Key })
			if i < 0 || !reflect.DeepEqual(live[i], in) {
				t.Fatalf("input %s is not live in range %d", in.Key, p.Range)
			}
			switch in.Level {
			case p.OutputLevel - 1:
				upper++
			case p.OutputLevel:
			default:
				t.Fatalf("plan to L%d reads L%d", p.OutputLevel, in.Level)
			}
		}
		if upper == 0 {
			t.Fatalf("plan %s moves nothing down", planString([]Plan{p}))
		}
		if p.Bytes() > s.MaxInputBytes && upper != 1 {
			t.Fatalf("plan %s reads %d bytes, over %d", planString([]Plan{p}), p.Bytes(), s.MaxInputBytes)
		}
		sp := spanOf(p.Inputs)
		for _, w := range writes {
			if w.rng == p.Range && w.level == p.OutputLevel && w.sp.overlaps(sp) {
				t.Fatalf("plan %s writes over another plan's output in L%d", planString([]Plan{p}), w.level)
			}
		}
		writes = append(writes, write{p.Range, p.OutputLevel, sp})
		// The output level keeps no SSTable that the outputs overlap.
		for _, o := range live {
			if o.Level == p.OutputLevel && sp.overlaps(span{lowerOf(o), upperOf(o)}) && !slices.ContainsFunc(p.Inputs, func(in manifest.SSTable) bool { return in.Key == o.Key }) {
				t.Fatalf("plan %s would overlap %s left in L%d", planString([]Plan{p}), o.Key, o.Level)
			}
		}
	}
}

// randomRange returns the SSTables of one range: overlapping L0 flushes and
// levels of disjoint SSTables over tokens [0, 9999].
func randomRange(rng *rand.Rand, prefix string, s Strategy) []manifest.SSTable {
	var ts []manifest.SSTable
	for i := range rng.IntN(3 * s.L0Threshold) {
		lo := rng.Int64N(10000)
		hi := lo + rng.Int64N(10000-lo)
		if rng.IntN(2) == 0 {
			lo, hi = 0, 9999
		}
		ts = append(ts, tsst(fmt.Sprintf("%s-0-%d", prefix, i), 0, lo, hi, 1+rng.Int64N(2*s.TargetSize), rng.IntN(100)))
	}
	for l := 1; l < NumLevels; l++ {
		cuts := []int64{0}
		for range rng.IntN(30) {
			cuts = append(cuts, rng.Int64N(10000))
		}
		cuts = append(cuts, 10000)
		slices.Sort(cuts)
		cuts = slices.Compact(cuts)
		for i := 0; i+1 < len(cuts); i++ {
			if rng.IntN(3) == 0 {
				continue
			}
			ts = append(ts, tsst(fmt.Sprintf("%s-%d-%d", prefix, l, i), l, cuts[i], cuts[i+1]-1, 1+rng.Int64N(s.TargetSize*int64(l)), 0))
		}
	}
	rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	return ts
}

func TestPlanRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	iters := 250
	if testing.Short() {
		iters = 100
	}
	total, deeper := 0, 0
	for i := range iters {
		s := testStrategy
		s.Fanout = 2 + rng.IntN(4)
		s.BaseLevelSize = 50 + rng.Int64N(500)
		s.MaxInputBytes = 100 + rng.Int64N(2000)
		snap := Snapshot{Table: planTable, Ranges: map[int][]manifest.SSTable{}}
		for r := range 1 + rng.IntN(3) {
			snap.Ranges[r] = randomRange(rng, fmt.Sprint(r), s)
		}
		// Busy: some of what an earlier planner chose, possibly of another
		// strategy (an option changed since).
		earlier := s
		earlier.BaseLevelSize = 50 + rng.Int64N(500)
		var busy []Plan
		for _, p := range earlier.Plan(snap, nil) {
			if rng.IntN(2) == 0 {
				busy = append(busy, p)
			}
		}
		plans := s.Plan(snap, busy)
		checkPlans(t, s, snap, busy, plans)
		total += len(plans)
		for _, p := range plans {
			if p.OutputLevel > 1 {
				deeper++
			}
		}

		// Deterministic, whatever the order of the snapshot.
		for _, ts := range snap.Ranges {
			rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		}
		if again := s.Plan(snap, busy); !reflect.DeepEqual(again, plans) {
			t.Fatalf("iteration %d: plans differ with the snapshot shuffled:\n%s\nthen\n%s", i, planString(plans), planString(again))
		}
	}
	// The snapshots must give the rules something to check.
	t.Logf("%d plans, %d below L1", total, deeper)
	if total < iters || deeper < iters/2 {
		t.Fatalf("only %d plans, %d below L1, in %d snapshots", total, deeper, iters)
	}
}

// TestPlanGarbageSnapshot plans snapshots that break the level invariants
// (overlaps within a level, odd levels, inverted spans): no panic, and the
// plans still never share inputs.
func TestPlanGarbageSnapshot(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		var ts []manifest.SSTable
		for i := range rng.IntN(40) {
			lo, hi := rng.Int64N(100)-50, rng.Int64N(100)-50
			t := tsst(fmt.Sprint(i), rng.IntN(NumLevels+4)-2, lo, hi, rng.Int64N(300)-10, rng.IntN(5))
			if rng.IntN(3) == 0 {
				t.FirstKey, t.LastKey = []byte{byte(rng.IntN(4))}, []byte{byte(rng.IntN(4))}
			}
			ts = append(ts, t)
		}
		snap := Snapshot{Table: planTable, Ranges: map[int][]manifest.SSTable{0: ts}}
		seen := map[string]bool{}
		for _, p := range testStrategy.Plan(snap, nil) {
			for _, in := range p.Inputs {
				if seen[in.Key] {
					t.Fatalf("input %s planned twice", in.Key)
				}
				seen[in.Key] = true
			}
		}
	}
}

// lsm simulates a range under the strategy: flushes land in L0, and a plan
// runs by replacing its inputs with outputs of the summed size, split at
// the target size over the inputs' token span.
type lsm struct {
	s                 Strategy
	rng               *rand.Rand
	tables            []manifest.SSTable
	next, flushes     int
	flushed, written  int64
	maxL0, maxReadAmp int
}

func (m *lsm) snapshot() Snapshot {
	return Snapshot{Table: planTable, Ranges: map[int][]manifest.SSTable{0: slices.Clone(m.tables)}}
}

func (m *lsm) flush(size int64) {
	m.next++
	lo, hi := int64(0), int64(1<<20-1)
	if m.rng.IntN(4) == 0 { // a flush of a few partitions
		lo = m.rng.Int64N(1 << 20)
		hi = lo + m.rng.Int64N(1<<20-lo)
	}
	m.tables = append(m.tables, tsst(fmt.Sprint("f", m.next), 0, lo, hi, size, m.next))
	m.flushed += size
	m.flushes++
}

func (m *lsm) run(t testing.TB, p Plan) {
	t.Helper()
	for _, in := range p.Inputs {
		i := slices.IndexFunc(m.tables, func(t manifest.SSTable) bool { return t.Key == in.Key })
		if i < 0 {
			t.Fatalf("plan input %s is not live", in.Key)
		}
		m.tables = slices.Delete(m.tables, i, i+1)
	}
	size := p.Bytes()
	sp := spanOf(p.Inputs)
	width := sp.hi.token - sp.lo.token + 1
	n := min((size+p.TargetSize-1)/p.TargetSize, width)
	for i := range n {
		m.next++
		lo := sp.lo.token + width*i/n
		hi := sp.lo.token + width*(i+1)/n - 1
		m.tables = append(m.tables, tsst(fmt.Sprint("c", m.next), p.OutputLevel, lo, hi, size*(i+1)/n-size*i/n, m.next))
	}
	m.written += size
}

// check verifies the levels' invariants and records the amplification.
func (m *lsm) check(t *testing.T) {
	t.Helper()
	ts := slices.Clone(m.tables)
	slices.SortFunc(ts, func(a, b manifest.SSTable) int {
		return cmp.Or(cmp.Compare(a.Level, b.Level), lowerOf(a).compare(lowerOf(b)))
	})
	var sum int64
	l0 := 0
	for i, a := range ts {
		sum += a.Size
		if a.Level == 0 {
			l0++
			continue
		}
		if i > 0 && ts[i-1].Level == a.Level && upperOf(ts[i-1]).compare(lowerOf(a)) >= 0 {
			t.Fatalf("L%d: %s and %s overlap", a.Level, ts[i-1].Key, a.Key)
		}
	}
	if sum != m.flushed {
		t.Fatalf("the range holds %d bytes, %d were flushed", sum, m.flushed)
	}
	m.maxL0 = max(m.maxL0, l0)
	m.maxReadAmp = max(m.maxReadAmp, readAmp(m.tables))
}

// readAmp returns how many SSTables a point read may consult at most:
// every L0 SSTable and one per level below (assuming they all overlap).
func readAmp(ts []manifest.SSTable) int {
	levels := map[int]bool{}
	n := 0
	for _, t := range ts {
		if t.Level == 0 {
			n++
		} else {
			levels[t.Level] = true
		}
	}
	return n + len(levels)
}

func (m *lsm) levelSizes() []int64 {
	sizes := make([]int64, NumLevels)
	for _, t := range m.tables {
		sizes[t.Level] += t.Size
	}
	return sizes
}

// TestPlanConverges flushes into a simulated range while plans run, some
// late, then lets compaction catch up: the levels never overlap, L0 stays
// under the limit while compaction keeps up, and at rest every level is
// within its target.
func TestPlanConverges(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Strategy
	}{
		{"fanout 4", testStrategy},
		{"fanout 10 big L0", Strategy{TargetSize: 64, Fanout: 10, L0Threshold: 8, L0Limit: 20, BaseLevelSize: 256, MaxInputBytes: 2000}},
		{"fanout 2 tight bound", Strategy{TargetSize: 50, Fanout: 2, L0Threshold: 2, L0Limit: 6, BaseLevelSize: 100, MaxInputBytes: 400}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &lsm{s: tc.s, rng: rand.New(rand.NewPCG(5, 6))}
			var busy []Plan
			step := func(late bool) {
				busy = append(busy, m.s.Plan(m.snapshot(), busy)...)
				var still []Plan
				for _, p := range busy {
					if late && m.rng.IntN(3) == 0 {
						still = append(still, p)
						continue
					}
					m.run(t, p)
				}
				busy = still
				m.check(t)
			}
			// Some plans run late: invariants only.
			for range 100 {
				m.flush(10 + m.rng.Int64N(30))
				m.check(t)
				step(true)
			}
			// Compaction keeps up: L0 stays under the limit.
			step(false)
			m.maxL0, m.maxReadAmp = 0, 0
			for range 250 {
				for range 1 + m.rng.IntN(2) {
					m.flush(10 + m.rng.Int64N(30))
				}
				m.check(t)
				step(false)
			}
			if m.maxL0 >= m.s.L0Limit {
				t.Errorf("L0 reached %d SSTables, limit %d", m.maxL0, m.s.L0Limit)
			}
			if bound := m.s.L0Limit + NumLevels - 1; m.maxReadAmp > bound {
				t.Errorf("read amplification reached %d, bound %d", m.maxReadAmp, bound)
			}
			// At rest, nothing is left to plan and every level is within
			// its target: the sizes follow the fanout.
			for range 1000 {
				if len(m.s.Plan(m.snapshot(), nil)) == 0 {
					break
				}
				step(false)
			}
			if ps := m.s.Plan(m.snapshot(), nil); len(ps) > 0 {
				t.Fatalf("still planning at rest:\n%s", planString(ps))
			}
			sizes := m.levelSizes()
			for l := 1; l < NumLevels-1; l++ {
				if sizes[l] > m.s.LevelTarget(l) {
					t.Errorf("L%d holds %d bytes, target %d", l, sizes[l], m.s.LevelTarget(l))
				}
			}
			if b := m.s.Backlog(m.snapshot()); b.MaxL0 >= m.s.L0Threshold {
				t.Errorf("backlog at rest %+v", b)
			}
			// The bound of docs/compaction.md: 2 + B/(T·f) + (F+1)·(N−1),
			// N the levels from L1 down that hold data, f the mean flush.
			n := 0
			for l := 1; l < NumLevels; l++ {
				if sizes[l] > 0 {
					n = l
				}
			}
			f := float64(m.flushed) / float64(m.flushes)
			bound := 2 + float64(m.s.BaseLevelSize)/(float64(m.s.L0Threshold)*f) + float64(m.s.Fanout+1)*float64(n-1)
			wa := 1 + float64(m.written)/float64(m.flushed)
			if wa > bound {
				t.Errorf("write amplification %.2f over the bound %.2f", wa, bound)
			}
			t.Logf("flushed %d, write amp %.2f (bound %.2f), max read amp %d, level sizes %v",
				m.flushed, wa, bound, m.maxReadAmp, sizes)
		})
	}
}
