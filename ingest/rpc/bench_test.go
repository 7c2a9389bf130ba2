package rpc_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// benchWriters is the number of concurrent callers on every side of the
// apply comparison.
const benchWriters = 64

// openBenchNode opens a node whose commitlog is in memory, so that fsyncs
// do not hide the cost of the hop, and whose bucket is on disk, so that
// flushed memtables do not pile up in memory.
func openBenchNode(b *testing.B) *ingest.Node {
	dir := b.TempDir()
	bucket, err := objectstore.NewFile(vfs.Default, filepath.Join(dir, "bucket"), nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg := ingest.DefaultConfig()
	cfg.Shards = 2
	cfg.Commitlog.Dir = "log"
	c := ingest.NewMemCommitter(bucket)
	n, err := ingest.OpenNode(context.Background(), cfg, ingest.NodeDeps{
		FS: vfs.NewMem(), Store: bucket, Committer: c, Reader: c, Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Close() })
	return n
}

// benchMutations are rows of about 100-byte values in partitions of 8.
func benchMutations() []*storage.Mutation {
	ms := make([]*storage.Mutation, 1<<14)
	val := string(make([]byte, 100))
	for i := range ms {
		ms[i] = rowMutation(1, "p"+strconv.Itoa(i/8), int64(i%8), 1, val)
	}
	return ms
}

// applyParallel runs b.N applies through h spread over benchWriters
// goroutines.
func applyParallel(b *testing.B, h rpc.Handler, ms []*storage.Mutation) {
	b.SetBytes(int64(len(ms[0].Entries[0].Key) + len(ms[0].Entries[0].Value)))
	b.ReportAllocs()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range benchWriters {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := h.Apply(context.Background(), ms[i%len(ms)]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "applies/s")
}

// BenchmarkApply compares applies on one node in process, over one
// connection and over four, with the same 64 callers, taking turns over
// benchfig.Rounds rounds.
func BenchmarkApply(b *testing.B) {
	n := openBenchNode(b)
	ms := benchMutations()
	local := ingest.RPCHandler(n)
	addr, _ := serve(b, local, rpc.Options{})
	one := dial(b, addr, rpc.Options{Conns: 1})
	four := dial(b, addr, rpc.Options{Conns: 4})
	var best benchfig.Best
	for round := range benchfig.Rounds {
		best.Observe(
			benchfig.Measure(b, fmt.Sprintf("inprocess/round=%d", round), func(b *testing.B) { applyParallel(b, local, ms) }),
			benchfig.Measure(b, fmt.Sprintf("rpc/conns=1/round=%d", round), func(b *testing.B) { applyParallel(b, one, ms) }),
			benchfig.Measure(b, fmt.Sprintf("rpc/conns=4/round=%d", round), func(b *testing.B) { applyParallel(b, four, ms) }),
		)
	}
	// Each figure is the first side's applies/s over the second's.
	benchfig.Report("rpc.apply.vs_inprocess", benchfig.Speedup(best[1], best[0]), "x")
	benchfig.Report("rpc.single_conn.vs_many", benchfig.Speedup(best[1], best[2]), "x")
}

// BenchmarkScan reads pages of a memtable in process and over the network.
func BenchmarkScan(b *testing.B) {
	n := openBenchNode(b)
	ms := benchMutations()
	for _, m := range ms {
		if err := n.Apply(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
	local := ingest.RPCHandler(n)
	addr, _ := serve(b, local, rpc.Options{})
	remote := dial(b, addr, rpc.Options{Conns: 1})
	for _, limit := range []int{10, 100, 1000} {
		for _, side := range []struct {
			name string
			h    rpc.Handler
		}{{"inprocess", local}, {"rpc", remote}} {
			b.Run(fmt.Sprintf("limit=%d/%s", limit, side.name), func(b *testing.B) {
				req := rpc.ScanRequest{Table: 1, Limit: limit}
				b.ReportAllocs()
				start := time.Now()
				entries := 0
				for b.Loop() {
					p, err := side.h.Scan(context.Background(), req)
					if err != nil {
						b.Fatal(err)
					}
					entries += len(p.Entries)
					if req = req.Resume(p); p.Next == nil {
						req = rpc.ScanRequest{Table: 1, Limit: limit}
					}
				}
				b.ReportMetric(float64(entries)/time.Since(start).Seconds(), "entries/s")
			})
		}
	}
}
