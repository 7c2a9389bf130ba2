package compactor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/sstable"
	"github.com/sedimentdb/sediment/internal/tablestore"
	"github.com/sedimentdb/sediment/manifest"
	"github.com/sedimentdb/sediment/objectstore"
	"github.com/sedimentdb/sediment/objectstore/faultstore"
)

// bigInputs writes n inputs of about size bytes each, whose partitions
// interleave, and returns them.
func bigInputs(t testing.TB, s objectstore.Store, n int, size int, opts sstable.WriterOptions) []manifest.SSTable {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	var ins []manifest.SSTable
	for i := range n {
		var es []entry
		for ck := int64(0); len(es)*260 < size; ck++ {
			p := partitionPrefix(i + n*int(ck/16))
			// Half random, so that compression keeps about half.
			value := append(bytes.Repeat([]byte("v"), 100), make([]byte, 100)...)
			for j := 100; j+8 <= 200; j += 8 {
				binary.LittleEndian.PutUint64(value[j:], rng.Uint64())
			}
			r := model.Row{Liveness: model.Liveness{Present: true, Timestamp: ck}, Cells: []model.Cell{{Column: 1, Timestamp: ck, Value: value}}}
			es = append(es, rowEntry(p, ck%16, r))
		}
		ins = append(ins, writeTable(t, s, fmt.Sprintf("big/%d.sst", i), sortedEntries(toMap(es)), opts))
	}
	return ins
}

