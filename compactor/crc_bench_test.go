package compactor

import (
	"context"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/sstable"
)

// BenchmarkCompactionChecksum reports compaction.crc_fraction: the share of
// a merge's CPU time that CRC-32C checksums take, in percent. The merge is
// BenchmarkCompaction's (four overlapping S2-compressed inputs of 8 MiB of
// rows); the other side checksums, with the SSTable format's CRC-32C, the
// exact bytes of the merge's input and output objects. Every block of an
// SSTable (data, index, filter) carries a CRC-32C of its payload, checked
// when the merge reads it and computed when it writes it, so these are the
// bytes the merge checksums, give or take the blocks' 5-byte trailers and
// the footer. The sides take turns; each keeps its best round.
func BenchmarkCompactionChecksum(b *testing.B) {
	wo := sstable.WriterOptions{Compression: sstable.S2}
	s := newMemStore()
	job, in := benchMergeJob(b, s, wo)
	ins := job.Inputs
	// objects are the bytes the last merge read and wrote.
	var objects [][]byte
	var mergeCPU, crcCPU time.Duration
	merge := func(b *testing.B) {
		b.SetBytes(in)
		start := cpuTime()
		for b.Loop() {
			job.ID = fmt.Sprintf("crc-%d", b.N)
			outs, _, err := Run(context.Background(), job, RunDeps{Store: s, Options: Options{Writer: wo}})
			if err != nil {
				b.Fatal(err)
			}
			objects = objects[:0]
			s.mu.Lock()
			for _, t := range ins {
				objects = append(objects, s.objects[t.Key])
			}
			for _, o := range outs {
				objects = append(objects, s.objects[o.Key])
				delete(s.objects, o.Key)
			}
			s.mu.Unlock()
		}
		mergeCPU = (cpuTime() - start) / time.Duration(b.N)
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	var sum uint32
	checksum := func(b *testing.B) {
		var n int64
		for _, o := range objects {
			n += int64(len(o))
		}
		b.SetBytes(n)
		start := cpuTime()
		for b.Loop() {
			for _, o := range objects {
				sum ^= crc32.Checksum(o, table)
			}
		}
		crcCPU = (cpuTime() - start) / time.Duration(b.N)
	}
	var best benchfig.Best
	for round := range benchfig.Rounds {
		mergeWall := benchfig.Measure(b, fmt.Sprintf("merge/round=%d", round), merge)
		crcWall := benchfig.Measure(b, fmt.Sprintf("crc32c/round=%d", round), checksum)
		best.Observe(mergeWall, mergeCPU, crcWall, crcCPU)
	}
	if len(objects) <= len(ins) {
		b.Fatalf("the merge wrote no output (%d objects)", len(objects))
	}
	if best[1] > 0 && best[3] > 0 {
		benchfig.Report("compaction.crc_fraction", 100*float64(best[3])/float64(best[1]), "%")
	}
	b.Logf("merge %v CPU (%.0f MB/s per core), checksums %v CPU per merge (checksum %x)", best[1], float64(in)/1e6/best[1].Seconds(), best[3], sum)
}
