package engine

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/benchfig"
)

// BenchmarkRemote compares Remote with Local on one node's partitions, in
// its memtables, over loopback: a read of a 10-row partition and a write of
// one row. The figures are Remote's cost as a multiple
// of Local's, one caller at a time (latency, not throughput).
func BenchmarkRemote(b *testing.B) {
	c := newCluster(b)
	local, err := NewLocal(LocalConfig{Node: c.nodes[0], View: c.view, Store: c.store})
	if err != nil {
		b.Fatal(err)
	}
	all := pksOf(0, 400)
	pks, wpks := all[:200], all[200:] // read, written
	now := time.Now().Unix()
	v := fmt.Sprintf("%0100d", 0)
	for _, pk := range pks {
		es := make([]Entry, benchRows)
		for ck := range es {
			es[ck] = insert(pk, int64(ck), 1, v, 0, now)
		}
		if err := local.Apply(c.ctx, &Mutation{Table: c.table, Entries: es}); err != nil {
			b.Fatal(err)
		}
	}
	read := func(e Engine) func(b *testing.B) {
		return func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				p, err := e.Read(c.ctx, Slice{Table: c.table, Key: []byte(pks[i%len(pks)]), Now: now})
				if err != nil || len(p.Rows) != benchRows {
					b.Fatalf("read: %v", err)
				}
			}
		}
	}
	write := func(e Engine) func(b *testing.B) {
		return func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				m := &Mutation{Table: c.table, Entries: []Entry{insert(wpks[i%len(wpks)], int64(i), 1, v, 0, now)}}
				if err := e.Apply(c.ctx, m); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// Every read round first: the writes' flushes would move the read
	// partitions into SSTables.
	var reads, writes benchfig.Best
	for r := range benchfig.Rounds {
		s := strconv.Itoa(r)
		reads.Observe(benchfig.Measure(b, "read/local/"+s, read(local)), benchfig.Measure(b, "read/remote/"+s, read(c.remotes[0])))
	}
	for r := range benchfig.Rounds {
		s := strconv.Itoa(r)
		writes.Observe(benchfig.Measure(b, "apply/local/"+s, write(local)), benchfig.Measure(b, "apply/remote/"+s, write(c.remotes[0])))
	}
	if reads[0] > 0 && reads[1] > 0 {
		benchfig.Report("engine.remote.read_vs_local", float64(reads[1])/float64(reads[0]), "x")
	}
	if writes[0] > 0 && writes[1] > 0 {
		benchfig.Report("engine.remote.apply_vs_local", float64(writes[1])/float64(writes[0]), "x")
	}
}
