package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

const clusterRanges = 4

// cluster is an embedded NATS server with a manifest, a file bucket and two
// tables.
type cluster struct {
	t      *testing.T
	m      *manifest.Manifest
	store  objectstore.Store
	tables []uuid.UUID
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	js, _ := manifesttest.JetStream(t)
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := manifest.Open(ctx, js, store, "c1", manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRanges(ctx, clusterRanges); err != nil {
		t.Fatal(err)
	}
	if err := m.CreateKeyspace(ctx, "ks", map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}, true); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, m: m, store: store}
	for _, name := range []string{"a", "b"} {
		tbl, err := m.CreateTable(ctx, manifest.TableSpec{
			Keyspace: "ks", Name: name,
			Columns:      []manifest.ColumnSpec{{Name: "pk", Type: "text"}, {Name: "ck", Type: "bigint"}, {Name: "v", Type: "text"}},
			PartitionKey: []string{"pk"},
			Clustering:   []manifest.ClusteringSpec{{Name: "ck"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		c.tables = append(c.tables, tbl.ID)
	}
	return c
}

// node returns the committer of a (re)started node that claims every range.
func (c *cluster) node(id string) *ManifestCommitter {
	c.t.Helper()
	mc := NewManifestCommitter(c.m, c.store, id)
	if err := mc.ClaimAll(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	return mc
}

// open opens shard 7 of e's disk as a node committing through mc.
func (c *cluster) open(e *env, mc *ManifestCommitter) *Shard {
	c.t.Helper()
	s, err := Open(context.Background(), e.cfg, 7, NodeDeps{
		FS:         e.fs,
		Store:      c.store,
		Committer:  mc,
		Reader:     mc,
		Registerer: prometheus.NewRegistry(),
		ChunkSize:  4 << 10,
		Ranges:     clusterRanges,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

// stored returns the number of entries in the live SSTables of table.
func (c *cluster) stored(table uuid.UUID) int {
	c.t.Helper()
	ctx := context.Background()
	ssts, err := c.m.SSTables(ctx, table)
	if err != nil {
		c.t.Fatal(err)
	}
	n := 0
	for _, s := range ssts {
		r, err := tablestore.Open(ctx, c.store, s.Key, nil)
		if err != nil {
			c.t.Fatal(err)
		}
		n += int(r.Properties().Entries)
	}
	return n
}

// write writes row i to both tables and records it in acked.
func writeBoth(t *testing.T, c *cluster, s *Shard, i int, acked []map[string]string) {
	t.Helper()
	v := "v" + strconv.Itoa(i) + string(make([]byte, 100))
	for j, id := range c.tables {
		m := rowMutation(storage.TableIDOf(id), "p"+strconv.Itoa(i%64), int64(i), 1, v)
		if err := s.Apply(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		acked[j][string(m.Entries[0].Key)] = v
	}
}

func checkContents(t *testing.T, c *cluster, s *Shard, r TableReader, acked []map[string]string) {
	t.Helper()
	for j, id := range c.tables {
		got := contents(t, s, r, storage.TableIDOf(id))
		if len(got) != len(acked[j]) {
			t.Fatalf("table %d: %d rows, want %d", j, len(got), len(acked[j]))
		}
		for k, v := range acked[j] {
			if got[k] != v {
				t.Fatalf("table %d: acknowledged row %x lost (got %q)", j, k, got[k])
			}
		}
	}
}

func newAcked(c *cluster) []map[string]string {
	out := make([]map[string]string, len(c.tables))
	for i := range out {
		out[i] = map[string]string{}
	}
	return out
}

func TestManifestFlushPerRange(t *testing.T) {
	c := newCluster(t)
	e := newEnv(t)
	mc := c.node("n1")
	s := c.open(e, mc)
	ctx := context.Background()
	acked := newAcked(c)
	for i := range 600 {
		writeBoth(t, c, s, i, acked)
	}
	testwait.For(t, "a flush", func() bool {
		p, err := mc.Flushed(ctx, 7)
		return err == nil && p != (commitlog.Position{})
	})
	testwait.For(t, "flushes to finish", func() bool { return s.flushing() == 0 })

	// Every SSTable lies in its range and names its flush; each flush's
	// SSTables are all live.
	parts := map[manifest.LogPosition]int{}
	for _, id := range c.tables {
		for r := range clusterRanges {
			ssts, err := c.m.SSTablesInRange(ctx, id, r)
			if err != nil {
				t.Fatal(err)
			}
			if len(ssts) == 0 {
				t.Fatalf("table %s range %d: no SSTable", id, r)
			}
			first, last := manifest.RangeBounds(r, clusterRanges)
			for _, sst := range ssts {
				if sst.MinToken < first || sst.MaxToken > last || sst.MinToken > sst.MaxToken {
					t.Fatalf("%s: tokens [%d, %d] outside range %d", sst.Key, sst.MinToken, sst.MaxToken, r)
				}
				if len(sst.Covers) != 1 || sst.Covers[0].Node != "n1" || sst.Covers[0].Shard != 7 {
					t.Fatalf("%s covers %+v", sst.Key, sst.Covers)
				}
				parts[sst.Covers[0]]++
			}
		}
	}
	flushed, err := mc.Flushed(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	var newest commitlog.Position
	for p, n := range parts {
		if n != p.Parts {
			t.Fatalf("flush %+v: %d SSTables live", p, n)
		}
		if pos := (commitlog.Position{Segment: p.Segment, Offset: p.Offset}); pos.Compare(newest) > 0 {
			newest = pos
		}
	}
	if flushed != newest {
		t.Fatalf("Flushed = %v, newest flush %v", flushed, newest)
	}
	checkContents(t, c, s, mc, acked)

	// A restart replays only what no committed SSTable holds.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = c.open(e, c.node("n1"))
	defer s.Close()
	checkContents(t, c, s, mc, acked)
	for j, id := range c.tables {
		if n := c.stored(id) + count(t, s.NewIter(storage.TableIDOf(id), nil, nil)); n != len(acked[j]) {
			t.Fatalf("table %d: %d entries stored for %d rows", j, n, len(acked[j]))
		}
	}
}

// TestManifestCrashBetweenParts pulls the plug after the first of a
// flush's per-range commits. After a restart, every acknowledged write
// reads exactly once. Replay cuts the same memtable, whose flush reuses the
// committed SSTable, so nothing is stored twice; unless memory forces it to
// cut it short, and then the flush writes new SSTables that repeat the
// committed one's entries.
func TestManifestCrashBetweenParts(t *testing.T) {
	for _, tc := range []struct {
		name string
		same bool // the restart cuts the same memtable
	}{{"same memtable", true}, {"memtable cut short", false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			e := newEnv(t)
			cr := newCrasher(e)
			e.cfg.MemtableSize = 256 << 10
			e.cfg.MemoryLimit = 64 << 20
			mc := c.node("n1")
			mc.afterPart = cr.crash
			s := c.open(e, mc)
			ctx := context.Background()
			acked := newAcked(c)
			for i := 0; ; i++ {
				v := "v" + strconv.Itoa(i) + string(make([]byte, 100))
				ok := true
				for j, id := range c.tables {
					m := rowMutation(storage.TableIDOf(id), "p"+strconv.Itoa(i%64), int64(i), 1, v)
					w, err := cr.write(s, m)
					if err != nil {
						t.Fatal(err)
					}
					if !w {
						ok = false
						break
					}
					acked[j][string(m.Entries[0].Key)] = v
				}
				if !ok {
					break
				}
			}
			<-cr.done
			s.Close()

			total := 0
			for _, id := range c.tables {
				ssts, err := c.m.SSTables(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				total += len(ssts)
			}
			if total != 1 {
				t.Fatalf("%d SSTables live after the crash, want the first part only", total)
			}
			if p, err := mc.Flushed(ctx, 7); err != nil || p != (commitlog.Position{}) {
				t.Fatalf("Flushed = %v, %v after a partial flush", p, err)
			}
			if p, err := mc.Partial(ctx, 7); err != nil || len(p) != 1 {
				t.Fatalf("Partial = %v, %v after a partial flush", p, err)
			}

			e.fs = cr.clone
			if !tc.same {
				e.cfg.MemtableSize, e.cfg.MemoryLimit = 64<<10, 128<<10
			}
			mc = c.node("n1")
			s = c.open(e, mc)
			checkContents(t, c, s, mc, acked)
			testwait.For(t, "the replayed flush", func() bool {
				p, err := mc.Flushed(ctx, 7)
				return err == nil && p != (commitlog.Position{}) && s.flushing() == 0
			})
			checkContents(t, c, s, mc, acked)
			s.Close()

			// Flush the rest too, then read the SSTables alone.
			e.cfg.FlushAge = 50 * time.Millisecond
			s = c.open(e, mc)
			defer s.Close()
			testwait.For(t, "every memtable flushed", func() bool {
				n := 0
				for _, id := range c.tables {
					n += count(t, s.NewIter(storage.TableIDOf(id), nil, nil))
				}
				return n == 0 && s.flushing() == 0
			})
			storedAll, rows := 0, 0
			for j, id := range c.tables {
				it, err := mc.NewIter(ctx, storage.TableIDOf(id), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := drain(t, it)
				if len(got) != len(acked[j]) {
					t.Fatalf("table %d: %d rows in SSTables, want %d", j, len(got), len(acked[j]))
				}
				for k, v := range acked[j] {
					if got[k] != v {
						t.Fatalf("table %d: row %x reads %q, want %q", j, k, got[k], v)
					}
				}
				n := c.stored(id)
				if tc.same && n != len(got) {
					t.Fatalf("table %d: %d entries stored for %d rows: the committed part was not reused", j, n, len(got))
				}
				if n < len(got) {
					t.Fatalf("table %d: %d entries stored for %d rows", j, n, len(got))
				}
				storedAll, rows = storedAll+n, rows+len(got)
			}
			if !tc.same && storedAll == rows {
				t.Fatal("the memtable was not cut short: no entry stored twice")
			}
		})
	}
}

// TestManifestFenced checks that a node whose range was reassigned cannot
// commit its flush there, and that its shard then refuses writes.
func TestManifestFenced(t *testing.T) {
	c := newCluster(t)
	e := newEnv(t)
	mc := c.node("n1")
	s := c.open(e, mc)
	defer s.Close()
	ctx := context.Background()
	acked := newAcked(c)
	for i := range 400 {
		writeBoth(t, c, s, i, acked)
	}
	testwait.For(t, "a flush", func() bool {
		p, err := mc.Flushed(ctx, 7)
		return err == nil && p != (commitlog.Position{})
	})
	testwait.For(t, "flushes to finish", func() bool { return s.flushing() == 0 })
	before, err := mc.Flushed(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}

	// Another node takes range 0 over.
	if _, err := c.m.Assign(ctx, 0, "n2"); err != nil {
		t.Fatal(err)
	}
	var werr error
	for i := 400; werr == nil; i++ {
		if i > 100000 {
			t.Fatal("writes still acknowledged after the range was reassigned")
		}
		v := "v" + strconv.Itoa(i)
		werr = s.Apply(ctx, rowMutation(storage.TableIDOf(c.tables[0]), "p"+strconv.Itoa(i%64), int64(i), 1, v))
	}
	if !errors.Is(werr, storage.ErrFenced) || !errors.Is(werr, manifest.ErrFenced) {
		t.Fatalf("write after fencing: %v", werr)
	}
	if err := s.Apply(ctx, rowMutation(storage.TableIDOf(c.tables[1]), "x", 1, 1, "x")); !errors.Is(err, storage.ErrFenced) {
		t.Fatalf("second write after fencing: %v", err)
	}
	// The fenced flush advanced nothing, and range 0 holds only what the
	// node committed before it lost the range.
	after, err := mc.Flushed(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("Flushed moved from %v to %v", before, after)
	}
	for _, id := range c.tables {
		ssts, err := c.m.SSTablesInRange(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, sst := range ssts {
			p := commitlog.Position{Segment: sst.Covers[0].Segment, Offset: sst.Covers[0].Offset}
			if p.Compare(before) > 0 {
				t.Fatalf("%s committed to range 0 after the reassignment", sst.Key)
			}
		}
	}
	// A node that never held range 0's epoch cannot commit to it either.
	other := NewManifestCommitter(c.m, c.store, "n3")
	err = other.Commit(ctx, Flush{Shard: 1, Through: commitlog.Position{Segment: 1, Offset: 1},
		Tables: []SSTable{{Table: storage.TableIDOf(c.tables[0]), Range: 0, Key: "x"}}})
	if !errors.Is(err, storage.ErrFenced) {
		t.Fatalf("commit without ownership: %v", err)
	}
}

func TestTableIDOf(t *testing.T) {
	id := uuid.MustParse("01020304-0506-4708-890a-0b0c0d0e0f10")
	if got := storage.TableIDOf(id); got != 0x01020304 {
		t.Fatalf("TableIDOf = %08x", uint32(got))
	}
}

// countingStore counts the uploads of each key.
type countingStore struct {
	objectstore.Store
	mu      sync.Mutex
	uploads map[string]int
}

func (s *countingStore) NewWriter(ctx context.Context, key string) (objectstore.Writer, error) {
	s.mu.Lock()
	s.uploads[key]++
	s.mu.Unlock()
	return s.Store.NewWriter(ctx, key)
}

func (s *countingStore) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uploads[key]
}

// TestManifestPartialCommitRetried fails a flush's commit after its first
// SSTable is recorded: the retry reuses that SSTable without uploading it
// again, and records the rest.
func TestManifestPartialCommitRetried(t *testing.T) {
	c := newCluster(t)
	cs := &countingStore{Store: c.store, uploads: map[string]int{}}
	c.store = cs
	e := newEnv(t)
	mc := c.node("n1")
	ctx := context.Background()
	var first []manifest.SSTable
	var failed atomic.Bool
	mc.afterPart = func() error {
		if failed.Swap(true) {
			return nil
		}
		for _, id := range c.tables {
			ssts, err := c.m.SSTables(ctx, id)
			if err != nil {
				return err
			}
			first = append(first, ssts...)
		}
		return errors.New("test: commit interrupted")
	}
	s := c.open(e, mc)
	defer s.Close()
	acked := newAcked(c)
	for i := range 400 {
		writeBoth(t, c, s, i, acked)
	}
	testwait.For(t, "flushes", func() bool {
		p, err := mc.Flushed(ctx, 7)
		return err == nil && p != (commitlog.Position{}) && s.flushing() == 0
	})
	if len(first) != 1 {
		t.Fatalf("%d SSTables live at the interruption, want 1", len(first))
	}
	if n := cs.count(first[0].Key); n != 1 {
		t.Fatalf("recorded SSTable %s uploaded %d times", first[0].Key, n)
	}
	retried := false
	for j, id := range c.tables {
		ssts, err := c.m.SSTables(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, sst := range ssts {
			if sst.Covers[0] == first[0].Covers[0] && sst.Key != first[0].Key {
				retried = retried || cs.count(sst.Key) == 2
			}
		}
		if n := c.stored(id) + count(t, s.NewIter(storage.TableIDOf(id), nil, nil)); n != len(acked[j]) {
			t.Fatalf("table %d: %d entries stored for %d rows", j, n, len(acked[j]))
		}
	}
	if !retried {
		t.Fatal("no SSTable of the interrupted flush was uploaded again")
	}
	checkContents(t, c, s, mc, acked)
}

// TestFlushSplitsRanges checks that a flush writes one SSTable per table
// and range, each inside its range.
func TestFlushSplitsRanges(t *testing.T) {
	e := newEnv(t)
	store, err := objectstore.NewFile(vfs.NewMem(), "bucket", nil)
	if err != nil {
		t.Fatal(err)
	}
	mc := NewMemCommitter(store)
	const ranges = 8
	s, err := Open(context.Background(), e.cfg, 3, NodeDeps{FS: e.fs, Store: store, Committer: mc, Reader: mc, Ranges: ranges})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	acked := map[string]string{}
	for i := range 500 {
		m := rowMutation(5, "p"+strconv.Itoa(i%100), int64(i), 1, "v"+strconv.Itoa(i)+string(make([]byte, 100)))
		if err := s.Apply(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		acked[string(m.Entries[0].Key)] = "v" + strconv.Itoa(i) + string(make([]byte, 100))
	}
	testwait.For(t, "a flush", func() bool { return len(mc.SSTables(5)) > 0 && s.flushing() == 0 })
	seen := map[string]bool{}
	for _, sst := range mc.SSTables(5) {
		first, last := manifest.RangeBounds(sst.Range, ranges)
		lo, err1 := keys.Token(sst.FirstKey)
		hi, err2 := keys.Token(sst.LastKey)
		if err1 != nil || err2 != nil || lo != sst.MinToken || hi != sst.MaxToken || lo < first || hi > last {
			t.Fatalf("%s: tokens [%d, %d] (%v, %v), range %d is [%d, %d]", sst.Key, sst.MinToken, sst.MaxToken, err1, err2, sst.Range, first, last)
		}
		flushKey := strings.TrimSuffix(sst.Key, fmt.Sprintf("-%05d.sst", sst.Range))
		if flushKey == sst.Key {
			t.Fatalf("%s: name lacks range %d", sst.Key, sst.Range)
		}
		id := flushKey + "/" + strconv.Itoa(sst.Range)
		if seen[id] {
			t.Fatalf("two SSTables of range %d in one flush", sst.Range)
		}
		seen[id] = true
	}
	if len(seen) < ranges {
		t.Fatalf("%d SSTables for %d ranges", len(seen), ranges)
	}
	if got := contents(t, s, mc, 5); len(got) != len(acked) {
		t.Fatalf("%d rows, want %d", len(got), len(acked))
	}
}
