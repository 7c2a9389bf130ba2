package ingest

import (
	"context"
	"errors"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore/faultstore"
)

func unflushed(s *Shard) map[storage.TableID]int64 {
	out := map[storage.TableID]int64{}
	s.Unflushed(out)
	return out
}

// TestUnflushed checks that a shard reports the oldest write timestamp of
// each table in its memtables, active or being flushed, and after replay,
// and forgets a memtable once its flush is committed.
func TestUnflushed(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	ctx := context.Background()
	if got := unflushed(s); len(got) != 0 {
		t.Fatalf("empty shard reports %v", got)
	}
	del := model.AppendRow(nil, &model.Row{Deletion: model.Deletion{MarkedForDeleteAt: 20, LocalDeletionTime: 1}})
	for _, m := range []*storage.Mutation{
		rowMutation(1, "a", 1, 50, "x"),
		rowMutation(1, "b", 1, 30, "x"),
		rowMutation(2, "a", 1, 70, "x"),
		{Table: 2, Entries: []storage.Entry{{Key: rowKey("c", 1), Value: rowValue(90, "y")}, {Key: rowKey("d", 1), Value: del}}},
	} {
		if err := s.Apply(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	want := map[storage.TableID]int64{1: 30, 2: 20}
	if got := unflushed(s); !maps.Equal(got, want) {
		t.Fatalf("unflushed %v, want %v", got, want)
	}

	// A flush that cannot upload keeps its memtable, and the bound.
	e.faults.Inject(faultstore.Rule{Op: faultstore.OpWriter, Err: errors.New("bucket down")})
	fctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.Flush(fctx); err == nil {
		t.Fatal("flush succeeded with the bucket down")
	}
	if err := s.Apply(ctx, rowMutation(1, "c", 1, 10, "x")); err != nil {
		t.Fatal(err)
	}
	want[1] = 10
	if got := unflushed(s); !maps.Equal(got, want) {
		t.Fatalf("while flushing: unflushed %v, want %v", got, want)
	}

	// Replay restores it.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	e.faults.Reset()
	e.cfg.FlushAge = time.Hour
	s = e.open()
	defer s.Close()
	if got := unflushed(s); !maps.Equal(got, want) {
		// Replay may have flushed already only if memory ran out, which
		// these few rows do not reach.
		t.Fatalf("after replay: unflushed %v, want %v", got, want)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := unflushed(s); len(got) != 0 {
		t.Fatalf("after flush: unflushed %v, want none", got)
	}
	if err := s.Apply(ctx, rowMutation(2, "a", 2, 5, "x")); err != nil {
		t.Fatal(err)
	}
	if got := unflushed(s); !maps.Equal(got, map[storage.TableID]int64{2: 5}) {
		t.Fatalf("after a new write: unflushed %v", got)
	}
}

func TestOldestUnflushed(t *testing.T) {
	a, b := uuid.New(), uuid.New()
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ingest := func(m map[string]int64) manifest.Member {
		return manifest.Member{Roles: []string{"frontend", IngestRole}, Unflushed: m, Heartbeat: since.Add(time.Second)}
	}
	stale := ingest(map[string]int64{})
	stale.Heartbeat = since
	for _, tc := range []struct {
		name    string
		members []manifest.Member
		ts      int64
		known   bool
	}{
		{"no members", nil, math.MaxInt64, true},
		{"nothing unflushed", []manifest.Member{ingest(map[string]int64{})}, math.MaxInt64, true},
		{"other table", []manifest.Member{ingest(map[string]int64{UnflushedKey(storage.TableIDOf(b)): 3})}, math.MaxInt64, true},
		{"min of nodes", []manifest.Member{
			ingest(map[string]int64{UnflushedKey(storage.TableIDOf(a)): 40, UnflushedKey(storage.TableIDOf(b)): 1}),
			ingest(map[string]int64{UnflushedKey(storage.TableIDOf(a)): 25}),
			{Roles: []string{"compactor"}}, // reports nothing, holds nothing
		}, 25, true},
		{"older node", []manifest.Member{ingest(map[string]int64{UnflushedKey(storage.TableIDOf(a)): 40}), ingest(nil)}, math.MinInt64, false},
		{"no heartbeat since", []manifest.Member{ingest(map[string]int64{UnflushedKey(storage.TableIDOf(a)): 40}), stale}, math.MinInt64, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, known := OldestUnflushed(tc.members, a, since)
			if ts != tc.ts || known != tc.known {
				t.Fatalf("OldestUnflushed = %d, %v; want %d, %v", ts, known, tc.ts, tc.known)
			}
		})
	}
}

func TestValueOldest(t *testing.T) {
	if got := valueOldest(rowValue(42, "v")); got != 42 {
		t.Fatalf("row at 42: %d", got)
	}
	if got := valueOldest([]byte{0xff, 0xff}); got != math.MinInt64 {
		t.Fatalf("garbage: %d, want MinInt64", got)
	}
}
