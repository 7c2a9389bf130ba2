package compactor

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/manifest"
)

// touchingTables writes two SSTables that share exactly one key: in
// deletes partition P (at 20, long ago) and writes a newer cell of its row
// 1; out holds older data of P that the deletion shadows. If after, out
// begins at in's last key (row 1) and holds P's rows 1 and 2; else out ends
// at in's first key (P's header), with a static cell, after a row of the
// partition before P.
func touchingTables(t *testing.T, s *memStore, after bool) (in, out manifest.SSTable, inEs, outEs []entry) {
	t.Helper()
	p := partitionPrefix(7)
	inEs = []entry{
		headerEntry(p, model.Header{Deletion: model.Deletion{MarkedForDeleteAt: 20, LocalDeletionTime: 5}}),
		rowEntry(p, 1, model.Row{Cells: []model.Cell{cell(2, 30, "new")}}),
	}
	outEs = []entry{
		rowEntry(partitionPrefix(6), 1, model.Row{Cells: []model.Cell{cell(1, 10, "other")}}),
		headerEntry(p, model.Header{Static: model.Row{Cells: []model.Cell{cell(3, 10, "old")}}}),
	}
	if after {
		outEs = []entry{
			rowEntry(p, 1, model.Row{Cells: []model.Cell{cell(1, 10, "old")}}),
			rowEntry(p, 2, model.Row{Cells: []model.Cell{cell(1, 10, "old")}}),
		}
	}
	withTokens := func(m manifest.SSTable, level int) manifest.SSTable {
		lo, err := keys.Token(m.FirstKey)
		if err != nil {
			t.Fatal(err)
		}
		hi, err := keys.Token(m.LastKey)
		if err != nil {
			t.Fatal(err)
		}
		m.MinToken, m.MaxToken, m.Level = lo, hi, level
		return m
	}
	in = withTokens(writeTable(t, s, "in.sst", inEs, sstable.WriterOptions{}), 0)
	out = withTokens(writeTable(t, s, "out.sst", outEs, sstable.WriterOptions{}), 2)
	lo, hi := out, in // the lower table's last key is the other's first
	if after {
		lo, hi = in, out
	}
	if !bytes.Equal(lo.LastKey, hi.FirstKey) || bytes.Equal(lo.FirstKey, hi.FirstKey) || bytes.Equal(lo.LastKey, hi.LastKey) {
		t.Fatalf("the tables must share exactly one boundary key: in %x..%x, out %x..%x", in.FirstKey, in.LastKey, out.FirstKey, out.LastKey)
	}
	return in, out, inEs, outEs
}

// TestPlanTouchingSpans: SSTables whose spans meet at exactly one key
// overlap, both for the closure that decides a plan's inputs in the level
// below and for OldestOutside, the purge rule's bound.
func TestPlanTouchingSpans(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after=%v", after), func(t *testing.T) { testPlanTouchingSpans(t, after) })
	}
}

func testPlanTouchingSpans(t *testing.T, after bool) {
	in, out, _, _ := touchingTables(t, newMemStore(), after)
	for _, c := range []struct {
		name      string
		inL, outL int
		base      int64 // L1's target size: 1 makes L1 the level to compact
	}{
		{"L0 into L1", 0, 1, 1 << 20},
		{"L1 into L2", 1, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testStrategy
			s.L0Threshold, s.BaseLevelSize = 1, c.base
			a, b := in, out
			a.Level, b.Level = c.inL, c.outL
			plans := s.Plan(Snapshot{Table: testTable, Ranges: map[int][]manifest.SSTable{0: {a, b}}}, nil)
			if len(plans) != 1 || keysOf(plans[0].Inputs) != "in.sst out.sst" {
				t.Fatalf("plans:\n%s\nwant one merging in.sst and out.sst", planString(plans))
			}
		})
	}
	p := Plan{Table: testTable, Inputs: []manifest.SSTable{in}, OutputLevel: 1}
	if got := p.OldestOutside(Snapshot{Table: testTable, Ranges: map[int][]manifest.SSTable{0: {in, out}}}); got != out.MinTimestamp {
		t.Fatalf("OldestOutside = %d, want %d, the touching table's oldest write", got, out.MinTimestamp)
	}
}

// TestPurgeKeepsTombstoneOverTouchingTable runs a job whose only input
// touches, at one key, an older SSTable outside the job: the deletion it
// holds is past gc grace but still shadows that table's data, so the purge
// rule must keep it, and reads after the job see what they saw before.
func TestPurgeKeepsTombstoneOverTouchingTable(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after=%v", after), func(t *testing.T) { testPurgeKeepsTombstoneOverTouchingTable(t, after) })
	}
}

func testPurgeKeepsTombstoneOverTouchingTable(t *testing.T, after bool) {
	s := newMemStore()
	in, out, inEs, outEs := touchingTables(t, s, after)
	snap := Snapshot{Table: testTable, Ranges: map[int][]manifest.SSTable{0: {in, out}}}
	p := Plan{Table: testTable, Inputs: []manifest.SSTable{in}, OutputLevel: 1, TargetSize: 1 << 20}
	job := p.Job("touch")
	job.Now, job.GCBefore, job.OldestOutside = 100, 50, p.OldestOutside(snap)
	outs, stats, err := Run(context.Background(), job, RunDeps{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	if stats.TombstonesPurged != 0 {
		t.Fatalf("%d tombstones purged, want 0: the table outside holds older data", stats.TombstonesPurged)
	}
	got := readTables(t, s, outs)
	if g, w := view(t, mergeEntries(t, got, outEs), job.Now), view(t, mergeEntries(t, inEs, outEs), job.Now); g != w {
		t.Fatalf("after the job, reads see\n%s\nbefore it\n%s", g, w)
	}
}