// TestMemoryBounded merges inputs far larger than the read-ahead budget and
// checks what the job held: its read-ahead buffers, and the bytes of the
// ranged reads in flight at once.
func TestMemoryBounded(t *testing.T) {
	const n, size, readAhead, tail, buffer = 3, 1 << 20, 16 << 10, 16 << 10, 16 << 10
	s := newMemStore()
	ins := bigInputs(t, s, n, size, sstable.WriterOptions{BlockSize: 4 << 10})
	s.resetPeak()
	job := Job{ID: "big", Table: testTable, Inputs: ins, Now: 1, TargetSize: 256 << 10}
	outs, stats, err := Run(context.Background(), job, RunDeps{Store: s, Options: Options{ReadAhead: n * readAhead, TailSize: tail, Writer: sstable.WriterOptions{BufferSize: buffer}}})
	if err != nil {
		t.Fatal(err)
	}
	if stats.InputBytes < 8*n*readAhead {
		t.Fatalf("inputs of %d bytes are not far larger than the budget", stats.InputBytes)
	}
	peak := s.peakInFlight()
	if stats.PeakReadAhead > n*readAhead {
		t.Fatalf("read-ahead held %d bytes, budget %d", stats.PeakReadAhead, n*readAhead)
	}
	// Open reads each input's metadata once, one input at a time.
	var meta int64
	for _, in := range ins {
		r, err := tablestore.Open(context.Background(), s, in.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		meta = max(meta, in.Size-int64(r.Properties().DataSize))
	}
	if peak > n*readAhead+max(meta, tail) {
		t.Fatalf("%d bytes read at once, budget %d + %d of metadata", peak, n*readAhead, max(meta, tail))
	}
	// Chunks of readAhead/2, plus a metadata read or two per input.
	if maxReqs := stats.InputBytes/(readAhead/2) + 3*n; stats.Requests > maxReqs {
		t.Fatalf("%d ranged reads for %d bytes, want at most %d", stats.Requests, stats.InputBytes, maxReqs)
	}
	if len(outs) < 3 {
		t.Fatalf("%d outputs of about %d bytes for %d bytes of input", len(outs), job.TargetSize, stats.InputBytes)
	}
	// Uncompressed, each output ends within a partition, a block and the
	// write buffer of its target, plus its metadata.
	for _, o := range outs[:len(outs)-1] {
		if slack := int64(16*260 + sstable.DefaultBlockSize + buffer + 16<<10); o.Size > job.TargetSize+slack {
			t.Fatalf("%s: %d bytes, target %d", o.Key, o.Size, job.TargetSize)
		}
	}
	checkOutputs(t, s, job, outs, stats)
}

func TestInvalidJob(t *testing.T) {
	in := manifest.SSTable{Key: "in/0.sst", Size: 100}
	for _, job := range []Job{
		{Inputs: []manifest.SSTable{in}},
		{ID: "a/b", Inputs: []manifest.SSTable{in}},
		{ID: "..", Inputs: []manifest.SSTable{in}},
		{ID: "x"},
		{ID: "x", Inputs: []manifest.SSTable{in, in}},
		{ID: "x", Inputs: []manifest.SSTable{{Key: "in/1.sst"}}},
	} {
		if _, _, err := Run(context.Background(), job, RunDeps{Store: newMemStore()}); !errors.Is(err, ErrInvalidJob) {
			t.Errorf("%+v: %v", job, err)
		}
	}
}

// corruptTrial is a random job whose inputs span several outputs.
func corruptTrial(t testing.TB, s objectstore.Store) (Job, RunDeps) {
	t.Helper()
	wo := sstable.WriterOptions{BlockSize: 1 << 10, BufferSize: 1 << 10, Compression: sstable.S2}
	ins := bigInputs(t, s, 2, 64<<10, wo)
	return Job{ID: "corrupt", Table: testTable, Inputs: ins, Now: 1, TargetSize: 8 << 10},
		RunDeps{Store: s, Options: Options{Writer: wo, ReadAhead: 32 << 10}}
}

// checkNothingElse checks that a failed job left no object outside
// stats.Written.
func checkNothingElse(t *testing.T, s objectstore.Store, job Job, stats Stats) {
	t.Helper()
	prefix := fmt.Sprintf("compaction/%s/%s/", job.Table, job.ID)
	written := map[string]bool{}
	for _, k := range stats.Written {
		written[k] = true
	}
	if err := s.List(context.Background(), prefix, func(a objectstore.Attrs) error {
		if !written[a.Key] {
			t.Errorf("%s left behind but not listed in %v", a.Key, stats.Written)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptInput(t *testing.T) {
	for _, c := range []struct {
		name    string
		corrupt func(data []byte) []byte
	}{
		{"data block", func(d []byte) []byte { d[len(d)/2] ^= 0x40; return d }},
		{"last data block", func(d []byte) []byte { d[len(d)*3/4] ^= 1; return d }},
		{"footer", func(d []byte) []byte { d[len(d)-20] ^= 1; return d }},
		{"truncated", func(d []byte) []byte { return d[:len(d)-100] }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newMemStore()
			job, deps := corruptTrial(t, s)
			k := job.Inputs[1].Key
			s.objects[k] = c.corrupt(s.objects[k])
			outs, stats, err := Run(context.Background(), job, deps)
			if err == nil {
				t.Fatalf("corrupt input merged into %d outputs", len(outs))
			}
			if !errors.Is(err, sstable.ErrCorrupt) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("error %v is neither sstable.ErrCorrupt nor a short read", err)
			}
			if !strings.Contains(err.Error(), k) {
				t.Fatalf("error %q does not name the input %s", err, k)
			}
			if outs != nil {
				t.Fatalf("outputs %v returned with an error", outs)
			}
			checkNothingElse(t, s, job, stats)
		})
	}
	t.Run("missing", func(t *testing.T) {
		s := newMemStore()
		job, deps := corruptTrial(t, s)
		delete(s.objects, job.Inputs[0].Key)
		if _, _, err := Run(context.Background(), job, deps); !objectstore.IsNotFound(err) {
			t.Fatalf("missing input: %v", err)
		}
	})
}

// failingReads fails every ranged read after the first after.
type failingReads struct {
	objectstore.Store
	after int64
	calls atomic.Int64
}

var errInjected = errors.New("injected failure")

func (f *failingReads) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if f.calls.Add(1) > f.after {
		return nil, errInjected
	}
	return f.Store.GetRange(ctx, key, off, length)
}

func TestFailures(t *testing.T) {
	s := newMemStore()
	job, deps := corruptTrial(t, s)
	clean, stats, err := Run(context.Background(), job, deps)
	if err != nil {
		t.Fatal(err)
	}
	if len(clean) < 3 {
		t.Fatalf("%d outputs", len(clean))
	}
	reads := stats.Requests
	for _, c := range []struct {
		name  string
		store func() objectstore.Store
	}{
		{"read mid-way", func() objectstore.Store { return &failingReads{Store: s, after: reads / 2} }},
		{"first read", func() objectstore.Store { return &failingReads{Store: s} }},
		{"upload", func() objectstore.Store {
			f := faultstore.New(s)
			f.Inject(faultstore.Rule{Op: faultstore.OpClose, KeyPrefix: fmt.Sprintf("compaction/%s/%s-upload/00001", job.Table, job.ID), Err: errInjected})
			return f
		}},
		{"writer", func() objectstore.Store {
			f := faultstore.New(s)
			f.Inject(faultstore.Rule{Op: faultstore.OpWriter, KeyPrefix: fmt.Sprintf("compaction/%s/%s-writer/00002", job.Table, job.ID), Err: errInjected})
			return f
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := job
			j.ID = job.ID + "-" + strings.Fields(c.name)[0]
			d := deps
			d.Store = c.store()
			outs, stats, err := Run(context.Background(), j, d)
			if !errors.Is(err, errInjected) {
				t.Fatalf("error %v, outputs %v", err, outs)
			}
			checkNothingElse(t, s, j, stats)
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		j := job
		j.ID = "cancelled"
		if _, stats, err := Run(ctx, j, deps); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled job: %v", err)
		} else {
			checkNothingElse(t, s, j, stats)
		}
	})
}
