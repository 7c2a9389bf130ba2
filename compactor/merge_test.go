package compactor

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
)

var testTable = uuid.MustParse("6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9")

// entry is one key and value of a table.
type entry struct{ key, value []byte }

// gen makes random tables whose entries collide often: few partitions,
// few rows, few columns, timestamps and local times in small ranges, so that
// merges, shadowing, expiry and purging all happen.
type gen struct {
	r *rand.Rand
	// Timestamps (µs) are drawn from [tsLo, tsHi), local times (s) from
	// [1, ltHi).
	tsLo, tsHi int64
	ltHi       int64
	partitions int
	rows       int
}

func newGen(seed uint64) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, seed^0x5bd1e995)), tsLo: 1, tsHi: 100, ltHi: 100, partitions: 12, rows: 10}
}

func (g *gen) ts() int64 { return g.tsLo + g.r.Int64N(g.tsHi-g.tsLo) }
func (g *gen) lt() int64 { return 1 + g.r.Int64N(g.ltHi-1) }

func (g *gen) deletion() model.Deletion {
	return model.Deletion{MarkedForDeleteAt: g.ts(), LocalDeletionTime: g.lt()}
}

// partition returns the prefix of partition i. Tokens repeat, so that
// partitions with one token also meet.
func partitionPrefix(i int) []byte {
	tok := int64(i/2)<<40 - 1<<62
	return keys.AppendPartitionPrefix(nil, tok, fmt.Appendf(nil, "pk%03d", i))
}

var ckTypes = []*cqltype.Type{cqltype.BigintType}

func rowKey(prefix []byte, ck int64) []byte {
	tok, err := keys.Token(prefix)
	if err != nil {
		panic(err)
	}
	pk, err := keys.PartitionKey(prefix)
	if err != nil {
		panic(err)
	}
	k, err := keys.RowKey(nil, tok, pk, [][]byte{binary.BigEndian.AppendUint64(nil, uint64(ck))}, ckTypes, []bool{false})
	if err != nil {
		panic(err)
	}
	return k
}

func headerKey(prefix []byte) []byte { return append(slices.Clip(prefix), byte(keys.KindHeader)) }

// clustering returns the clustering part of row key k of a partition with
// the given prefix.
func clustering(prefix []byte, ck int64) []byte {
	return rowKey(prefix, ck)[len(prefix)+1:]
}

func (g *gen) cells(n int) []model.Cell {
	var cells []model.Cell
	for range n {
		c := model.Cell{Column: uint32(1 + g.r.IntN(4)), Timestamp: g.ts()}
		if c.Column == 4 {
			c.Path = []byte{byte(g.r.IntN(3))} // a collection element
		}
		switch g.r.IntN(4) {
		case 0:
			c.Tombstone, c.LocalDeletionTime = true, g.lt()
		case 1:
			c.TTL = int32(1 + g.r.IntN(50))
			c.LocalDeletionTime = g.lt()
			c.Value = fmt.Appendf(nil, "x%d", g.r.IntN(5))
		default:
			c.Value = fmt.Appendf(nil, "v%d", g.r.IntN(5))
		}
		cells = append(cells, c)
	}
	return cells
}

func (g *gen) row() model.Row {
	var r model.Row
	if g.r.IntN(2) == 0 {
		r.Liveness = model.Liveness{Present: true, Timestamp: g.ts()}
		if g.r.IntN(3) == 0 {
			r.Liveness.TTL, r.Liveness.Expires = int32(1+g.r.IntN(50)), g.lt()
		}
	}
	if g.r.IntN(6) == 0 {
		r.Deletion = g.deletion()
	}
	if g.r.IntN(8) == 0 {
		r.ColumnDeletions = []model.ColumnDeletion{{Column: 4, Deletion: g.deletion()}}
	}
	r.Cells = g.cells(g.r.IntN(4))
	r.Normalize()
	return r
}

