package ingest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/internal/vfs/errorfs"
	"github.com/sedimentdb/sediment/manifest"
)

func (e *env) openNode() (*Node, error) {
	return OpenNode(context.Background(), e.cfg, NodeDeps{
		FS: e.fs, Store: e.faults, Committer: e.committer, Reader: e.committer,
		Registerer: prometheus.NewRegistry(), ChunkSize: 4 << 10,
	})
}

func TestNode(t *testing.T) {
	e := newEnv(t)
	e.cfg.Shards = 4
	n, err := e.openNode()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const parts = 200
	for p := range parts {
		pk := "p" + strconv.Itoa(p)
		if err := n.Apply(ctx, rowMutation(1, pk, 0, 1, pk)); err != nil {
			t.Fatal(err)
		}
	}
	// One mutation spanning partitions of different shards.
	spanning := &storage.Mutation{Table: 1}
	for p := range 8 {
		spanning.Entries = append(spanning.Entries, storage.Entry{Key: rowKey("p"+strconv.Itoa(p), 1), Value: rowValue(1, "s")})
	}
	if err := n.Apply(ctx, spanning); err != nil {
		t.Fatal(err)
	}
	// Each partition lives on the shard that owns its token.
	total := 0
	for i := range n.Shards() {
		it := n.Shard(i).NewIter(1, nil, nil)
		for ok := it.First(); ok; ok = it.Next() {
			tok, err := keys.Token(it.Key())
			if err != nil {
				t.Fatal(err)
			}
			if n.ShardOf(tok) != i {
				t.Fatalf("token %d found on shard %d, owned by %d", tok, i, n.ShardOf(tok))
			}
			total++
		}
		it.Close()
	}
	if total != parts+8 {
		t.Fatalf("%d rows on the shards, want %d", total, parts+8)
	}
	if got := drain(t, n.NewIter(1, nil, nil)); len(got) != parts+8 {
		t.Fatalf("node reads %d rows, want %d", len(got), parts+8)
	}
	// A token range meets only the shards it overlaps, and finds its rows.
	lo, hi := keys.AppendToken(nil, -1<<62), keys.AppendToken(nil, 1<<62)
	want := 0
	for p := range parts {
		if tok := token.Murmur3([]byte("p" + strconv.Itoa(p))); tok >= -1<<62 && tok < 1<<62 {
			want++
		}
	}
	got := 0
	it := n.NewIter(1, lo, hi)
	for ok := it.First(); ok; ok = it.Next() {
		if kind, _ := keys.EntryKind(it.Key()); kind == keys.KindRow {
			var r model.Row
			if err := model.DecodeRow(it.Value(), &r); err != nil {
				t.Fatal(err)
			}
			if string(r.Cells[0].Value) != "s" {
				got++
			}
		}
	}
	it.Close()
	if got != want {
		t.Fatalf("range read %d partitions, want %d", got, want)
	}
	ok, err := n.ApplyIf(ctx, rowMutation(1, "p3", 9, 1, "x"), func(it kv.Iterator) (bool, error) { return it.First(), it.Error() })
	if err != nil || !ok {
		t.Fatalf("conditional write on an existing partition: %v, %v", ok, err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	// The commitlogs hold four shards' slices: another count is refused,
	// the same count reopens and replays.
	e.cfg.Shards = 3
	if _, err := e.openNode(); err == nil || !strings.Contains(err.Error(), "4 shards") {
		t.Fatalf("reopening with 3 shards: %v", err)
	}
	e.cfg.Shards = 4
	n, err = e.openNode()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if got := drain(t, n.NewIter(1, nil, nil)); len(got) != parts+9 {
		t.Fatalf("reopened node reads %d rows, want %d", len(got), parts+9)
	}
}

// TestNodeApplyInvalid refuses a mutation spanning shards whose entry on
// one shard is invalid: no shard applies its part.
func TestNodeApplyInvalid(t *testing.T) {
	e := newEnv(t)
	e.cfg.Shards = 4
	n, err := e.openNode()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	shardOf := func(pk string) int { return n.ShardOf(token.Murmur3([]byte(pk))) }
	other := "p1"
	for i := 2; shardOf(other) == shardOf("p0"); i++ {
		other = "p" + strconv.Itoa(i)
	}
	m := &storage.Mutation{Table: 1, Entries: []storage.Entry{
		{Key: rowKey("p0", 1), Value: rowValue(1, "v")},
		{Key: rowKey(other, 1), Value: []byte{0xff, 0xff}},
	}}
	if err := n.Apply(context.Background(), m); !errors.Is(err, storage.ErrInvalidMutation) {
		t.Fatalf("got %v, want ErrInvalidMutation", err)
	}
	if got := drain(t, n.NewIter(1, nil, nil)); len(got) != 0 {
		t.Fatalf("an invalid mutation left %d rows", len(got))
	}
}

// TestShardsFileInterrupted fails the write of the SHARDS file: the next
// start must not find a partial file that it cannot read.
func TestShardsFileInterrupted(t *testing.T) {
	mem := vfs.NewMem()
	for _, op := range []errorfs.Op{errorfs.OpWrite, errorfs.OpSync, errorfs.OpClose} {
		failing := errorfs.Wrap(mem, &errorfs.Rule{
			Ops:   op,
			Path:  func(p string) bool { return strings.Contains(p, shardsFile) },
			Times: 1,
		})
		if err := checkShardCount(failing, "commitlog", 4); err == nil {
			t.Fatalf("%v failed, yet the SHARDS file was written", op)
		}
		if _, err := mem.Stat("commitlog/" + shardsFile); err == nil {
			t.Fatalf("%v failed, yet a SHARDS file exists", op)
		}
	}
	if err := checkShardCount(mem, "commitlog", 4); err != nil {
		t.Fatal(err)
	}
	// Durable once written.
	if err := checkShardCount(mem.CrashClone(), "commitlog", 3); err == nil || !strings.Contains(err.Error(), "4 shards") {
		t.Fatalf("3 shards after a crash: %v", err)
	}
	if err := checkShardCount(mem, "commitlog", 4); err != nil {
		t.Fatal(err)
	}
}

// TestAdoptingRefusesReads checks the gate a takeover puts on the ranges it
// replays: reads that meet one fail retriably, others pass, and all pass
// once it is lifted.
func TestAdoptingRefusesReads(t *testing.T) {
	n := &Node{ranges: 4}
	key := func(r int) []byte {
		// A token in the middle of range r of 4.
		tok := int64(uint64(r)<<62+1<<61) ^ -1<<63
		if got := manifest.RangeOf(tok, 4); got != r {
			t.Fatalf("token %d is in range %d, not %d", tok, got, r)
		}
		k, err := keys.RowKey(nil, tok, []byte("p"), nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if err := n.readable(nil, nil); err != nil {
		t.Fatalf("read with nothing adopted: %v", err)
	}
	n.adopt([]int{2}, true)
	for _, c := range []struct {
		lower, upper []byte
		refused      bool
	}{
		{key(2), key(2), true},
		{key(1), key(3), true},
		{nil, nil, true},
		{key(0), key(1), false},
		{key(3), nil, false},
	} {
		err := n.readable(c.lower, c.upper)
		if c.refused != (err != nil) || (err != nil && !storage.Retriable(err)) {
			t.Fatalf("read of [%x, %x) while range 2 is adopted: %v", c.lower, c.upper, err)
		}
	}
	n.adopt([]int{2}, false)
	if err := n.readable(nil, nil); err != nil {
		t.Fatalf("read after the adoption: %v", err)
	}
}
