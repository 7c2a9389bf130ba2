// Package memtablebench compares the memtable with the ordered maps a Go
// programmer would otherwise reach for: tidwall/btree's BTreeG, published to
// readers with its copy-on-write Copy at every commit, and huandu/skiplist.
// All three take the same keys and values, and each copies them, as a
// memtable must (callers reuse their buffers).
//
// Speed figures compare process CPU time (user + system, garbage collection
// included) rather than wall time: the benchmarks run on machines shared
// with other work, where wall time measures the neighbours as much as the
// code. The wall time of each side is in the usual benchmark lines.
//
//	cd bench && go test -run '^$' -bench . -benchtime=1x ./memtable/
package memtablebench

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/huandu/skiplist"
	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/memtable"
	"github.com/tidwall/btree"
)

const (
	// entries is the workload's size; -short, which `make test` uses to
	// run every benchmark once, divides it by 16.
	entries = 1_000_000
	keyLen  = 32 // 8-byte token + 24 bytes of partition and clustering key
	valLen  = 100
	// batch is the group-commit size: after each batch the memtable commits
	// and the B-tree publishes a Copy for readers.
	batch = 128
)

// data holds the workload: keys that start with a random token, and values.
type data struct {
	keys   [][]byte
	values [][]byte
	order  []int // a random permutation for point gets
}

// workload is built on first use, once flags (-short) are parsed.
var workload = sync.OnceValue(func() *data {
	n := entries
	if testing.Short() {
		n /= 16
	}
	rng := rand.New(rand.NewPCG(1, 2))
	d := &data{keys: make([][]byte, n), values: make([][]byte, 1024)}
	buf := make([]byte, n*keyLen)
	for i := range d.keys {
		k := buf[i*keyLen : (i+1)*keyLen : (i+1)*keyLen]
		for j := range k {
			k[j] = byte(rng.Uint32())
		}
		d.keys[i] = k
	}
	for i := range d.values {
		v := make([]byte, valLen)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		d.values[i] = v
	}
	d.order = rng.Perm(n)
	return d
})

func (d *data) value(i int) []byte { return d.values[i%len(d.values)] }

func (d *data) size() int { return len(d.keys) }

type item struct{ key, value []byte }

func itemLess(a, b item) bool { return bytes.Compare(a.key, b.key) < 0 }

func buildMemtable(tb testing.TB, d *data) *memtable.Memtable {
	m := memtable.New(memtable.Options{})
	for i, k := range d.keys {
		if err := m.Set(k, d.value(i)); err != nil {
			tb.Fatal(err)
		}
		if i%batch == batch-1 {
			m.Commit()
		}
	}
	m.Commit()
	return m
}

// buildBTree returns the tree as a reader would see it: the last Copy.
func buildBTree(d *data) *btree.BTreeG[item] {
	tr := btree.NewBTreeGOptions(itemLess, btree.Options{NoLocks: true})
	var published *btree.BTreeG[item]
	for i, k := range d.keys {
		tr.Set(item{key: slices.Clone(k), value: slices.Clone(d.value(i))})
		if i%batch == batch-1 {
			published = tr.Copy()
		}
	}
	_ = published
	return tr.Copy()
}

// buildBTreeNoCopy builds the B-tree without publishing snapshots: faster,
// but readers could not use it while it grows.
func buildBTreeNoCopy(d *data) *btree.BTreeG[item] {
	tr := btree.NewBTreeGOptions(itemLess, btree.Options{NoLocks: true})
	for i, k := range d.keys {
		tr.Set(item{key: slices.Clone(k), value: slices.Clone(d.value(i))})
	}
	return tr
}

func buildSkiplist(d *data) *skiplist.SkipList {
	l := skiplist.New(skiplist.Bytes)
	for i, k := range d.keys {
		l.Set(slices.Clone(k), slices.Clone(d.value(i)))
	}
	return l
}

// side runs one implementation as a sub-benchmark through benchfig.Measure
// and returns its process CPU time per op; unit names the op, done to each
// of n entries, for the per-entry metric.
func side(b *testing.B, name, unit string, n int, op func()) time.Duration {
	var cpu time.Duration
	benchfig.Measure(b, name, func(b *testing.B) {
		runtime.GC() // the previous side's garbage is not this one's cost
		b.ResetTimer()
		start := cpuTime()
		for range b.N {
			op()
		}
		cpu = (cpuTime() - start) / time.Duration(b.N)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/"+unit)
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/"+unit)
	})
	return cpu
}