func (g *gen) header(prefix []byte) model.Header {
	var h model.Header
	if g.r.IntN(4) == 0 {
		h.Deletion = g.deletion()
	}
	for range g.r.IntN(3) {
		a, b := g.r.Int64N(int64(g.rows)), g.r.Int64N(int64(g.rows))
		if a > b {
			a, b = b, a
		}
		rt := model.RangeTombstone{Start: clustering(prefix, a), Deletion: g.deletion()}
		if b != a || g.r.IntN(2) == 0 {
			rt.End = clustering(prefix, b+1)
		}
		h.RangeTombstones = append(h.RangeTombstones, rt)
	}
	if g.r.IntN(3) == 0 {
		h.Static.Cells = g.cells(1 + g.r.IntN(2))
	}
	h.Normalize()
	return h
}

// table returns the sorted entries of one random table.
func (g *gen) table(entries int) []entry {
	m := map[string][]byte{}
	for range entries {
		p := partitionPrefix(g.r.IntN(g.partitions))
		var k, v []byte
		if g.r.IntN(5) == 0 {
			h := g.header(p)
			k, v = headerKey(p), model.AppendHeader(nil, &h)
		} else {
			r := g.row()
			k, v = rowKey(p, g.r.Int64N(int64(g.rows))), model.AppendRow(nil, &r)
		}
		if old, ok := m[string(k)]; ok {
			var err error
			if v, err = model.Merge(nil, old, v); err != nil {
				panic(err)
			}
		}
		m[string(k)] = v
	}
	return sortedEntries(m)
}

func sortedEntries(m map[string][]byte) []entry {
	es := make([]entry, 0, len(m))
	for k, v := range m {
		es = append(es, entry{[]byte(k), v})
	}
	sort.Slice(es, func(i, j int) bool { return bytes.Compare(es[i].key, es[j].key) < 0 })
	return es
}

