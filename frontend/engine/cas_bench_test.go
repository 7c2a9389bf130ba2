package engine

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/benchfig"
)

// BenchmarkRemoteApplyIf measures a conditional write through Remote
// against a plain one, one caller at a time over loopback: both overwrite
// one 100-byte row of a one-row partition in the owner's memtables. A
// conditional write costs the partition's read (a memtable page over RPC,
// the View's SSTables) and the write's round trip, whose node side also
// reads the partition on the shard's goroutine (ingest.Node.ApplyIf, the
// same as Local's). The figure is its cost as a multiple of the plain
// write's; the read side alone is measured too, for the breakdown.
func BenchmarkRemoteApplyIf(b *testing.B) {
	c := newCluster(b)
	r := c.remotes[0]
	pks := pksOf(0, 100)
	now := time.Now().Unix()
	v := fmt.Sprintf("%0100d", 0)
	yes := func(*Partition) (bool, error) { return true, nil }
	mutation := func(i int) *Mutation {
		return &Mutation{Table: c.table, Entries: []Entry{insert(pks[i%len(pks)], 0, int64(i), v, 0, now)}}
	}
	apply := func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := r.Apply(c.ctx, mutation(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	applyIf := func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if ok, err := r.ApplyIf(c.ctx, mutation(i), now, yes); !ok || err != nil {
				b.Fatalf("applyif: %v, %v", ok, err)
			}
		}
	}
	read := func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := r.Read(c.ctx, Slice{Table: c.table, Key: []byte(pks[i%len(pks)]), Now: now}); err != nil {
				b.Fatal(err)
			}
		}
	}
	var best benchfig.Best
	for round := range benchfig.Rounds {
		s := strconv.Itoa(round)
		best.Observe(benchfig.Measure(b, "apply/"+s, apply), benchfig.Measure(b, "applyif/"+s, applyIf), benchfig.Measure(b, "read/"+s, read))
	}
	if best[0] > 0 && best[1] > 0 {
		benchfig.Report("engine.remote.applyif_vs_apply", float64(best[1])/float64(best[0]), "x")
	}
}
