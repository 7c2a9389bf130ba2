package engine

import (
	"bytes"
	"math"
	"sort"
	"testing"

	"github.com/sedimentdb/sediment/internal/kv"
)

// sliceIter is a kv.Iterator over sorted entries.
type sliceIter struct {
	es []Entry
	i  int
}

var _ kv.Iterator = (*sliceIter)(nil)

func (it *sliceIter) valid() bool { return it.i >= 0 && it.i < len(it.es) }
func (it *sliceIter) SeekGE(k []byte) bool {
	it.i = sort.Search(len(it.es), func(i int) bool { return bytes.Compare(it.es[i].Key, k) >= 0 })
	return it.valid()
}
func (it *sliceIter) SeekLT(k []byte) bool { it.SeekGE(k); it.i--; return it.valid() }
func (it *sliceIter) First() bool          { it.i = 0; return it.valid() }
func (it *sliceIter) Last() bool           { it.i = len(it.es) - 1; return it.valid() }
func (it *sliceIter) Next() bool           { it.i++; return it.valid() }
func (it *sliceIter) Prev() bool           { it.i--; return it.valid() }
func (it *sliceIter) Key() []byte          { return it.es[it.i].Key }
func (it *sliceIter) Value() []byte        { return it.es[it.i].Value }
func (it *sliceIter) Error() error         { return nil }
func (it *sliceIter) Close() error         { return nil }

// fuzzEntries is a small table: partitions with headers, rows and deletions.
func fuzzEntries() []Entry {
	es := []Entry{
		setStatic("a", 1, "s"),
		insert("a", 1, 1, "x", 0, 100), insert("a", 2, 1, "x", 0, 100), insert("a", 3, 1, "x", 0, 100),
		deleteRange("b", 0, 1, 2, 100),
		insert("b", 0, 1, "x", 0, 100), insert("b", 5, 1, "x", 0, 100),
		setStatic("c", 1, "s"),
		insert("d", 7, 1, "x", 0, 100), deleteRow("d", 8, 2, 100),
	}
	sort.Slice(es, func(i, j int) bool { return bytes.Compare(es[i].Key, es[j].Key) < 0 })
	return es
}

// FuzzScanResume feeds arbitrary resume positions, which come from clients,
// to a scan: it must refuse them or return only rows after them, in order.
func FuzzScanResume(f *testing.F) {
	f.Add([]byte(nil), 2)
	f.Add(rowKey("a", 1), 1)
	f.Add(rowKey("b", 0), 3)
	f.Add(headerKey("c"), 1)
	f.Add(prefixOf("d"), 0)
	f.Add([]byte{0x80, 0, 0, 0, 0, 0, 0, 0, 'a', 0}, 1)
	f.Add([]byte{0x80, 0, 0, 0, 0, 0, 0, 0, 'a', 0, 1, 2, 0xff}, 1)
	es := fuzzEntries()
	f.Fuzz(func(t *testing.T, after []byte, limit int) {
		limit = max(limit%8, 0)
		resumed, err := resumePrefix(after, math.MinInt64, math.MaxInt64)
		if err != nil {
			return
		}
		if after != nil && !bytes.HasPrefix(after, resumed) {
			t.Fatalf("prefix %x of %x", resumed, after)
		}
		lower := resumed
		if lower == nil {
			lower = []byte{}
		}
		for pages := 0; pages < 20; pages++ {
			page, err := scan(&sliceIter{es: es}, lower, resumed, after, limit, 100)
			if err != nil {
				return // a malformed position may fail to resolve, never panic
			}
			prev := after
			for _, p := range page.Partitions {
				for _, r := range p.Rows {
					if prev != nil && bytes.Compare(r.Key, prev) <= 0 {
						t.Fatalf("row %x returned after %x", r.Key, prev)
					}
					prev = r.Key
				}
			}
			if page.Next == nil {
				return
			}
			if resumed, err = resumePrefix(page.Next, math.MinInt64, math.MaxInt64); err != nil {
				t.Fatalf("scan returned a resume position it refuses: %v", err)
			}
			after, lower = page.Next, resumed
		}
	})
}

// FuzzClusteringOf checks that any bytes give a suffix or an error.
func FuzzClusteringOf(f *testing.F) {
	f.Add(rowKey("a", 1))
	f.Add(headerKey("a"))
	f.Add(bound("a", 2, 0))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, key []byte) {
		c, err := ClusteringOf(key)
		if err == nil && !bytes.HasSuffix(key, c) {
			t.Fatalf("ClusteringOf(%x) = %x, not a suffix", key, c)
		}
	})
}

// TestScanIter pages through the fuzz table, checking the rows and statics
// of every page size against a full scan.
func TestScanIter(t *testing.T) {
	es := fuzzEntries()
	full, err := scan(&sliceIter{es: es}, []byte{}, nil, nil, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range full.Partitions {
		want = append(want, string(p.Key))
		for _, r := range p.Rows {
			want = append(want, string(r.Key))
		}
	}
	// a: static and 3 rows; b: row 5 (0 is deleted); c: static only; d: row 7.
	if len(full.Partitions) != 4 || len(want) != 4+3+1+1 {
		t.Fatalf("full scan: %d partitions, %q", len(full.Partitions), want)
	}
	for limit := 1; limit <= 6; limit++ {
		var got []string
		var after, resumed, lastPK []byte
		lower := []byte{}
		for pages := 1; ; pages++ {
			// Every page holds at least one entry, so a scan that needs
			// more pages than there are entries does not advance.
			if pages > len(es) {
				t.Fatalf("limit %d: %d pages for %d entries", limit, pages, len(es))
			}
			page, err := scan(&sliceIter{es: es}, lower, resumed, after, limit, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range page.Partitions {
				if !bytes.Equal(p.Key, lastPK) { // not continued from the last page
					got = append(got, string(p.Key))
					lastPK = p.Key
				}
				if !p.StaticLive && (string(p.Key) == "a" || string(p.Key) == "c") {
					t.Fatalf("limit %d: partition %s without its static row", limit, p.Key)
				}
				for _, r := range p.Rows {
					got = append(got, string(r.Key))
				}
			}
			if page.Next == nil {
				break
			}
			if after != nil && bytes.Compare(page.Next, after) <= 0 {
				t.Fatalf("limit %d: page %d ends at %x, not after the previous page's end %x", limit, pages, page.Next, after)
			}
			after = page.Next
			if resumed, err = resumePrefix(after, math.MinInt64, math.MaxInt64); err != nil {
				t.Fatal(err)
			}
			lower = resumed
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: %q, want %q", limit, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("limit %d: %q, want %q", limit, got, want)
			}
		}
	}
}
