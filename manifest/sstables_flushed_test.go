package manifest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
)

func pos(node string, shard int, seg uint64, off int64, parts int) LogPosition {
	return LogPosition{Node: node, Shard: shard, Segment: seg, Offset: off, Parts: parts}
}

func TestFlushesState(t *testing.T) {
	for _, c := range []struct {
		name          string
		f             Flushes
		done, partial string
	}{
		{"none", Flushes{}, "0:0", "[]"},
		{"complete and partial", Flushes{Covers: []LogPosition{
			pos("n1", 0, 1, 10, 2), pos("n1", 0, 1, 10, 2), // complete
			pos("n1", 0, 1, 20, 2), // partial
			pos("n1", 0, 1, 5, 3),  // partial, before done: ignored
			pos("n1", 0, 2, 0, 0),  // no part count: no flush
			pos("n2", 0, 9, 9, 1),  // another node
			pos("n1", 1, 9, 9, 1),  // another shard
		}}, "1:10", "[1:20]"},
		{"largest part count", Flushes{Covers: []LogPosition{pos("n1", 0, 1, 10, 1), pos("n1", 0, 1, 10, 3)}}, "0:0", "[1:10]"},
		{"watermark", Flushes{
			Covers:    []LogPosition{pos("n1", 0, 1, 10, 2), pos("n1", 0, 1, 30, 2)},
			Watermark: []LogPosition{pos("n1", 0, 1, 20, 0), pos("n1", 0, 1, 15, 0), pos("n2", 0, 5, 0, 0)},
		}, "1:20", "[1:30]"},
		{"watermark and a later complete flush", Flushes{
			Covers:    []LogPosition{pos("n1", 0, 2, 0, 1)},
			Watermark: []LogPosition{pos("n1", 0, 1, 20, 0)},
		}, "2:0", "[]"},
	} {
		done, partial := c.f.State("n1", 0)
		var ps []string
		for _, p := range partial {
			if p.Node != "n1" || p.Shard != 0 {
				t.Fatalf("%s: partial %+v of another shard", c.name, p)
			}
			ps = append(ps, fmt.Sprintf("%d:%d", p.Segment, p.Offset))
		}
		if got := fmt.Sprintf("%d:%d", done.Segment, done.Offset); got != c.done || fmt.Sprint(ps) != c.partial && !(ps == nil && c.partial == "[]") {
			t.Fatalf("%s: done %s partial %v, want %s %s", c.name, got, ps, c.done, c.partial)
		}
	}
}

// TestCommitFlushedWatermark checks that a commit may remove an SSTable
// whose flush positions nothing carries on only with a watermark at or
// past them, which the range then keeps, through retries, truncation and
// the collection of its garbage.
func TestCommitFlushedWatermark(t *testing.T) {
	e := newEnv(t)
	m := e.open("c1")
	ctx := ctxT(t)
	initRanges(t, m)
	tbl := uuid.New()
	a, b := sst("a", 0, 10), sst("b", 0, 10)
	a.Covers = []LogPosition{pos("n1", 1, 7, 100, 2)}
	b.Covers = []LogPosition{pos("n1", 1, 7, 200, 1), pos("n2", 0, 3, 3, 1)}
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Add: []SSTable{a, b}}); err != nil {
		t.Fatal(err)
	}
	flushes := func() Flushes {
		t.Helper()
		var f Flushes
		if err := m.TableFlushes(ctx, tbl, &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	if f := flushes(); len(f.Covers) != 3 || len(f.Watermark) != 0 {
		t.Fatalf("flushes %+v", f)
	}

	for _, c := range []Commit{
		{Table: tbl, Range: testRange, Remove: []string{"a"}},
		{Table: tbl, Range: testRange, Remove: []string{"a"}, Flushed: []LogPosition{pos("n1", 1, 7, 99, 2)}},
		{Table: tbl, Range: testRange, Remove: []string{"a"}, Flushed: []LogPosition{pos("n1", 2, 7, 100, 2)}},
		{Table: tbl, Range: testRange, Remove: []string{"a"}, Flushed: []LogPosition{pos("n2", 1, 7, 100, 2)}},
		{Table: tbl, Range: testRange, Remove: []string{"b"}, Flushed: []LogPosition{pos("n1", 1, 7, 200, 1)}},
	} {
		if _, err := m.CommitSSTables(ctx, c); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%+v: %v, want ErrInvalid", c, err)
		}
	}
	// An output carrying the positions on needs no watermark.
	out := sst("out", 0, 5)
	out.Covers = b.Covers
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Remove: []string{"b"}, Add: []SSTable{out}}); err != nil {
		t.Fatal(err)
	}
	c := Commit{Table: tbl, Range: testRange, Remove: []string{"a"}, Flushed: []LogPosition{pos("n1", 1, 7, 150, 2)}}
	for range 2 { // the second is a retry: a no-op
		live, err := m.CommitSSTables(ctx, c)
		if err != nil || len(live) != 1 || live[0].Key != "out" {
			t.Fatalf("commit with a watermark: %+v, %v", live, err)
		}
	}
	// A lower watermark does not lower it.
	if _, err := m.CommitSSTables(ctx, Commit{Table: tbl, Range: testRange, Discard: []string{"x"}, Flushed: []LogPosition{pos("n1", 1, 1, 1, 0)}}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]LogPosition{pos("n1", 1, 7, 150, 0)})
	if f := flushes(); fmt.Sprint(f.Watermark) != want || len(f.Covers) != 2 {
		t.Fatalf("flushes %+v, want watermark %s", f, want)
	}
	if d, _ := (&Flushes{Watermark: flushes().Watermark}).State("n1", 1); d.Offset != 150 {
		t.Fatalf("done %+v", d)
	}

	// Truncation and collection keep the watermark, and the document.
	if _, err := m.DropSSTables(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	gs, err := m.Garbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Collected(ctx, gs...); err != nil {
		t.Fatal(err)
	}
	if f := flushes(); fmt.Sprint(f.Watermark) != want || len(f.Covers) != 0 {
		t.Fatalf("after truncation and collection: %+v", f)
	}
}
