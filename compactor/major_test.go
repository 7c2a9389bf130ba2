package compactor

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/manifest"
)

func TestCompacted(t *testing.T) {
	since := planEpoch.Add(10 * time.Second) // tsst's second 10
	for _, c := range []struct {
		name   string
		tables []manifest.SSTable
		want   bool
	}{
		{"empty", nil, true},
		{"one L0 from before", []manifest.SSTable{tsst("a", 0, 0, 9, 10, 1)}, false},
		{"L0 flushed at the request", []manifest.SSTable{tsst("a", 0, 0, 9, 10, 10)}, false},
		{"only later L0", []manifest.SSTable{tsst("a", 0, 0, 9, 10, 11), tsst("b", 0, 0, 9, 10, 12)}, true},
		{"one run", []manifest.SSTable{tsst("b", 3, 10, 19, 10, 1), tsst("a", 3, 0, 9, 10, 1)}, true},
		{"one run and later L0", []manifest.SSTable{tsst("a", 2, 0, 9, 10, 1), tsst("l", 0, 0, 99, 10, 20)}, true},
		{"two levels", []manifest.SSTable{tsst("a", 1, 0, 9, 10, 1), tsst("b", 2, 10, 19, 10, 1)}, false},
		{"overlapping in a level", []manifest.SSTable{tsst("a", 1, 0, 10, 10, 1), tsst("b", 1, 10, 19, 10, 1)}, false},
		{"run and earlier L0", []manifest.SSTable{tsst("a", 1, 0, 9, 10, 1), tsst("l", 0, 0, 9, 10, 2)}, false},
	} {
		if got := Compacted(c.tables, since); got != c.want {
			t.Errorf("%s: Compacted = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPlanMajor(t *testing.T) {
	table := uuid.New()
	since := planEpoch.Add(10 * time.Second)
	snap := Snapshot{Table: table, Ranges: map[int][]manifest.SSTable{
		// Every level at once: into L3.
		0: {tsst("0a", 0, 0, 99, 10, 1), tsst("0b", 1, 0, 49, 10, 1), tsst("0c", 1, 50, 99, 10, 1), tsst("0d", 3, 0, 99, 10, 1), tsst("0e", 0, 5, 6, 10, 11)},
		// Compacted already.
		1: {tsst("1a", 2, 0, 49, 10, 1), tsst("1b", 2, 50, 99, 10, 1), tsst("1c", 0, 0, 99, 10, 15)},
		// L0 alone: into L1.
		2: {tsst("2a", 0, 0, 99, 10, 1), tsst("2b", 0, 0, 99, 10, 2)},
		// Busy: waits.
		3: {tsst("3a", 0, 0, 99, 10, 1), tsst("3b", 1, 0, 99, 10, 1)},
		// One overlapping level: rewritten in place.
		4: {tsst("4a", 2, 0, 50, 10, 1), tsst("4b", 2, 50, 99, 10, 1)},
	}}
	busy := []Plan{
		{Table: table, Range: 3, Inputs: snap.Ranges[3][:1], OutputLevel: 1},
		{Table: uuid.New(), Range: 2, Inputs: []manifest.SSTable{tsst("x", 0, 0, 9, 1, 1)}, OutputLevel: 1}, // another table's
	}
	s := DefaultStrategy()
	s.MaxInputBytes = 15 // a major plan is not bound by it
	plans, left := s.PlanMajor(snap, busy, since)
	if !slices.Equal(left, []int{0, 2, 3, 4}) {
		t.Fatalf("left %v, want [0 2 3 4]", left)
	}
	want := "0:L3:0a 0e 0b 0c 0d\n2:L1:2a 2b\n4:L2:4a 4b"
	if got := planString(plans); got != want {
		t.Fatalf("plans\n%s\nwant\n%s", got, want)
	}
	for _, p := range plans {
		if p.Table != table || p.TargetSize != s.TargetSize {
			t.Errorf("plan %+v", p)
		}
		// Every SSTable of the range, each once.
		if got, all := keysOf(p.Inputs), snap.Ranges[p.Range]; len(p.Inputs) != len(all) {
			t.Errorf("range %d: inputs %s of %d SSTables", p.Range, got, len(all))
		}
	}
	// Once the busy plan is gone, range 3 is planned too.
	plans, _ = s.PlanMajor(snap, nil, since)
	if got := planString(plans); got != "0:L3:0a 0e 0b 0c 0d\n2:L1:2a 2b\n3:L1:3a 3b\n4:L2:4a 4b" {
		t.Fatalf("plans without the busy one:\n%s", got)
	}
}

// TestPlannerCompactionRequest runs a major compaction request through
// the planner: plans for every range, each covering all its SSTables,
// never one beside a busy plan, and the request done once every range is
// compacted, deleted a retention period later.
func TestPlannerCompactionRequest(t *testing.T) {
	e := newPlannerEnv(t, nil)
	q := &planQueue{}
	p := e.planner("a", q, nil, time.Second)
	tick := func(want int) []Plan {
		t.Helper()
		before := q.len()
		if n, err := p.Tick(e.ctx); err != nil || n != want {
			t.Fatalf("Tick = %d, %v; want %d plans", n, err, want)
		}
		q.mu.Lock()
		defer q.mu.Unlock()
		return slices.Clone(q.plans[before:])
	}
	deep := func(r, level int) manifest.SSTable {
		lo, hi := manifest.RangeBounds(r, plannerRanges)
		s := manifest.SSTable{Key: fmt.Sprintf("deep/%d", r), Level: level, Size: 5000, MinToken: lo, MaxToken: hi, Created: e.clock.Now()}
		e.commit(manifest.Commit{Table: e.table.ID, Range: r, Add: []manifest.SSTable{s}})
		return s
	}
	// Range 0: two flushes. Range 1: a flush over an L2 SSTable. Range 2:
	// a single L3 SSTable, compacted already. Range 3: enough flushes for
	// the strategy, whose plan is busy when the request comes, over an L2
	// SSTable.
	e.flush(0)
	e.flush(0)
	e.flush(1)
	deep(1, 2)
	deep(2, 3)
	deep(3, 2)
	for range DefaultL0Threshold {
		e.flush(3)
	}
	busy := tick(1)[0]
	if busy.Range != 3 || busy.OutputLevel != 1 {
		t.Fatalf("strategy's plan %s", planString([]Plan{busy}))
	}

	e.clock.Add(time.Second)
	req, err := e.m.RequestCompaction(e.ctx, e.table.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Add(time.Second)
	late := e.flush(2) // after the request: it does not hold it up
	plans := tick(2)
	if got := planString(plans); got != "0:L1:flush/1 flush/2\n1:L2:flush/3 deep/1" {
		t.Fatalf("major plans:\n%s", got)
	}
	snap := SnapshotOf(e.v, e.table.ID)
	checkMajor(t, snap, plans, busy)
	tick(0) // submitted: busy now

	// Ranges 0 and 1 compact; the strategy's job in range 3 commits.
	for _, pl := range plans {
		e.runPlan(pl)
	}
	e.runPlan(busy)
	if r, _ := e.m.CompactionRequest(e.ctx, e.table.ID); r.Done() {
		t.Fatal("request done before range 3 is compacted")
	}
	plans = tick(1)
	if got := planString(plans); got != "3:L2:"+outKey(busy)+" deep/3" {
		t.Fatalf("range 3's major plan: %s", got)
	}
	checkMajor(t, SnapshotOf(e.v, e.table.ID), plans)
	e.runPlan(plans[0])
	tick(0)
	r, err := e.m.CompactionRequest(e.ctx, e.table.ID)
	if err != nil || !r.Done() || r.ID != req.ID {
		t.Fatalf("request after every range compacted: %+v, %v", r, err)
	}
	for rg := range plannerRanges {
		if ts := e.v.SSTablesInRange(e.table.ID, rg); !Compacted(ts, req.RequestedAt) {
			t.Errorf("range %d not compacted: %s", rg, keysOf(ts))
		}
	}
	if ts := e.v.SSTablesInRange(e.table.ID, 2); !slices.ContainsFunc(ts, func(s manifest.SSTable) bool { return s.Key == late.Key }) {
		t.Errorf("the flush after the request was compacted")
	}
	tick(0)
	e.clock.Add(RequestRetention)
	tick(0)
	if _, err := e.m.CompactionRequest(e.ctx, e.table.ID); err == nil {
		t.Fatal("done request kept past the retention")
	}

	// A request of a dropped table goes.
	if _, err := e.m.RequestCompaction(e.ctx, e.table.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.m.DropTable(e.ctx, "ks", "t"); err != nil {
		t.Fatal(err)
	}
	if err := e.v.WaitFor(e.ctx, func(v *manifest.View) bool { return v.Table("ks", "t") == nil }); err != nil {
		t.Fatal(err)
	}
	tick(0)
	if rs, err := e.m.CompactionRequests(e.ctx); err != nil || len(rs) != 0 {
		t.Fatalf("requests after the drop: %+v, %v", rs, err)
	}
}

// checkMajor checks that each plan reads every SSTable of its range, and
// that no plan shares a range with a busy one.
func checkMajor(t *testing.T, snap Snapshot, plans []Plan, busy ...Plan) {
	t.Helper()
	for _, p := range plans {
		got := mapKeysOf(p.Inputs)
		if want := mapKeysOf(snap.Ranges[p.Range]); !slices.Equal(got, want) {
			t.Errorf("range %d: plan reads %v, the range holds %v", p.Range, got, want)
		}
		for _, b := range busy {
			if b.Table == p.Table && b.Range == p.Range {
				t.Errorf("plan %s beside busy %s", planString([]Plan{p}), planString([]Plan{b}))
			}
		}
	}
}

func mapKeysOf(ts []manifest.SSTable) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Key)
	}
	slices.Sort(out)
	return out
}

func outKey(p Plan) string { return "out/" + JobID(p)[:8] }

// runPlan commits what a worker would: one output over the inputs' span
// in the plan's level, replacing them.
func (e *plannerEnv) runPlan(p Plan) {
	e.t.Helper()
	out := manifest.SSTable{Key: outKey(p), Level: p.OutputLevel, Size: p.Bytes(), Created: e.clock.Now(),
		MinToken: p.Inputs[0].MinToken, MaxToken: p.Inputs[0].MaxToken}
	var remove []string
	for _, in := range p.Inputs {
		out.MinToken, out.MaxToken = min(out.MinToken, in.MinToken), max(out.MaxToken, in.MaxToken)
		remove = append(remove, in.Key)
	}
	want := len(e.v.SSTablesInRange(p.Table, p.Range)) - len(p.Inputs) + 1
	if _, err := e.m.CommitSSTables(e.ctx, manifest.Commit{Table: p.Table, Range: p.Range, Add: []manifest.SSTable{out}, Remove: remove}); err != nil {
		e.t.Fatal(err)
	}
	if err := e.v.WaitFor(e.ctx, func(v *manifest.View) bool { return len(v.SSTablesInRange(p.Table, p.Range)) == want }); err != nil {
		e.t.Fatal(err)
	}
}
