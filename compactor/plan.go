package compactor

import (
	"bytes"
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/manifest"
)

// Snapshot is the live SSTables of one table, by manifest token range, as
// one manifest version showed them. Ranges are planned independently:
// every SSTable, flushed or compacted, lies in one range.
type Snapshot struct {
	Table  uuid.UUID
	Ranges map[int][]manifest.SSTable
}

// SnapshotOf takes the table's SSTables from v.
func SnapshotOf(v *manifest.View, table uuid.UUID) Snapshot {
	s := Snapshot{Table: table, Ranges: map[int][]manifest.SSTable{}}
	for r := range v.RangeCount() {
		if ts := v.SSTablesInRange(table, r); len(ts) > 0 {
			s.Ranges[r] = ts
		}
	}
	return s
}

// Plan is a compaction the strategy chose: merge Inputs, all of one range,
// into SSTables of OutputLevel that end at TargetSize.
type Plan struct {
	Table       uuid.UUID
	Range       int
	Inputs      []manifest.SSTable
	OutputLevel int
	TargetSize  int64
}

// Bytes returns the size of the plan's inputs.
func (p Plan) Bytes() int64 {
	var n int64
	for _, in := range p.Inputs {
		n += in.Size
	}
	return n
}

// Job returns the merge of the plan as attempt id. It purges nothing
// (GCBefore 0): the runner sets Now, GCBefore and OldestOutside from what
// is live when it runs, which a plan made earlier cannot know.
func (p Plan) Job(id string) Job {
	return Job{
		ID:            id,
		Table:         p.Table,
		Inputs:        slices.Clone(p.Inputs),
		OutputLevel:   p.OutputLevel,
		TargetSize:    p.TargetSize,
		OldestOutside: math.MaxInt64,
	}
}

// OldestOutside returns the smallest MinTimestamp of the SSTables of snap
// in p's range that are not inputs of p and overlap its span, or
// math.MaxInt64: Job.OldestOutside as far as snap knows. The runner takes
// snap when the job starts and lowers the result to the oldest write not
// yet in a committed SSTable, which no manifest shows.
func (p Plan) OldestOutside(snap Snapshot) int64 {
	oldest := int64(math.MaxInt64)
	if snap.Table != p.Table || len(p.Inputs) == 0 {
		return oldest
	}
	sp := spanOf(p.Inputs)
	for _, t := range snap.Ranges[p.Range] {
		if sp.overlaps(span{lowerOf(t), upperOf(t)}) && !slices.ContainsFunc(p.Inputs, func(in manifest.SSTable) bool { return in.Key == t.Key }) {
			oldest = min(oldest, t.MinTimestamp)
		}
	}
	return oldest
}

// Plan returns the compactions that snap needs now, given the plans still
// queued or running (busy), in a deterministic order. No returned plan
// shares an input with another or with a busy plan, and no two of them, or
// one and a busy plan, write overlapping key spans of one level. Plan does
// no I/O.
func (s Strategy) Plan(snap Snapshot, busy []Plan) []Plan {
	var out []Plan
	for _, r := range slices.Sorted(maps.Keys(snap.Ranges)) {
		rp := rangePlanner{s: s, table: snap.Table, rng: r, taken: map[string]bool{}}
		for _, b := range busy {
			if b.Table == snap.Table && b.Range == r {
				rp.reserve(b)
			}
		}
		out = append(out, rp.plan(snap.Ranges[r])...)
	}
	return out
}

// rangePlanner plans one range.
type rangePlanner struct {
	s     Strategy
	table uuid.UUID
	rng   int
	// taken holds the inputs of busy and chosen plans, writes their output
	// spans by level.
	taken  map[string]bool
	writes [NumLevels][]span
	// levels holds L1 and below sorted by lower bound, and maxUpper[l][i]
	// the greatest upper bound of levels[l][:i+1] (non-decreasing even if
	// a level overlaps itself), to find overlaps by binary search.
	levels   [NumLevels][]manifest.SSTable
	maxUpper [NumLevels][]bound
}

func (rp *rangePlanner) reserve(p Plan) {
	for _, in := range p.Inputs {
		rp.taken[in.Key] = true
	}
	if len(p.Inputs) > 0 {
		l := min(max(p.OutputLevel, 0), NumLevels-1)
		rp.writes[l] = append(rp.writes[l], spanOf(p.Inputs))
	}
}

// writable reports whether outputs of level over sp would overlap no busy
// or chosen plan's outputs.
func (rp *rangePlanner) writable(level int, sp span) bool {
	return !slices.ContainsFunc(rp.writes[level], sp.overlaps)
}

