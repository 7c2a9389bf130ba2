package compactor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/manifest/manifesttest"
	"github.com/sedimentdb/sediment/objectstore"
)

// BenchmarkWorkers drains a queue of jobs, one per table, with one worker
// and with three side by side, through the embedded NATS and an in-memory
// bucket. compaction.scaling_3_workers is the throughput of three over
// that of one; on a machine with fewer than three cores it says how much
// of the merge's time the workers spend waiting (on NATS and the bucket)
// rather than on the CPU.
func BenchmarkWorkers(b *testing.B) {
	const jobs, inputs, size = 6, 4, 1 << 20
	ctx := context.Background()
	js, _ := manifesttest.JetStream(b)
	s := newMemStore()
	// The manifest archives to a file bucket: memStore has no PutIf.
	archive, err := objectstore.NewFile(vfs.Default, b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	m, err := manifest.Open(ctx, js, archive, "c1", manifest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := m.InitRanges(ctx, 1); err != nil {
		b.Fatal(err)
	}
	q, err := OpenQueue(ctx, js, "c1", QueueOptions{AckWait: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	wo := sstable.WriterOptions{Compression: sstable.S2}
	templ := benchInputs(b, s, inputs, size, wo)
	var total int64
	for i := range templ {
		total += templ[i].Size
		templ[i].MinToken, templ[i].MaxToken = mustToken(b, templ[i].FirstKey), mustToken(b, templ[i].LastKey)
	}
	mets := NewMetrics(nil)
	round := 0
	// queue commits copies of the template inputs as the L0 of fresh
	// tables and queues their compaction.
	queue := func(b *testing.B) {
		round++
		for j := range jobs {
			table := uuid.New()
			var ins []manifest.SSTable
			for i, t := range templ {
				s.mu.Lock()
				data := s.objects[t.Key]
				s.mu.Unlock()
				t.Key = fmt.Sprintf("jobs/%d/%d/%d.sst", round, j, i)
				if _, err := s.Put(ctx, t.Key, data); err != nil {
					b.Fatal(err)
				}
				ins = append(ins, t)
			}
			if _, err := m.CommitSSTables(ctx, manifest.Commit{Table: table, Range: 0, Add: ins}); err != nil {
				b.Fatal(err)
			}
			if err := q.Submit(ctx, Plan{Table: table, Range: 0, Inputs: ins, OutputLevel: 1, TargetSize: 64 << 20}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// clean drops the objects of the round; the manifest's archive stays.
	clean := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for k := range s.objects {
			if strings.HasPrefix(k, "jobs/") || strings.HasPrefix(k, "compaction/") {
				delete(s.objects, k)
			}
		}
	}
	drain := func(workers int) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetBytes(int64(jobs) * total)
			for range b.N {
				b.StopTimer()
				clean()
				queue(b)
				target := value(mets.committed) + jobs
				wctx, cancel := context.WithCancel(ctx)
				var wg sync.WaitGroup
				b.StartTimer()
				for range workers {
					// The default poll: cancelling wctx ends a wait at
					// once, and a short poll loses the job delivered as
					// a wait times out (redelivered only after the ack
					// wait, a minute here).
					w, err := NewWorker(q, m, WorkerOptions{Store: s, Metrics: mets, Run: Options{Writer: wo}})
					if err != nil {
						b.Fatal(err)
					}
					wg.Go(func() { _ = w.Run(wctx) })
				}
				for value(mets.committed) < target {
					time.Sleep(time.Millisecond)
				}
				b.StopTimer()
				cancel()
				wg.Wait()
				if f := value(mets.failed); f != 0 {
					b.Fatalf("%v jobs failed", f)
				}
			}
		}
	}
	var best benchfig.Best
	for r := range benchfig.Rounds {
		one := benchfig.Measure(b, fmt.Sprintf("workers=1/round=%d", r), drain(1))
		three := benchfig.Measure(b, fmt.Sprintf("workers=3/round=%d", r), drain(3))
		best.Observe(one, three)
	}
	benchfig.Report("compaction.scaling_3_workers", benchfig.Speedup(best[1], best[0]), "x")
}