// writeTable stores entries as an SSTable the way a flush does and returns
// its manifest entry.
func writeTable(t testing.TB, s objectstore.Store, key string, es []entry, opts sstable.WriterOptions) manifest.SSTable {
	t.Helper()
	w, err := tablestore.Create(context.Background(), s, key, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	props := tbl.Props
	return manifest.SSTable{
		Key: key, Size: tbl.Size, FirstKey: props.FirstKey, LastKey: props.LastKey,
		MinTimestamp: props.MinTimestamp, MaxTimestamp: props.MaxTimestamp,
	}
}

// mergeEntries reconciles tables as a read does.
func mergeEntries(t testing.TB, tables ...[]entry) []entry {
	t.Helper()
	m := map[string][]byte{}
	for _, es := range tables {
		for _, e := range es {
			v := e.value
			if old, ok := m[string(e.key)]; ok {
				var err error
				if v, err = model.Merge(nil, old, v); err != nil {
					t.Fatal(err)
				}
			}
			m[string(e.key)] = v
		}
	}
	return sortedEntries(m)
}

// readTables reads SSTables back, each whole, and returns their entries
// in order, checking that they do not overlap.
func readTables(t testing.TB, s objectstore.Store, ssts []manifest.SSTable) []entry {
	t.Helper()
	var es []entry
	for _, sst := range ssts {
		r, err := tablestore.Open(context.Background(), s, sst.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		it := r.NewIter(context.Background(), nil, nil)
		for ok := it.First(); ok; ok = it.Next() {
			if len(es) > 0 && bytes.Compare(es[len(es)-1].key, it.Key()) >= 0 {
				t.Fatalf("%s: key %x not after %x: outputs overlap", sst.Key, it.Key(), es[len(es)-1].key)
			}
			es = append(es, entry{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
		}
		if err := it.Error(); err != nil {
			t.Fatal(err)
		}
		it.Close()
	}
	return es
}

// view describes what reads see in entries at now: each partition's live
// static cells and live rows, resolved as the read path does.
func view(t testing.TB, es []entry, now int64) string {
	t.Helper()
	var b strings.Builder
	var h *model.Header
	var part []byte
	for _, e := range es {
		n, err := keys.PartitionPrefixLen(e.key)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.key[:n], part) {
			part, h = e.key[:n], nil
		}
		switch keys.Kind(e.key[n]) {
		case keys.KindHeader:
			h = new(model.Header)
			if err := model.DecodeHeader(e.value, h); err != nil {
				t.Fatal(err)
			}
			if h.ResolveStatic(now) {
				fmt.Fprintf(&b, "%x static %s\n", part, describeRow(&h.Static))
			}
		default:
			var r model.Row
			if err := model.DecodeRow(e.value, &r); err != nil {
				t.Fatal(err)
			}
			if h.Resolve(e.key[n+1:], &r, now) {
				fmt.Fprintf(&b, "%x row %s\n", e.key, describeRow(&r))
			}
		}
	}
	return b.String()
}

func describeRow(r *model.Row) string {
	var b strings.Builder
	if r.Liveness.Present {
		fmt.Fprintf(&b, "live@%d ", r.Liveness.Timestamp)
	}
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "%d/%x=%s@%d ", c.Column, c.Path, c.Value, c.Timestamp)
	}
	return b.String()
}

// tombstones lists the tombstones of entries as the output should hold
// them: each row shadowed by its partition's header, expired cells as
// tombstones. keep selects which ones are listed.
func tombstones(t testing.TB, es []entry, now int64, keep func(model.Deletion) bool) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	add := func(key []byte, what string, d model.Deletion) {
		if keep(d) {
			out[fmt.Sprintf("%x %s %d/%d", key, what, d.MarkedForDeleteAt, d.LocalDeletionTime)] = true
		}
	}
	addRow := func(key []byte, r *model.Row) {
		if l := r.Liveness; l.Present && l.TTL > 0 && now >= l.Expires {
			add(key, "liveness", model.Deletion{MarkedForDeleteAt: l.Timestamp, LocalDeletionTime: l.Expires})
		}
		if !r.Deletion.IsLive() {
			add(key, "row", r.Deletion)
		}
		for _, cd := range r.ColumnDeletions {
			add(key, fmt.Sprintf("column %d", cd.Column), cd.Deletion)
		}
		for _, c := range r.Cells {
			if c.Tombstone || (c.TTL > 0 && now >= c.LocalDeletionTime) {
				add(key, fmt.Sprintf("cell %d/%x", c.Column, c.Path), model.Deletion{MarkedForDeleteAt: c.Timestamp, LocalDeletionTime: c.LocalDeletionTime})
			}
		}
	}
	var h *model.Header
	var part []byte
	for _, e := range es {
		n, err := keys.PartitionPrefixLen(e.key)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.key[:n], part) {
			part, h = e.key[:n], nil
		}
		if keys.Kind(e.key[n]) == keys.KindHeader {
			h = new(model.Header)
			if err := model.DecodeHeader(e.value, h); err != nil {
				t.Fatal(err)
			}
			if !h.Deletion.IsLive() {
				add(e.key, "partition", h.Deletion)
			}
			for _, rt := range h.RangeTombstones {
				add(e.key, fmt.Sprintf("range %x-%x", rt.Start, rt.End), rt.Deletion)
			}
			addRow(e.key, &h.Static)
			continue
		}
		var r model.Row
		if err := model.DecodeRow(e.value, &r); err != nil {
			t.Fatal(err)
		}
		if h != nil {
			r.Shadow(h.DeletionAt(e.key[n+1:]))
		}
		addRow(e.key, &r)
	}
	return out
}

type trial struct {
	job     Job
	writer  sstable.WriterOptions
	inputs  [][]entry
	outside []entry
}

// randomTrial writes 2 to 5 random inputs, and a table outside the job
// whose timestamps are all at or after the job's OldestOutside.
func randomTrial(t testing.TB, s objectstore.Store, seed uint64) trial {
	g := newGen(seed)
	tr := trial{job: Job{
		ID: fmt.Sprintf("job-%d", seed), Table: testTable, OutputLevel: 1,
		Now: 30 + g.r.Int64N(50), GCBefore: g.r.Int64N(80), OldestOutside: 1 + g.r.Int64N(100),
		TargetSize: int64(256 + g.r.IntN(4096)),
	}}
	if g.r.IntN(4) == 0 {
		// Before any expiry or local deletion time: rows that no header
		// deletes take the path that copies them undecoded.
		tr.job.Now, tr.job.GCBefore = 0, 0
	}
	wo := sstable.WriterOptions{BlockSize: 64 + g.r.IntN(1024), BufferSize: 512, Compression: sstable.Compression(g.r.IntN(4))}
	for i := range 2 + g.r.IntN(4) {
		es := g.table(1 + g.r.IntN(150))
		tr.inputs = append(tr.inputs, es)
		in := writeTable(t, s, fmt.Sprintf("in/%d/%d.sst", seed, i), es, wo)
		tr.writer = wo
		in.Covers = []manifest.LogPosition{{Node: "n", Shard: i, Segment: seed, Parts: 1}}
		tr.job.Inputs = append(tr.job.Inputs, in)
	}
	og := *g
	og.tsLo = tr.job.OldestOutside
	og.tsHi = max(og.tsLo+1, 110)
	tr.outside = og.table(g.r.IntN(100))
	return tr
}

