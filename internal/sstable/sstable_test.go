package sstable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/testwait"
)

type entry struct{ key, value []byte }

// randomEntries returns n sorted entries with distinct keys. Keys share
// prefixes of varying length so prefix compression and separators are
// exercised, including 0xff bytes.
func randomEntries(rng *rand.Rand, n int) []entry {
	seen := make(map[string]bool, n)
	out := make([]entry, 0, n)
	alphabet := []byte{0, 1, 'a', 'b', 'c', 0x7f, 0xfe, 0xff}
	for len(out) < n {
		k := make([]byte, rng.IntN(12))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		v := make([]byte, rng.IntN(300))
		for i := range v {
			v[i] = byte('a' + rng.IntN(4)) // compressible
		}
		out = append(out, entry{k, v})
	}
	slices.SortFunc(out, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
	return out
}

func writeTable(t testing.TB, entries []entry, opts WriterOptions) ([]byte, *Properties) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, opts)
	for _, e := range entries {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	p, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), p
}

func openTable(t testing.TB, data []byte, opts ReaderOptions) *Reader {
	t.Helper()
	r, err := Open(context.Background(), FromReaderAt(bytes.NewReader(data)), int64(len(data)), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var compressions = []Compression{NoCompression, S2, LZ4, Zstd}

// model is the reference iterator: a sorted slice with the same positioning
// rules as Iter.
type model struct {
	es  []entry
	pos int // -1 before start, len(es) after end
}

func (m *model) valid() bool { return m.pos >= 0 && m.pos < len(m.es) }

func (m *model) seekGE(k []byte) bool {
	m.pos = sort.Search(len(m.es), func(i int) bool { return bytes.Compare(m.es[i].key, k) >= 0 })
	return m.valid()
}

func (m *model) seekLT(k []byte) bool {
	m.pos = sort.Search(len(m.es), func(i int) bool { return bytes.Compare(m.es[i].key, k) >= 0 }) - 1
	return m.valid()
}

func (m *model) next() bool {
	if m.pos < len(m.es) {
		m.pos++
	}
	return m.valid()
}

func (m *model) prev() bool {
	if m.pos >= 0 {
		m.pos--
	}
	return m.valid()
}

func bounded(es []entry, lower, upper []byte) []entry {
	var out []entry
	for _, e := range es {
		if (lower == nil || bytes.Compare(e.key, lower) >= 0) && (upper == nil || bytes.Compare(e.key, upper) < 0) {
			out = append(out, e)
		}
	}
	return out
}

func randomKey(rng *rand.Rand, es []entry) []byte {
	if len(es) > 0 && rng.IntN(2) == 0 {
		k := es[rng.IntN(len(es))].key
		switch rng.IntN(3) {
		case 0:
			return k
		case 1:
			return append(slices.Clone(k), 0)
		default:
			if len(k) > 0 {
				return k[:len(k)-1]
			}
		}
	}
	k := make([]byte, rng.IntN(6))
	for i := range k {
		k[i] = []byte{0, 'a', 'b', 'c', 0xff}[rng.IntN(5)]
	}
	return k
}

// checkIter runs random operations on it and the model and compares them.
func checkIter(t *testing.T, rng *rand.Rand, it *Iter, es []entry, lower, upper []byte, ops int) {
	t.Helper()
	m := &model{es: bounded(es, lower, upper), pos: -1}
	var trace []string
	for range ops {
		var got, want bool
		switch op := rng.IntN(10); op {
		case 0:
			k := randomKey(rng, es)
			trace = append(trace, fmt.Sprintf("SeekGE(%x)", k))
			got, want = it.SeekGE(k), m.seekGE(k)
		case 1:
			k := randomKey(rng, es)
			trace = append(trace, fmt.Sprintf("SeekLT(%x)", k))
			got, want = it.SeekLT(k), m.seekLT(k)
		case 2:
			trace = append(trace, "First")
			got = it.First()
			m.pos = 0
			want = m.valid()
		case 3:
			trace = append(trace, "Last")
			got = it.Last()
			m.pos = len(m.es) - 1
			want = m.valid()
		case 4, 5, 6:
			trace = append(trace, "Next")
			got, want = it.Next(), m.next()
		default:
			trace = append(trace, "Prev")
			got, want = it.Prev(), m.prev()
		}
		if err := it.Error(); err != nil {
			t.Fatalf("after %v: %v", trace, err)
		}
		if got != want {
			t.Fatalf("after %v: valid=%v, want %v", trace, got, want)
		}
		if got {
			e := m.es[m.pos]
			if !bytes.Equal(it.Key(), e.key) || !bytes.Equal(it.Value(), e.value) {
				t.Fatalf("after %v: key %x, want %x", trace, it.Key(), e.key)
			}
		}
		if len(trace) > 20 {
			trace = trace[10:]
		}
	}
}

func TestRoundTripRandomized(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 1000
	if testing.Short() {
		n = 300
	}
	for _, c := range compressions {
		for _, blockSize := range []int{1, 700, 4096, 65536} {
			restart := []int{1, 3, 16}[rng.IntN(3)]
			t.Run(fmt.Sprintf("%s/block=%d/restart=%d", c, blockSize, restart), func(t *testing.T) {
				es := randomEntries(rng, n)
				data, props := writeTable(t, es, WriterOptions{
					BlockSize: blockSize, RestartInterval: restart, Compression: c, BufferSize: 1 + rng.IntN(4096),
				})
				r := openTable(t, data, ReaderOptions{TailSize: 1 + rng.IntN(1<<14)})
				if props.Entries != uint64(len(es)) || r.Properties().Entries != props.Entries {
					t.Fatalf("entries %d/%d, want %d", props.Entries, r.Properties().Entries, len(es))
				}
				if !bytes.Equal(props.FirstKey, es[0].key) || !bytes.Equal(props.LastKey, es[len(es)-1].key) {
					t.Fatalf("first/last key %x/%x", props.FirstKey, props.LastKey)
				}

				// Full scans both ways.
				it := r.NewIter(context.Background(), nil, nil).(*Iter)
				i := 0
				for ok := it.First(); ok; ok = it.Next() {
					if !bytes.Equal(it.Key(), es[i].key) || !bytes.Equal(it.Value(), es[i].value) {
						t.Fatalf("forward entry %d: %x, want %x", i, it.Key(), es[i].key)
					}
					i++
				}
				if it.Error() != nil || i != len(es) {
					t.Fatalf("forward scan: %d entries, err %v", i, it.Error())
				}
				i = len(es)
				for ok := it.Last(); ok; ok = it.Prev() {
					i--
					if !bytes.Equal(it.Key(), es[i].key) || !bytes.Equal(it.Value(), es[i].value) {
						t.Fatalf("reverse entry %d: %x, want %x", i, it.Key(), es[i].key)
					}
				}
				if it.Error() != nil || i != 0 {
					t.Fatalf("reverse scan stopped at %d, err %v", i, it.Error())
				}
				checkIter(t, rng, it, es, nil, nil, 600)
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}

				// Bounded iterators.
				for range 8 {
					var lower, upper []byte
					if rng.IntN(4) > 0 {
						lower = randomKey(rng, es)
					}
					if rng.IntN(4) > 0 {
						upper = randomKey(rng, es)
					}
					it := r.NewIter(context.Background(), lower, upper).(*Iter)
					checkIter(t, rng, it, es, lower, upper, 200)
					it.Close()
				}

				// Point reads.
				for range 300 {
					e := es[rng.IntN(len(es))]
					v, ok, err := r.Get(context.Background(), e.key)
					if err != nil || !ok || !bytes.Equal(v, e.value) {
						t.Fatalf("Get(%x) = %x, %v, %v", e.key, v, ok, err)
					}
				}
				for range 300 {
					k := randomKey(rng, nil)
					_, present := slices.BinarySearchFunc(es, k, func(e entry, k []byte) int { return bytes.Compare(e.key, k) })
					_, ok, err := r.Get(context.Background(), k)
					if err != nil || ok != present {
						t.Fatalf("Get(%x): ok=%v err=%v, want %v", k, ok, err, present)
					}
				}
			})
		}
	}
}

func TestEmptyTable(t *testing.T) {
	data, props := writeTable(t, nil, WriterOptions{})
	if props.Entries != 0 || props.DataBlocks != 0 {
		t.Fatalf("props %+v", props)
	}
	r := openTable(t, data, ReaderOptions{})
	it := r.NewIter(context.Background(), nil, nil)
	if it.First() || it.Last() || it.SeekGE(nil) || it.SeekLT([]byte("z")) || it.Error() != nil {
		t.Fatal("empty table iterator found an entry")
	}
	if _, ok, err := r.Get(context.Background(), []byte("a")); ok || err != nil {
		t.Fatalf("Get on empty table: %v %v", ok, err)
	}
}

func TestEmptyKeyAndValue(t *testing.T) {
	es := []entry{{[]byte{}, []byte{}}, {[]byte{0}, []byte("x")}, {[]byte{0, 0}, nil}}
	data, _ := writeTable(t, es, WriterOptions{BlockSize: 1})
	r := openTable(t, data, ReaderOptions{})
	for _, e := range es {
		v, ok, err := r.Get(context.Background(), e.key)
		if !ok || err != nil || !bytes.Equal(v, e.value) {
			t.Fatalf("Get(%x) = %x %v %v", e.key, v, ok, err)
		}
	}
}

func TestAddOutOfOrder(t *testing.T) {
	w := NewWriter(&bytes.Buffer{}, WriterOptions{})
	if err := w.Add([]byte("b"), nil); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := w.Add([]byte(k), nil); !errors.Is(err, ErrOutOfOrder) {
			t.Fatalf("Add(%q) = %v, want ErrOutOfOrder", k, err)
		}
	}
	if err := w.Add([]byte("c"), nil); err != nil {
		t.Fatalf("Add after a rejected key: %v", err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add([]byte("d"), nil); err == nil {
		t.Fatal("Add after Close succeeded")
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n < len(p) {
		return 0, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteErrorIsSticky(t *testing.T) {
	w := NewWriter(&failWriter{n: 1000}, WriterOptions{BlockSize: 100, BufferSize: 16})
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		err = w.Add(fmt.Appendf(nil, "key%05d", i), bytes.Repeat([]byte("v"), 50))
	}
	if err == nil {
		_, err = w.Close()
	}
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("got %v, want disk full", err)
	}
	if _, err := w.Close(); err == nil {
		t.Fatal("Close after a write error succeeded")
	}
}

func TestPropertiesAndPartitions(t *testing.T) {
	// Keys: 2-byte partition prefix, then a clustering suffix.
	var es []entry
	for p := range 50 {
		for c := range p%4 + 1 {
			es = append(es, entry{[]byte{byte(p), 0xaa, byte(c)}, []byte{byte(p), byte(c)}})
		}
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	opts := WriterOptions{
		BlockSize: 64, Compression: Zstd, BloomBitsPerKey: 12,
		Split: func(k []byte) int { return 2 },
		Stats: func(k, v []byte) EntryStats {
			ldt := int64(NoDeletionTime)
			if v[1] == 3 {
				ldt = 1000 + int64(v[0])
			}
			return EntryStats{MinTimestamp: int64(v[0]) - 10, MaxTimestamp: int64(v[0]) * 100, MinLocalDeletionTime: ldt, Rows: 1, Cells: 2, Tombstones: uint64(v[1] / 3)}
		},
		WriterID: "ingest-7/shard-1", CreatedAt: created,
	}
	data, wp := writeTable(t, es, opts)
	r := openTable(t, data, ReaderOptions{Split: opts.Split})
	p := r.Properties()
	want := Properties{
		FormatVersion: FormatVersion, Compression: Zstd, BlockSize: 64, BloomBitsPerKey: 12,
		FirstKey: es[0].key, LastKey: es[len(es)-1].key, Entries: uint64(len(es)), Partitions: 50,
		DataBlocks: wp.DataBlocks, DataSize: wp.DataSize, IndexSize: wp.IndexSize, FilterSize: wp.FilterSize,
		MinTimestamp: -10, MaxTimestamp: 4900, MinLocalDeletionTime: 1003,
		Rows: uint64(len(es)), Cells: 2 * uint64(len(es)), Tombstones: 12,
		WriterID: "ingest-7/shard-1", CreatedAt: created,
	}
	if fmt.Sprint(*p) != fmt.Sprint(want) || fmt.Sprint(*wp) != fmt.Sprint(want) {
		t.Fatalf("properties\n got %+v\nwrote %+v\n want %+v", *p, *wp, want)
	}
	if wp.DataBlocks < 10 || wp.DataSize+wp.IndexSize+wp.FilterSize >= uint64(len(data)) {
		t.Fatalf("implausible sizes %+v for %d bytes", wp, len(data))
	}
	for pt := range 50 {
		if !r.MayContain([]byte{byte(pt), 0xaa}) {
			t.Fatalf("filter lost partition %d", pt)
		}
	}
	// With Split, Get consults the filter: absent partitions read no block.
	before := r.Stats().BlockReads
	misses := 0
	for pt := 50; pt < 250; pt++ {
		if _, ok, err := r.Get(context.Background(), []byte{byte(pt), 0xaa, 0}); ok || err != nil {
			t.Fatal(ok, err)
		}
		if r.Stats().BlockReads != before {
			misses++
			before = r.Stats().BlockReads
		}
	}
	if misses > 20 {
		t.Fatalf("%d of 200 absent partitions read a block", misses)
	}
}

func TestPropertiesEmptyStats(t *testing.T) {
	_, p := writeTable(t, []entry{{[]byte("a"), nil}}, WriterOptions{BloomBitsPerKey: -1})
	if p.MinTimestamp != math.MaxInt64 || p.MaxTimestamp != math.MinInt64 || p.MinLocalDeletionTime != NoDeletionTime || p.BloomBitsPerKey != 0 {
		t.Fatalf("%+v", p)
	}
}

func TestPropertiesSkipUnknownTags(t *testing.T) {
	p := Properties{FormatVersion: 1, Entries: 7, WriterID: "w"}
	b := p.encode(nil)
	b = append(b, 100, 3, 'x', 'y', 'z') // a tag from the future
	got, err := decodeProperties(b)
	if err != nil || got.Entries != 7 || got.WriterID != "w" {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := decodeProperties(b[:len(b)-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated properties: %v", err)
	}
}

// TestOpenReadsTailOnce checks that Open issues one read when the metadata
// fits the tail and two otherwise, and that iteration fetches each block once.
func TestOpenReadsTailOnce(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(3, 4)), 2000)
	data, props := writeTable(t, es, WriterOptions{BlockSize: 256})
	meta := props.IndexSize + props.FilterSize + footerLen + 64
	for _, tc := range []struct {
		tail, reads int
	}{{int(meta) + 1000, 1}, {footerLen + 10, 2}} {
		cr := &countingReaderAt{r: bytes.NewReader(data)}
		r, err := Open(context.Background(), cr, int64(len(data)), ReaderOptions{TailSize: tc.tail})
		if err != nil {
			t.Fatal(err)
		}
		if cr.reads != tc.reads {
			t.Fatalf("tail %d: Open made %d reads, want %d", tc.tail, cr.reads, tc.reads)
		}
		it := r.NewIter(context.Background(), nil, nil)
		for ok := it.First(); ok; ok = it.Next() {
		}
		if got := r.Stats().BlockReads; got != props.DataBlocks || cr.reads != tc.reads+int(got) {
			t.Fatalf("scan read %d blocks (%d reads), want %d", got, cr.reads, props.DataBlocks)
		}
	}
}

type countingReaderAt struct {
	r     *bytes.Reader
	reads int
}

func (c *countingReaderAt) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	c.reads++
	return c.r.ReadAt(p, off)
}

// TestBoundsSkipBlocks checks that a bounded scan reads only the blocks
// overlapping its range.
func TestBoundsSkipBlocks(t *testing.T) {
	var es []entry
	for i := range 1000 {
		es = append(es, entry{fmt.Appendf(nil, "k%04d", i), bytes.Repeat([]byte{'v'}, 100)})
	}
	data, props := writeTable(t, es, WriterOptions{BlockSize: 1000})
	r := openTable(t, data, ReaderOptions{})
	perBlock := float64(len(es)) / float64(props.DataBlocks)
	it := r.NewIter(context.Background(), []byte("k0500"), []byte("k0600"))
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if n != 100 {
		t.Fatalf("scanned %d entries, want 100", n)
	}
	if got, max := float64(r.Stats().BlockReads), 100/perBlock+2; got > max {
		t.Fatalf("forward scan read %v blocks, want <= %v", got, max)
	}
	before := r.Stats().BlockReads
	n = 0
	for ok := it.Last(); ok; ok = it.Prev() {
		n++
	}
	if got, max := float64(r.Stats().BlockReads-before), 100/perBlock+2; n != 100 || got > max {
		t.Fatalf("reverse scan: %d entries, %v blocks (max %v)", n, got, max)
	}
	// A point read fetches exactly one block.
	before = r.Stats().BlockReads
	if _, ok, _ := r.Get(context.Background(), []byte("k0777")); !ok || r.Stats().BlockReads-before != 1 {
		t.Fatal("point read did not fetch exactly one block")
	}
}

func TestSeparator(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"abc", "abd", "abc"},
		{"abc", "abz", "abd"},
		{"abc", "b", "ac"},
		{"a", "c", "b"},
		{"ab", "ab\x00", "ab"},
		{"a\xff\xff", "b", "a\xff\xff"},
		{"a\xffx", "b", "a\xffy"},
		{"", "a", ""},
	} {
		got := separator(nil, []byte(tc.a), []byte(tc.b))
		if string(got) != tc.want {
			t.Errorf("separator(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
		if bytes.Compare(got, []byte(tc.a)) < 0 || bytes.Compare(got, []byte(tc.b)) >= 0 {
			t.Errorf("separator(%q, %q) = %q out of range", tc.a, tc.b, got)
		}
	}
}

func TestCompressionNames(t *testing.T) {
	for _, c := range compressions {
		got, err := ParseCompression(c.String())
		if err != nil || got != c {
			t.Fatalf("ParseCompression(%q) = %v, %v", c, got, err)
		}
	}
	if _, err := ParseCompression("snappy"); err == nil {
		t.Fatal("ParseCompression accepted snappy")
	}
}

func TestEntryTooLarge(t *testing.T) {
	w := NewWriter(&bytes.Buffer{}, WriterOptions{})
	if err := w.Add([]byte("k"), make([]byte, maxEntrySize)); err == nil {
		t.Fatal("Add accepted an entry over the limit")
	}
}

// TestConcurrentReads shares one Reader among goroutines (run with -race).
func TestConcurrentReads(t *testing.T) {
	es := randomEntries(rand.New(rand.NewPCG(15, 16)), 500)
	data, props := writeTable(t, es, WriterOptions{BlockSize: 512, Compression: LZ4})
	r := openTable(t, data, ReaderOptions{})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			it := r.NewIter(ctx, nil, nil)
			defer it.Close()
			n := 0
			for ok := it.Last(); ok; ok = it.Prev() {
				n++
			}
			if n != len(es) || it.Error() != nil {
				errs <- fmt.Errorf("goroutine %d scanned %d entries: %v", g, n, it.Error())
				return
			}
			for i := g; i < len(es); i += 4 {
				if v, ok, err := r.Get(ctx, es[i].key); !ok || err != nil || !bytes.Equal(v, es[i].value) {
					errs <- fmt.Errorf("Get(%x): %v %v", es[i].key, ok, err)
					return
				}
			}
		})
	}
	testwait.Wait(t, "the concurrent readers", &wg)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if want := 4*props.DataBlocks + uint64(len(es)); r.Stats().BlockReads != want {
		t.Fatalf("%d block reads, want %d", r.Stats().BlockReads, want)
	}
}

func TestAddOrderCheck(t *testing.T) {
	for _, tc := range []struct {
		prev, next string
		ok         bool
	}{
		{"ab", "abc", true}, {"abc", "ab", false}, {"abc", "abc", false}, {"abc", "abd", true},
		{"abd", "abc", false}, {"", "a", true}, {"a", "", false}, {"0123456789ab", "0123456789ac", true},
		{"0123456789ac", "0123456789ab", false}, {"01234567", "012345678", true},
	} {
		w := NewWriter(&bytes.Buffer{}, WriterOptions{})
		if err := w.Add([]byte(tc.prev), nil); err != nil {
			t.Fatal(err)
		}
		if err := w.Add([]byte(tc.next), nil); (err == nil) != tc.ok {
			t.Errorf("Add(%q) after %q: %v, want ok=%v", tc.next, tc.prev, err, tc.ok)
		}
	}
}
