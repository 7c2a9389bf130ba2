package compactor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

var (
	// errObsolete means a job's inputs are no longer all live: another
	// attempt committed it, or the table was truncated or dropped. Keys
	// are never reused, so they never will be again.
	errObsolete = errors.New("compaction: job obsolete: an input is no longer live")
	// errKeepInputs means a job wrote nothing but may not remove its
	// inputs yet (see commitJob).
	errKeepInputs = errors.New("compaction: job has no outputs and an input's flush is not yet complete")
)

// commitJob replaces the job's inputs with its outputs in one manifest
// compare-and-set, which fails with errObsolete, changing nothing, unless
// every input is still live. The removed inputs go on the garbage list in
// the same change.
//
// The manifest takes a commit whose inputs are gone and whose outputs are
// all on the garbage list for a retry of one already applied, and answers
// success without changing anything. That is what a stale attempt sees
// after another committed the job and discarded its outputs, so success
// counts only if the outputs are live afterwards.
//
// A job with no outputs (all its data was dead) has no SSTable to carry
// its inputs' flush positions (Covers) on: the commit raises the range's
// watermarks to them instead (manifest.Commit.Flushed), so that no flush
// looks less complete to its ingest node than before. That is allowed
// only for positions at or below their shard's newest complete flush;
// while one is above (a flush still partly committed, which its node's
// replay completes or supersedes), the job is not committed
// (errKeepInputs) and is planned again later.
func commitJob(ctx context.Context, m *manifest.Manifest, j *QueuedJob, outputs []manifest.SSTable) error {
	c := manifest.Commit{Table: j.Table, Range: j.Range, Add: outputs}
	if len(outputs) == 0 {
		// Nothing shows afterwards whether this commit removed the
		// inputs or found them gone: look before. A stale attempt racing
		// past this check changes nothing, for there is nothing to add.
		live, err := inputsLive(ctx, m, j)
		if err != nil {
			return err
		}
		if !live {
			return errObsolete
		}
		if c.Flushed, err = completeFlushes(ctx, m, j); err != nil {
			return err
		}
	}
	for _, in := range j.Inputs {
		c.Remove = append(c.Remove, in.Key)
	}
	after, err := m.CommitSSTables(ctx, c)
	if errors.Is(err, manifest.ErrMissingSSTable) {
		return fmt.Errorf("%w: %v", errObsolete, err)
	}
	if err != nil {
		return err
	}
	for _, o := range outputs {
		if !slices.ContainsFunc(after, func(s manifest.SSTable) bool { return s.Key == o.Key }) {
			return fmt.Errorf("%w: output %s was discarded", errObsolete, o.Key)
		}
	}
	return nil
}

// completeFlushes returns the flush positions of j's inputs, each checked
// to be at or below its shard's newest complete flush, which every table's
// SSTables together tell; errKeepInputs if one is not.
func completeFlushes(ctx context.Context, m *manifest.Manifest, j *QueuedJob) ([]manifest.LogPosition, error) {
	var covers []manifest.LogPosition
	for _, in := range j.Inputs {
		for _, p := range in.Covers {
			if p.Parts > 0 {
				covers = append(covers, p)
			}
		}
	}
	if len(covers) == 0 {
		return nil, nil
	}
	s, err := m.Schema(ctx)
	if err != nil {
		return nil, err
	}
	tables := []uuid.UUID{j.Table}
	for _, t := range s.Tables() {
		if t.ID != j.Table {
			tables = append(tables, t.ID)
		}
	}
	var f manifest.Flushes
	for _, t := range tables {
		if err := m.TableFlushes(ctx, t, &f); err != nil {
			return nil, err
		}
	}
	for _, p := range covers {
		done, _ := f.State(p.Node, p.Shard)
		if p.Segment > done.Segment || (p.Segment == done.Segment && p.Offset > done.Offset) {
			return nil, fmt.Errorf("%w: flush %s:%d at %d:%d is past the shard's newest complete one, %d:%d",
				errKeepInputs, p.Node, p.Shard, p.Segment, p.Offset, done.Segment, done.Offset)
		}
	}
	return covers, nil
}

// inputsLive reports whether every input of j is live.
func inputsLive(ctx context.Context, m *manifest.Manifest, j *QueuedJob) (bool, error) {
	live, err := m.SSTablesInRange(ctx, j.Table, j.Range)
	if err != nil {
		return false, err
	}
	for _, in := range j.Inputs {
		if !slices.ContainsFunc(live, func(s manifest.SSTable) bool { return s.Key == in.Key }) {
			return false, nil
		}
	}
	return true, nil
}

// discard puts keys on the table range's garbage list, leaving out any that
// is live (a committed output of the job, if it is one) or listed already.
// It returns how many it listed.
func discard(ctx context.Context, m *manifest.Manifest, j *QueuedJob, keys []string) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	live, err := m.SSTablesInRange(ctx, j.Table, j.Range)
	if err != nil {
		return 0, err
	}
	gs, err := m.Garbage(ctx)
	if err != nil {
		return 0, err
	}
	listed := map[string]bool{}
	for _, g := range gs {
		if g.Table == j.Table && g.Range == j.Range {
			listed[g.Key] = true
		}
	}
	keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
		return listed[k] || slices.ContainsFunc(live, func(s manifest.SSTable) bool { return s.Key == k })
	})
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) == 0 {
		return 0, nil
	}
	if _, err := m.CommitSSTables(ctx, manifest.Commit{Table: j.Table, Range: j.Range, Discard: keys}); err != nil {
		return 0, fmt.Errorf("compaction: discard outputs of job %s: %w", j.ID, err)
	}
	return len(keys), nil
}

// leftovers lists the objects of the attempts of j in the store: each
// attempt writes under <prefix>/<table>/<job ID>-<seq>-<delivery>/, so the
// outputs of an attempt whose worker died are found by a later one. With
// attempt "", every attempt's; else that attempt's only.
func leftovers(ctx context.Context, store objectstore.Store, prefix string, j *QueuedJob, attempt string) ([]string, error) {
	var keys []string
	under := fmt.Sprintf("%s/%s/%s-", prefix, j.Table, j.ID)
	if attempt != "" {
		under = fmt.Sprintf("%s/%s/%s/", prefix, j.Table, attempt)
	}
	err := store.List(ctx, under, func(a objectstore.Attrs) error {
		if strings.HasSuffix(a.Key, ".sst") {
			keys = append(keys, a.Key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("compaction: list outputs of job %s: %w", j.ID, err)
	}
	return keys, nil
}