func (rp *rangePlanner) plan(tables []manifest.SSTable) []Plan {
	for _, t := range tables {
		l := min(max(t.Level, 0), NumLevels-1)
		rp.levels[l] = append(rp.levels[l], t)
	}
	slices.SortFunc(rp.levels[0], func(a, b manifest.SSTable) int { // oldest first
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Key, b.Key))
	})
	for l := 1; l < NumLevels; l++ {
		slices.SortFunc(rp.levels[l], func(a, b manifest.SSTable) int {
			return cmp.Or(lowerOf(a).compare(lowerOf(b)), cmp.Compare(a.Key, b.Key))
		})
		for i, t := range rp.levels[l] {
			u := upperOf(t)
			if i > 0 && rp.maxUpper[l][i-1].compare(u) > 0 {
				u = rp.maxUpper[l][i-1]
			}
			rp.maxUpper[l] = append(rp.maxUpper[l], u)
		}
	}

	// Levels by score, highest first: L0 by count, the others by size.
	type scored struct {
		level int
		score float64
	}
	var order []scored
	if n := len(rp.levels[0]); n >= rp.s.L0Threshold {
		order = append(order, scored{0, float64(n) / float64(rp.s.L0Threshold)})
	}
	for l := 1; l < NumLevels-1; l++ {
		if size := sizeOf(rp.levels[l]); size > rp.s.LevelTarget(l) {
			order = append(order, scored{l, float64(size) / float64(rp.s.LevelTarget(l))})
		}
	}
	slices.SortStableFunc(order, func(a, b scored) int { return cmp.Compare(b.score, a.score) })

	var out []Plan
	for _, sc := range order {
		if sc.level == 0 {
			out = append(out, rp.planL0()...)
		} else {
			out = append(out, rp.planLevel(sc.level)...)
		}
	}
	return out
}

// planL0 merges the available L0 SSTables, oldest first and as many as the
// input bound allows, with the L1 SSTables they overlap. It waits while
// fewer than L0Threshold are available: the others are being compacted.
func (rp *rangePlanner) planL0() []Plan {
	var avail []manifest.SSTable
	for _, t := range rp.levels[0] {
		if !rp.taken[t.Key] {
			avail = append(avail, t)
		}
	}
	if len(avail) < rp.s.L0Threshold {
		return nil
	}
	var chosen, below []manifest.SSTable
	var sp span
	for _, t := range avail {
		nsp := span{lowerOf(t), upperOf(t)}
		if len(chosen) > 0 {
			nsp = sp.union(nsp)
		}
		nbelow, nsp, ok := rp.closure(1, nsp)
		if !ok || !rp.writable(1, nsp) {
			continue
		}
		if len(chosen) > 0 && sizeOf(chosen)+t.Size+sizeOf(nbelow) > rp.s.MaxInputBytes {
			continue
		}
		chosen, below, sp = append(chosen, t), nbelow, nsp
	}
	if len(chosen) == 0 {
		return nil
	}
	return []Plan{rp.choose(append(chosen, below...), 1)}
}

// planLevel moves SSTables of level l into l+1, one plan each, until the
// bytes chosen cover l's excess over its target. It prefers the SSTables
// that overlap the fewest bytes below, relative to their own size, which
// keeps the write amplification low.
func (rp *rangePlanner) planLevel(l int) []Plan {
	excess := sizeOf(rp.levels[l]) - rp.s.LevelTarget(l)
	type cand struct {
		t     manifest.SSTable
		below []manifest.SSTable
		sp    span
		ratio float64
	}
	var cands []cand
	for _, t := range rp.levels[l] {
		if rp.taken[t.Key] {
			continue
		}
		below, sp, ok := rp.closure(l+1, span{lowerOf(t), upperOf(t)})
		if !ok {
			continue
		}
		cands = append(cands, cand{t, below, sp, float64(sizeOf(below)) / float64(max(t.Size, 1))})
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.ratio, b.ratio) })
	var out []Plan
	for _, c := range cands {
		if excess <= 0 {
			break
		}
		// Earlier choices may have taken c's overlaps or written its span.
		if rp.taken[c.t.Key] || slices.ContainsFunc(c.below, func(t manifest.SSTable) bool { return rp.taken[t.Key] }) || !rp.writable(l+1, c.sp) {
			continue
		}
		out = append(out, rp.choose(append([]manifest.SSTable{c.t}, c.below...), l+1))
		excess -= c.t.Size
	}
	return out
}

// closure returns the SSTables of level l that overlap sp, and sp grown to
// cover them, until no more overlap; ok is false if one of them is taken.
func (rp *rangePlanner) closure(l int, sp span) (ts []manifest.SSTable, _ span, ok bool) {
	level := rp.levels[l]
	in := make([]bool, len(level))
	for grown := true; grown; {
		grown = false
		// Every SSTable before start ends before sp begins.
		start, _ := slices.BinarySearchFunc(rp.maxUpper[l], sp.lo, bound.compare)
		for i := start; i < len(level); i++ {
			t := level[i]
			if lowerOf(t).compare(sp.hi) > 0 {
				break // sorted by lower bound: no later one overlaps
			}
			if in[i] || !sp.overlaps(span{lowerOf(t), upperOf(t)}) {
				continue
			}
			if rp.taken[t.Key] {
				return nil, sp, false
			}
			in[i] = true
			ts = append(ts, t)
			sp = sp.union(span{lowerOf(t), upperOf(t)})
			grown = true
		}
	}
	return ts, sp, true
}