func TestRunRandom(t *testing.T) {
	trials := 100
	if testing.Short() {
		trials = 30
	}
	s := newMemStore()
	var sum Stats
	multi := 0
	for seed := range uint64(trials) {
		tr := randomTrial(t, s, seed)
		outs, stats, err := Run(context.Background(), tr.job, RunDeps{Store: s, Options: Options{ReadAhead: 2 + int64(seed*7919)%(64<<10), Writer: tr.writer}})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		got := readTables(t, s, outs)
		in := mergeEntries(t, tr.inputs...)
		now := tr.job.Now
		// Reads see the same rows, alone and together with data the job
		// did not see.
		if v, w := view(t, got, now), view(t, in, now); v != w {
			t.Fatalf("seed %d: output reads\n%s\ninputs read\n%s", seed, v, w)
		}
		if v, w := view(t, mergeEntries(t, got, tr.outside), now), view(t, mergeEntries(t, in, tr.outside), now); v != w {
			t.Fatalf("seed %d: with the outside table, output reads\n%s\ninputs read\n%s", seed, v, w)
		}
		// Tombstones go exactly where the rule allows.
		// The rule as the package comment states it.
		purgeable := func(d model.Deletion) bool {
			return d.LocalDeletionTime < tr.job.GCBefore && d.MarkedForDeleteAt < tr.job.OldestOutside
		}
		if left := tombstones(t, got, now, purgeable); len(left) > 0 {
			t.Fatalf("seed %d: purgeable tombstones left: %v", seed, slices.Sorted(mapKeys(left)))
		}
		kept := tombstones(t, got, now, func(model.Deletion) bool { return true })
		for k := range tombstones(t, in, now, func(d model.Deletion) bool { return !purgeable(d) }) {
			if !kept[k] {
				t.Fatalf("seed %d: tombstone %s dropped", seed, k)
			}
		}
		if stats.OutputEntries != uint64(len(got)) {
			t.Fatalf("seed %d: stats count %d entries, outputs hold %d", seed, stats.OutputEntries, len(got))
		}
		checkOutputs(t, s, tr.job, outs, stats)
		sum.TombstonesPurged += stats.TombstonesPurged
		sum.Expired += stats.Expired
		sum.Dropped += stats.Dropped
		if len(outs) > 1 {
			multi++
		}
	}
	// The trials must exercise what they check.
	if sum.TombstonesPurged == 0 || sum.Expired == 0 || sum.Dropped == 0 || multi == 0 {
		t.Fatalf("trials too tame: %+v, %d with several outputs", sum, multi)
	}
	t.Logf("%d trials: %d tombstones purged, %d cells expired, %d entries dropped, %d with several outputs", trials, sum.TombstonesPurged, sum.Expired, sum.Dropped, multi)
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkOutputs checks the manifest entries Run returned against the
// objects: properties, split sizes, partitions never split, covers.
func checkOutputs(t testing.TB, s objectstore.Store, job Job, outs []manifest.SSTable, stats Stats) {
	t.Helper()
	var lastPart []byte
	var total int64
	for i, o := range outs {
		if want := fmt.Sprintf("compaction/%s/%s/%05d.sst", job.Table, job.ID, i); o.Key != want && !slices.Contains(stats.Written, o.Key) {
			t.Fatalf("output %d is %s", i, o.Key)
		}
		if !strings.HasPrefix(o.Key, fmt.Sprintf("compaction/%s/%s/", job.Table, job.ID)) {
			t.Fatalf("output %s outside the job's prefix", o.Key)
		}
		a, err := s.Head(context.Background(), o.Key)
		if err != nil {
			t.Fatal(err)
		}
		if a.Size != o.Size {
			t.Fatalf("%s: size %d, object %d", o.Key, o.Size, a.Size)
		}
		total += o.Size
		if o.Level != job.OutputLevel {
			t.Fatalf("%s: level %d", o.Key, o.Level)
		}
		if i < len(outs)-1 && job.TargetSize > 0 && o.Size < job.TargetSize {
			t.Fatalf("%s: %d bytes, below the target %d, yet not last", o.Key, o.Size, job.TargetSize)
		}
		es := readTables(t, s, outs[i:i+1])
		if !bytes.Equal(es[0].key, o.FirstKey) || !bytes.Equal(es[len(es)-1].key, o.LastKey) {
			t.Fatalf("%s: keys %x..%x, recorded %x..%x", o.Key, es[0].key, es[len(es)-1].key, o.FirstKey, o.LastKey)
		}
		minTok, _ := keys.Token(o.FirstKey)
		maxTok, _ := keys.Token(o.LastKey)
		if o.MinToken != minTok || o.MaxToken != maxTok {
			t.Fatalf("%s: tokens %d..%d, recorded %d..%d", o.Key, minTok, maxTok, o.MinToken, o.MaxToken)
		}
		var st model.Stats
		st.MinTimestamp, st.MaxTimestamp = math.MaxInt64, math.MinInt64
		for _, e := range es {
			vs, err := model.ValueStats(e.value)
			if err != nil {
				t.Fatal(err)
			}
			st.Add(vs)
		}
		if st.MinTimestamp != o.MinTimestamp || st.MaxTimestamp != o.MaxTimestamp {
			t.Fatalf("%s: timestamps %d..%d, recorded %d..%d", o.Key, st.MinTimestamp, st.MaxTimestamp, o.MinTimestamp, o.MaxTimestamp)
		}
		n, _ := keys.PartitionPrefixLen(o.FirstKey)
		if lastPart != nil && bytes.Equal(lastPart, o.FirstKey[:n]) {
			t.Fatalf("%s: partition %x split across outputs", o.Key, lastPart)
		}
		n, _ = keys.PartitionPrefixLen(o.LastKey)
		lastPart = o.LastKey[:n]
		var covers []manifest.LogPosition
		if i == 0 {
			for _, in := range job.Inputs {
				covers = append(covers, in.Covers...)
			}
		}
		if fmt.Sprint(o.Covers) != fmt.Sprint(covers) {
			t.Fatalf("%s: covers %v, want %v", o.Key, o.Covers, covers)
		}
	}
	if total != stats.OutputBytes {
		t.Fatalf("outputs hold %d bytes, stats say %d", total, stats.OutputBytes)
	}
	// Nothing else of the job is in the store: empty outputs were aborted.
	var stored []string
	if err := s.List(context.Background(), fmt.Sprintf("compaction/%s/%s/", job.Table, job.ID), func(a objectstore.Attrs) error {
		stored = append(stored, a.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var keysOut []string
	for _, o := range outs {
		keysOut = append(keysOut, o.Key)
	}
	if !slices.Equal(stored, keysOut) {
		t.Fatalf("store holds %v, outputs are %v", stored, keysOut)
	}
	for _, k := range keysOut {
		if !slices.Contains(stats.Written, k) {
			t.Fatalf("output %s not in Written %v", k, stats.Written)
		}
	}
}

// TestRunRuleHasTeeth checks that the random trials can tell a wrong purge:
// claiming that nothing outside the job is older (OldestOutside at the
// maximum) while the outside table is must, for some seed, change a read.
func TestRunRuleHasTeeth(t *testing.T) {
	s := newMemStore()
	for seed := range uint64(200) {
		tr := randomTrial(t, s, seed)
		tr.job.OldestOutside = math.MaxInt64
		outs, _, err := Run(context.Background(), tr.job, RunDeps{Store: s})
		if err != nil {
			t.Fatal(err)
		}
		got := readTables(t, s, outs)
		in := mergeEntries(t, tr.inputs...)
		if view(t, mergeEntries(t, got, tr.outside), tr.job.Now) != view(t, mergeEntries(t, in, tr.outside), tr.job.Now) {
			return // the wrong purge resurrected outside data, as it should
		}
	}
	t.Fatal("purging past OldestOutside never changed a read: the random test cannot detect unsafe purges")
}

var _ kv.Iterator = (*namedIter)(nil)
