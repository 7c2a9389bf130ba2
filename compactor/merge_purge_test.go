package compactor

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
)

// runEntries runs job over inputs given as entries and returns what the
// outputs hold.
func runEntries(t *testing.T, job Job, inputs ...[]entry) ([]entry, Stats) {
	t.Helper()
	s := newMemStore()
	job.Table, job.Inputs = testTable, nil
	if job.ID == "" {
		job.ID = "case"
	}
	for i, es := range inputs {
		job.Inputs = append(job.Inputs, writeTable(t, s, fmt.Sprintf("in/%d.sst", i), sortedEntries(toMap(es)), sstable.WriterOptions{}))
	}
	outs, stats, err := Run(context.Background(), job, RunDeps{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, s, job, outs, stats)
	return readTables(t, s, outs), stats
}

func toMap(es []entry) map[string][]byte {
	m := map[string][]byte{}
	for _, e := range es {
		m[string(e.key)] = e.value
	}
	return m
}

func rowEntry(p []byte, ck int64, r model.Row) entry {
	return entry{rowKey(p, ck), model.AppendRow(nil, &r)}
}

func headerEntry(p []byte, h model.Header) entry {
	return entry{headerKey(p), model.AppendHeader(nil, &h)}
}

func cell(col uint32, ts int64, v string) model.Cell {
	return model.Cell{Column: col, Timestamp: ts, Value: []byte(v)}
}

// dump describes entries completely, tombstones included.
func dump(t *testing.T, es []entry) string {
	t.Helper()
	s := ""
	for _, e := range es {
		kind, err := model.KindOf(e.value)
		if err != nil {
			t.Fatal(err)
		}
		if kind == model.KindHeader {
			var h model.Header
			if err := model.DecodeHeader(e.value, &h); err != nil {
				t.Fatal(err)
			}
			s += fmt.Sprintf("%x header %+v\n", e.key, h)
			continue
		}
		var r model.Row
		if err := model.DecodeRow(e.value, &r); err != nil {
			t.Fatal(err)
		}
		s += fmt.Sprintf("%x row %+v\n", e.key, r)
	}
	return s
}

func TestPurgePartitionDeletion(t *testing.T) {
	p := partitionPrefix(1)
	rows := []entry{
		rowEntry(p, 1, model.Row{Liveness: model.Liveness{Present: true, Timestamp: 10}, Cells: []model.Cell{cell(1, 10, "a")}}),
		rowEntry(p, 2, model.Row{Cells: []model.Cell{cell(1, 25, "newer")}}),
	}
	del := model.Deletion{MarkedForDeleteAt: 20, LocalDeletionTime: 5}
	hdr := []entry{headerEntry(p, model.Header{Deletion: del})}
	newer := []entry{rowEntry(p, 2, model.Row{Cells: []model.Cell{cell(1, 25, "newer")}})}
	for _, c := range []struct {
		name           string
		gcBefore, min  int64
		wantDeletion   bool
		wantPurgeCount uint64
	}{
		{"purged", 10, 21, false, 1},
		{"outside data as old as the deletion", 10, 20, true, 0},
		{"within gc grace", 5, math.MaxInt64, true, 0},
		{"purging off", 0, math.MaxInt64, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, stats := runEntries(t, Job{Now: 100, GCBefore: c.gcBefore, OldestOutside: c.min}, rows, hdr)
			// Row 1 is shadowed whether or not the deletion stays; row 2 is
			// newer than it.
			want := ""
			if c.wantDeletion {
				want += dump(t, hdr)
			}
			want += dump(t, newer)
			if g := dump(t, got); g != want {
				t.Fatalf("got\n%swant\n%s", g, want)
			}
			if stats.TombstonesPurged != c.wantPurgeCount {
				t.Fatalf("%d tombstones purged, want %d", stats.TombstonesPurged, c.wantPurgeCount)
			}
		})
	}
}

func TestPurgeRangeTombstone(t *testing.T) {
	p := partitionPrefix(2)
	var rows, survivors []entry
	for ck := range int64(7) {
		e := rowEntry(p, ck, model.Row{Cells: []model.Cell{cell(1, 10, fmt.Sprint(ck))}})
		rows = append(rows, e)
		if ck < 2 || ck >= 5 {
			survivors = append(survivors, e)
		}
	}
	keep := model.RangeTombstone{Start: clustering(p, 2), End: clustering(p, 5), Deletion: model.Deletion{MarkedForDeleteAt: 15, LocalDeletionTime: 5}}
	// A second range tombstone, recent: never purged.
	recent := model.RangeTombstone{Start: clustering(p, 6), End: clustering(p, 7), Deletion: model.Deletion{MarkedForDeleteAt: 9, LocalDeletionTime: 50}}
	hdr := headerEntry(p, model.Header{RangeTombstones: []model.RangeTombstone{keep, recent}})
	onlyRecent := headerEntry(p, model.Header{RangeTombstones: []model.RangeTombstone{recent}})

	got, _ := runEntries(t, Job{Now: 100, GCBefore: 10, OldestOutside: 16}, rows, []entry{hdr})
	if g, w := dump(t, got), dump(t, append([]entry{onlyRecent}, survivors...)); g != w {
		t.Fatalf("purgeable:\n%swant\n%s", g, w)
	}
	got, _ = runEntries(t, Job{Now: 100, GCBefore: 10, OldestOutside: 15}, rows, []entry{hdr})
	if g, w := dump(t, got), dump(t, append([]entry{hdr}, survivors...)); g != w {
		t.Fatalf("not purgeable:\n%swant\n%s", g, w)
	}
}

