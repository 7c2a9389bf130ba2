package manifest

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/google/uuid"
)

// A flush is the set of SSTables one memtable of an ingest node's
// commitlog shard became: one per table and range, each carrying the
// flush's LogPosition (node, shard, position, Parts) in its Covers. The
// node replays its log from the newest complete flush, so the manifest must
// never make a flush look less complete than it was:
//
//	live parts of a flush   SSTables whose Covers hold its position, in
//	                        every range document of every table
//	complete                live parts >= Parts, or at or below a
//	                        watermark (TableSSTables.Flushed) of its shard
//	done                    the newest complete position
//	partial                 the incomplete positions after done
//
// A compaction carries its inputs' positions on in its first output. One
// that wrote nothing (all its data was dead) has nothing to carry them:
// its commit raises the range's watermark of each shard to the positions
// it removes instead (Commit.Flushed), which it may only do for positions
// at or below the shard's done. The watermark then keeps done where it was,
// and no position after it changes, so done and partial answer the same
// before and after.

// compareLog orders positions of one shard's log.
func compareLog(a, b LogPosition) int {
	if c := cmp.Compare(a.Segment, b.Segment); c != 0 {
		return c
	}
	return cmp.Compare(a.Offset, b.Offset)
}

func sameShard(a, b LogPosition) bool { return a.Node == b.Node && a.Shard == b.Shard }

// flushedThrough reports whether p is at or below the watermark of its
// shard in marks.
func flushedThrough(marks []LogPosition, p LogPosition) bool {
	return slices.ContainsFunc(marks, func(m LogPosition) bool { return sameShard(m, p) && compareLog(p, m) <= 0 })
}

// raiseFlushed returns marks with the watermark of p's shard raised to p.
// Watermarks keep no part count: a watermark is complete by definition.
func raiseFlushed(marks []LogPosition, p LogPosition) []LogPosition {
	p.Parts = 0
	i := slices.IndexFunc(marks, func(m LogPosition) bool { return sameShard(m, p) })
	if i < 0 {
		return append(marks, p)
	}
	if compareLog(p, marks[i]) > 0 {
		marks[i] = p
	}
	return marks
}

// Flushes is what the manifest records of flushes: the Covers of live
// SSTables, one entry per SSTable naming a position, and the watermarks.
type Flushes struct {
	Covers    []LogPosition
	Watermark []LogPosition
}

// TableFlushes adds to f what every range document of table records of
// flushes.
func (m *Manifest) TableFlushes(ctx context.Context, table uuid.UUID, f *Flushes) error {
	n, err := m.RangeCount(ctx)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for r := range n {
		ts, err := getJSON[TableSSTables](ctx, m.sstables, sstablesKey(table, r))
		if err != nil {
			return err
		}
		if ts == nil {
			continue
		}
		for _, s := range ts.SSTables {
			f.Covers = append(f.Covers, s.Covers...)
		}
		f.Watermark = append(f.Watermark, ts.Flushed...)
	}
	return nil
}

// State returns, for the commitlog shard of node, the newest complete
// flush position (done; the zero position if none) and the incomplete
// positions after it in log order (partial). Covers without a part count
// name no flush and are ignored. A position recorded with different part
// counts (attempts at one flush, with a table truncated between them)
// needs the largest.
func (f *Flushes) State(node string, shard int) (done LogPosition, partial []LogPosition) {
	shardOf := LogPosition{Node: node, Shard: shard}
	type flush struct{ live, parts int }
	flushes := map[LogPosition]*flush{}
	for _, p := range f.Covers {
		if !sameShard(p, shardOf) || p.Parts <= 0 {
			continue
		}
		pos := LogPosition{Node: node, Shard: shard, Segment: p.Segment, Offset: p.Offset}
		fl := flushes[pos]
		if fl == nil {
			fl = &flush{}
			flushes[pos] = fl
		}
		fl.live++
		fl.parts = max(fl.parts, p.Parts)
	}
	done = shardOf
	for _, w := range f.Watermark {
		if sameShard(w, shardOf) && compareLog(w, done) > 0 {
			done = LogPosition{Node: node, Shard: shard, Segment: w.Segment, Offset: w.Offset}
		}
	}
	for pos, fl := range flushes {
		if fl.live >= fl.parts && compareLog(pos, done) > 0 {
			done = pos
		}
	}
	for pos, fl := range flushes {
		if fl.live < fl.parts && compareLog(pos, done) > 0 {
			partial = append(partial, pos)
		}
	}
	slices.SortFunc(partial, compareLog)
	return done, partial
}
