package manifest

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"
)

func sstKeys(ts []SSTable) []string {
	var out []string
	for _, s := range ts {
		out = append(out, s.Key)
	}
	slices.Sort(out)
	return out
}

// A load's parts in several ranges stay hidden from direct reads and from
// a View until the one commit of its record, then appear together.
func TestLoadCommitShowsAllParts(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	initRanges(t, m)
	v, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	tbl, id := uuid.New(), uuid.New()
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{sst("flushed", 0, 10)}}); err != nil {
		t.Fatal(err)
	}
	part := func(key string, r int) SSTable {
		lo, _ := RangeBounds(r, testRanges)
		s := sst(key, lo, lo+5)
		s.Covers, s.Load = nil, id
		return s
	}
	// A part of a load that is not recorded is refused.
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: 0, Add: []SSTable{part("p0", 0)}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("part of an unrecorded load: %v", err)
	}
	if err := m.CreateLoad(ctx, id, tbl); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateLoad(ctx, id, tbl); err != nil {
		t.Fatalf("retried create: %v", err)
	}
	for r, key := range []string{"p0", "p1", "p2", "p3"} {
		if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: r, Add: []SSTable{part(key, r)}}); err != nil {
			t.Fatal(err)
		}
	}
	direct, err := m.SSTables(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if got := sstKeys(direct); !slices.Equal(got, []string{"flushed"}) {
		t.Fatalf("pending load visible to a direct read: %v", got)
	}
	if err := v.WaitFor(ctx, func(v *View) bool { return v.SSTablesRevision() > 0 }); err != nil {
		t.Fatal(err)
	}
	if err := m.CommitLoad(ctx, id); err != nil {
		t.Fatal(err)
	}
	want := []string{"flushed", "p0", "p1", "p2", "p3"}
	// The view shows either no part or all of them at every step.
	err = v.WaitFor(ctx, func(v *View) bool {
		got := sstKeys(v.SSTables(tbl))
		if len(got) != 1 && len(got) != len(want) {
			t.Errorf("view shows part of a load: %v", got)
		}
		return len(got) == len(want)
	})
	if err != nil {
		t.Fatal(err)
	}
	if direct, err = m.SSTables(ctx, tbl); err != nil || !slices.Equal(sstKeys(direct), want) {
		t.Fatalf("after commit: %v, %v", sstKeys(direct), err)
	}
	if err := m.AbandonLoad(ctx, id); !errors.Is(err, ErrInvalid) {
		t.Fatalf("abandoning a committed load: %v", err)
	}
}

// An abandoned load's parts never show and go to the garbage list; no part
// can join it afterwards.
func TestAbandonLoad(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	initRanges(t, m)
	tbl, id := uuid.New(), uuid.New()
	if err := m.CreateLoad(ctx, id, tbl); err != nil {
		t.Fatal(err)
	}
	s := sst("p", 0, 5)
	s.Covers, s.Load = nil, id
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{s}}); err != nil {
		t.Fatal(err)
	}
	if err := m.AbandonLoad(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := m.AbandonLoad(ctx, id); err != nil {
		t.Fatalf("abandoning again: %v", err)
	}
	if err := m.CommitLoad(ctx, id); !errors.Is(err, ErrInvalid) {
		t.Fatalf("committing an abandoned load: %v", err)
	}
	gs, err := m.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || gs[0].Key != "p" {
		t.Fatalf("garbage %+v", gs)
	}
	s.Key = "q"
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{s}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("part after abandon: %v", err)
	}
	if l, err := m.GetLoad(ctx, id); err != nil || l.State != LoadAbandoned {
		t.Fatalf("record %+v, %v", l, err)
	}
}