func TestPurgeRowAndCells(t *testing.T) {
	p := partitionPrefix(3)
	row := model.Row{
		Liveness:        model.Liveness{Present: true, Timestamp: 8, TTL: 10, Expires: 30},
		Deletion:        model.Deletion{MarkedForDeleteAt: 7, LocalDeletionTime: 6},
		ColumnDeletions: []model.ColumnDeletion{{Column: 4, Deletion: model.Deletion{MarkedForDeleteAt: 9, LocalDeletionTime: 6}}},
		Cells: []model.Cell{
			{Column: 1, Timestamp: 9, LocalDeletionTime: 6, Tombstone: true},                  // old tombstone
			{Column: 2, Timestamp: 9, LocalDeletionTime: 60, Tombstone: true},                 // recent tombstone
			{Column: 3, Timestamp: 9, TTL: 5, LocalDeletionTime: 20, Value: []byte("gone")},   // expired long ago
			{Column: 5, Timestamp: 9, TTL: 5, LocalDeletionTime: 90, Value: []byte("gone")},   // expired recently
			{Column: 6, Timestamp: 9, TTL: 5, LocalDeletionTime: 200, Value: []byte("alive")}, // not expired
			{Column: 7, Timestamp: 30, LocalDeletionTime: 6, Tombstone: true},                 // old, but outside data is older
		},
	}
	got, stats := runEntries(t, Job{Now: 100, GCBefore: 50, OldestOutside: 25}, []entry{rowEntry(p, 1, row)})
	want := model.Row{Cells: []model.Cell{
		{Column: 2, Timestamp: 9, LocalDeletionTime: 60, Tombstone: true},
		{Column: 5, Timestamp: 9, LocalDeletionTime: 90, Tombstone: true},
		{Column: 6, Timestamp: 9, TTL: 5, LocalDeletionTime: 200, Value: []byte("alive")},
		{Column: 7, Timestamp: 30, LocalDeletionTime: 6, Tombstone: true},
	}}
	if g, w := dump(t, got), dump(t, []entry{rowEntry(p, 1, want)}); g != w {
		t.Fatalf("got\n%swant\n%s", g, w)
	}
	// Liveness, row deletion, column deletion, cells 1 and 3.
	if stats.TombstonesPurged != 5 || stats.Expired != 2 {
		t.Fatalf("stats %+v", stats)
	}
}

// TestShadowedDroppedWithoutPurge checks that the merge drops what a
// deletion in another input shadows, even with purging off.
func TestShadowedDroppedWithoutPurge(t *testing.T) {
	p := partitionPrefix(4)
	old := []entry{
		rowEntry(p, 1, model.Row{Cells: []model.Cell{cell(1, 5, "old"), cell(2, 5, "kept")}}),
		rowEntry(p, 2, model.Row{Liveness: model.Liveness{Present: true, Timestamp: 5}}),
		rowEntry(p, 3, model.Row{Cells: []model.Cell{cell(1, 5, "in range")}}),
	}
	deletions := []entry{
		rowEntry(p, 1, model.Row{Cells: []model.Cell{{Column: 1, Timestamp: 6, LocalDeletionTime: 1, Tombstone: true}}}),
		rowEntry(p, 2, model.Row{Deletion: model.Deletion{MarkedForDeleteAt: 6, LocalDeletionTime: 1}}),
		headerEntry(p, model.Header{RangeTombstones: []model.RangeTombstone{{Start: clustering(p, 3), End: clustering(p, 4), Deletion: model.Deletion{MarkedForDeleteAt: 6, LocalDeletionTime: 1}}}}),
	}
	got, stats := runEntries(t, Job{Now: 100}, old, deletions)
	want := []entry{
		deletions[2],
		rowEntry(p, 1, model.Row{Cells: []model.Cell{{Column: 1, Timestamp: 6, LocalDeletionTime: 1, Tombstone: true}, cell(2, 5, "kept")}}),
		deletions[1],
	}
	if g, w := dump(t, got), dump(t, want); g != w {
		t.Fatalf("got\n%swant\n%s", g, w)
	}
	if stats.Dropped != 1 || stats.TombstonesPurged != 0 {
		t.Fatalf("stats %+v", stats)
	}
}

// TestEverythingPurged checks that a job whose data is all dead writes no
// output at all, and leaves nothing in the store.
func TestEverythingPurged(t *testing.T) {
	p := partitionPrefix(5)
	rows := []entry{rowEntry(p, 1, model.Row{Cells: []model.Cell{cell(1, 3, "a")}})}
	hdr := []entry{headerEntry(p, model.Header{Deletion: model.Deletion{MarkedForDeleteAt: 4, LocalDeletionTime: 2}})}
	got, stats := runEntries(t, Job{Now: 100, GCBefore: 50, OldestOutside: math.MaxInt64}, rows, hdr)
	if len(got) != 0 || stats.OutputEntries != 0 || stats.OutputBytes != 0 {
		t.Fatalf("output %s, stats %+v", dump(t, got), stats)
	}
	if len(stats.Written) != 1 || stats.Dropped != 2 || stats.TombstonesPurged != 1 {
		t.Fatalf("stats %+v", stats)
	}
}