// cpuTime returns the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkInsert builds each structure from empty to all entries; one op is
// a whole build.
func BenchmarkInsert(b *testing.B) {
	d := workload()
	b.SetBytes(int64(d.size() * (keyLen + valLen)))
	var best benchfig.Best
	for range benchfig.Rounds {
		best.Observe(
			side(b, "memtable", "insert", d.size(), func() { buildMemtable(b, d) }),
			side(b, "btree", "insert", d.size(), func() { buildBTree(d) }),
			side(b, "skiplist", "insert", d.size(), func() { buildSkiplist(d) }),
			side(b, "btree-nocopy", "insert", d.size(), func() { buildBTreeNoCopy(d) }),
		)
	}
	ours, bt, sl, nc := best[0], best[1], best[2], best[3]
	if ours > 0 {
		benchfig.Report("memtable.insert_ops_s", float64(d.size())/ours.Seconds(), "ops/s")
	}
	if f := benchfig.Speedup(ours, bt); f > 0 {
		benchfig.Report("memtable.insert.vs_btree", f, "x")
	}
	if f := benchfig.Speedup(ours, sl); f > 0 {
		benchfig.Report("memtable.insert.vs_skiplist", f, "x")
	}
	if f := benchfig.Speedup(ours, nc); f > 0 {
		benchfig.Report("memtable.insert.vs_btree_nocopy", f, "x")
	}
}

// BenchmarkGet looks up every key once, in random order; one op is the lot.
func BenchmarkGet(b *testing.B) {
	d := workload()
	lookups := func(get func(k []byte) bool) func() {
		return func() {
			for _, i := range d.order {
				if !get(d.keys[i]) {
					b.Fatalf("key %d not found", i)
				}
			}
		}
	}
	snap := buildMemtable(b, d).Snapshot()
	tr := buildBTree(d)
	var best benchfig.Best
	for range benchfig.Rounds {
		best.Observe(
			side(b, "memtable", "get", d.size(), lookups(func(k []byte) bool {
				_, ok := snap.Get(k)
				return ok
			})),
			side(b, "btree", "get", d.size(), lookups(func(k []byte) bool {
				_, ok := tr.Get(item{key: k})
				return ok
			})),
		)
	}
	ours, bt := best[0], best[1]
	if f := benchfig.Speedup(ours, bt); f > 0 {
		benchfig.Report("memtable.get.vs_btree", f, "x")
	}
}

// BenchmarkBytesPerEntry measures the heap each structure holds per entry,
// keys and values included, after a full GC.
func BenchmarkBytesPerEntry(b *testing.B) {
	d := workload()
	measure := func(build func() any) float64 {
		var perEntry float64
		for range b.N {
			before := heapInUse()
			s := build()
			perEntry = float64(heapInUse()-before) / float64(d.size())
			runtime.KeepAlive(s)
		}
		return perEntry
	}
	var ours, bt, sl float64
	var arena int64
	b.Run("memtable", func(b *testing.B) {
		ours = measure(func() any {
			m := buildMemtable(b, d)
			arena = m.Size()
			return m
		})
		b.ReportMetric(ours, "B/entry")
		b.ReportMetric(float64(arena)/float64(d.size()), "arenaB/entry")
	})
	b.Run("btree", func(b *testing.B) {
		bt = measure(func() any { return buildBTree(d) })
		b.ReportMetric(bt, "B/entry")
	})
	b.Run("skiplist", func(b *testing.B) {
		sl = measure(func() any { return buildSkiplist(d) })
		b.ReportMetric(sl, "B/entry")
	})
	if ours > 0 {
		benchfig.Report("memtable.bytes_per_entry", ours, "B")
	}
	if ours > 0 && bt > 0 {
		benchfig.Report("memtable.bytes_per_entry.vs_btree", ours/bt, "x")
	}
	if ours > 0 && sl > 0 {
		benchfig.Report("memtable.bytes_per_entry.vs_skiplist", ours/sl, "x")
	}
}

// heapInUse returns the bytes of live heap objects after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