// choose records a plan's inputs and output span as taken and returns it.
func (rp *rangePlanner) choose(inputs []manifest.SSTable, level int) Plan {
	p := Plan{Table: rp.table, Range: rp.rng, Inputs: inputs, OutputLevel: level, TargetSize: rp.s.TargetSize}
	rp.reserve(p)
	return p
}

func sizeOf(ts []manifest.SSTable) int64 {
	var n int64
	for _, t := range ts {
		n += t.Size
	}
	return n
}

// bound is a position in a range's key order: a token, then a storage key
// (which starts with the token). top stands for the end of the token's
// keys, the upper bound of an SSTable that records no last key.
type bound struct {
	token int64
	key   []byte
	top   bool
}

func (a bound) compare(b bound) int {
	if c := cmp.Compare(a.token, b.token); c != 0 {
		return c
	}
	switch {
	case a.top && b.top:
		return 0
	case a.top:
		return 1
	case b.top:
		return -1
	}
	return bytes.Compare(a.key, b.key)
}

func lowerOf(t manifest.SSTable) bound { return bound{token: t.MinToken, key: t.FirstKey} }
func upperOf(t manifest.SSTable) bound {
	return bound{token: t.MaxToken, key: t.LastKey, top: len(t.LastKey) == 0}
}

// span is a closed interval of bounds.
type span struct{ lo, hi bound }

func (a span) overlaps(b span) bool { return a.lo.compare(b.hi) <= 0 && b.lo.compare(a.hi) <= 0 }

func (a span) union(b span) span {
	if b.lo.compare(a.lo) < 0 {
		a.lo = b.lo
	}
	if b.hi.compare(a.hi) > 0 {
		a.hi = b.hi
	}
	return a
}

// spanOf returns the span that covers ts (not empty).
func spanOf(ts []manifest.SSTable) span {
	sp := span{lowerOf(ts[0]), upperOf(ts[0])}
	for _, t := range ts[1:] {
		sp = sp.union(span{lowerOf(t), upperOf(t)})
	}
	return sp
}

// PlanMajor plans a major compaction requested at since: every range of
// snap not yet Compacted gets one plan merging every live SSTable of the
// range, from all levels, into its deepest level (L1 at least), as one
// sorted run split at TargetSize. A range in which a busy plan works waits
// for it: the major plan reads every SSTable of the range, so it would
// share an input or an output span. MaxInputBytes does not bound a major
// plan, which the operator asked for whole; the merge streams, so only its
// duration grows with the range. left lists the ranges not yet compacted,
// planned now or waiting; the request is done when it is empty.
func (s Strategy) PlanMajor(snap Snapshot, busy []Plan, since time.Time) (plans []Plan, left []int) {
	for _, r := range slices.Sorted(maps.Keys(snap.Ranges)) {
		tables := snap.Ranges[r]
		if Compacted(tables, since) {
			continue
		}
		left = append(left, r)
		if slices.ContainsFunc(busy, func(b Plan) bool { return b.Table == snap.Table && b.Range == r }) {
			continue
		}
		level := 1
		for _, t := range tables {
			level = max(level, min(t.Level, NumLevels-1))
		}
		inputs := slices.Clone(tables)
		slices.SortFunc(inputs, func(a, b manifest.SSTable) int {
			return cmp.Or(cmp.Compare(a.Level, b.Level), lowerOf(a).compare(lowerOf(b)), cmp.Compare(a.Key, b.Key))
		})
		plans = append(plans, Plan{Table: snap.Table, Range: r, Inputs: inputs, OutputLevel: level, TargetSize: s.TargetSize})
	}
	return plans, left
}

// Compacted reports whether a range's live SSTables satisfy a major
// compaction requested at since: those that count, every SSTable but the
// L0 flushes created after since (writes that came later, which must not
// keep the request from ending), are none, or all of one level below L0
// and disjoint, one sorted run. Created comes from the clock of the node
// that wrote the SSTable, since from the requester's: clock skew moves a
// flush made around the request to one side or the other.
func Compacted(tables []manifest.SSTable, since time.Time) bool {
	var run []manifest.SSTable
	for _, t := range tables {
		if t.Level == 0 && t.Created.After(since) {
			continue
		}
		if t.Level == 0 || (len(run) > 0 && t.Level != run[0].Level) {
			return false
		}
		run = append(run, t)
	}
	slices.SortFunc(run, func(a, b manifest.SSTable) int { return lowerOf(a).compare(lowerOf(b)) })
	for i := 1; i < len(run); i++ {
		if upperOf(run[i-1]).compare(lowerOf(run[i])) >= 0 {
			return false
		}
	}
	return true
}
