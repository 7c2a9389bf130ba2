package memtable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sedimentdb/sediment/internal/kv"
)

var errBadValue = errors.New("test: bad value")

// maxMerge keeps the greater value, like the data model's tie-break: it is
// associative and commutative. A new value starting with 0xff fails.
func maxMerge(dst, a, b []byte) ([]byte, error) {
	if len(b) > 0 && b[0] == 0xff {
		return nil, errBadValue
	}
	if bytes.Compare(a, b) >= 0 {
		return append(dst, a...), nil
	}
	return append(dst, b...), nil
}

// model is the sorted map a snapshot should show.
type model struct {
	keys   []string // sorted
	values map[string]string
}

func (md *model) clone() *model {
	c := &model{keys: slices.Clone(md.keys), values: make(map[string]string, len(md.values))}
	for k, v := range md.values {
		c.values[k] = v
	}
	return c
}

// set applies a Set to the model, mirroring maxMerge.
func (md *model) set(k, v string) error {
	old, ok := md.values[k]
	if !ok {
		i, _ := slices.BinarySearch(md.keys, k)
		md.keys = slices.Insert(md.keys, i, k)
		md.values[k] = v
		return nil
	}
	merged, err := maxMerge(nil, []byte(old), []byte(v))
	if err != nil {
		return err
	}
	md.values[k] = string(merged)
	return nil
}

// modelIter walks a model the way iter walks a snapshot.
type modelIter struct {
	md           *model
	lower, upper []byte
	i            int // index into md.keys; valid when 0 <= i < len
	valid        bool
}

func (mi *modelIter) inBounds(i int) bool {
	if i < 0 || i >= len(mi.md.keys) {
		return false
	}
	k := []byte(mi.md.keys[i])
	return (mi.lower == nil || bytes.Compare(k, mi.lower) >= 0) &&
		(mi.upper == nil || bytes.Compare(k, mi.upper) < 0)
}

func (mi *modelIter) at(i int) bool {
	mi.i, mi.valid = i, mi.inBounds(i)
	return mi.valid
}

func (mi *modelIter) SeekGE(key []byte) bool {
	if mi.lower != nil && bytes.Compare(key, mi.lower) < 0 {
		key = mi.lower
	}
	i, _ := slices.BinarySearch(mi.md.keys, string(key))
	return mi.at(i)
}

func (mi *modelIter) SeekLT(key []byte) bool {
	if mi.upper != nil && bytes.Compare(key, mi.upper) > 0 {
		key = mi.upper
	}
	i, _ := slices.BinarySearch(mi.md.keys, string(key))
	return mi.at(i - 1)
}

func (mi *modelIter) First() bool {
	if mi.lower != nil {
		return mi.SeekGE(mi.lower)
	}
	return mi.at(0)
}

func (mi *modelIter) Last() bool {
	if mi.upper != nil {
		return mi.SeekLT(mi.upper)
	}
	return mi.at(len(mi.md.keys) - 1)
}

func (mi *modelIter) Next() bool { return mi.valid && mi.at(mi.i+1) }
func (mi *modelIter) Prev() bool { return mi.valid && mi.at(mi.i-1) }

// keyGen makes keys that exercise the comparison paths: short keys below the
// 8-byte prefix, keys sharing a few tokens that differ only after it, and
// keys with random tokens.
type keyGen struct {
	rng    *rand.Rand
	tokens [][]byte
}

func newKeyGen(rng *rand.Rand) *keyGen {
	g := &keyGen{rng: rng}
	for range 4 {
		t := make([]byte, 8)
		for i := range t {
			t[i] = byte(rng.IntN(3)) * 0x7f
		}
		g.tokens = append(g.tokens, t)
	}
	return g
}

func (g *keyGen) key() []byte {
	const alphabet = "\x00\x01ab\xff"
	var k []byte
	switch g.rng.IntN(4) {
	case 0, 1:
		k = slices.Clone(g.tokens[g.rng.IntN(len(g.tokens))])
	case 2:
		k = binary.BigEndian.AppendUint64(nil, g.rng.Uint64()) // spread over the directory
	}
	for range g.rng.IntN(10) {
		k = append(k, alphabet[g.rng.IntN(len(alphabet))])
	}
	return k
}

func (g *keyGen) value() []byte {
	n := g.rng.IntN(24)
	if g.rng.IntN(200) == 0 {
		n = 5000 + g.rng.IntN(5000) // larger than a test chunk
	}
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(g.rng.IntN(255)) // never 0xff: that fails the merge
	}
	if n > 0 && g.rng.IntN(50) == 0 {
		v[0] = 0xff
	}
	return v
}

type snapModel struct {
	snap Snapshot
	md   *model
}

func TestModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			testModel(t, seed)
		})
	}
}

func testModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	gen := newKeyGen(rng)
	m := New(Options{Merge: maxMerge, ChunkSize: 4096, Seed: seed + 1})
	staged := &model{values: map[string]string{}}
	committed := staged.clone()
	var snaps []snapModel
	ops := 2000
	if testing.Short() {
		ops = 500
	}
	for range ops {
		switch r := rng.IntN(100); {
		case r < 70:
			k, v := gen.key(), gen.value()
			errModel := staged.set(string(k), string(v))
			if err := m.Set(k, v); !errors.Is(err, errModel) {
				t.Fatalf("Set(%q): error %v, model %v", k, err, errModel)
			}
		case r < 78:
			m.Commit()
			committed = staged.clone()
		case r < 82:
			snaps = append(snaps, snapModel{m.Snapshot(), committed})
		default:
			// Full scans are O(n log n) backwards; do them now and then.
			scan := rng.IntN(20) == 0
			checkSnapshot(t, rng, gen, m.Snapshot(), committed, scan)
			if len(snaps) > 0 {
				sm := snaps[rng.IntN(len(snaps))]
				checkSnapshot(t, rng, gen, sm.snap, sm.md, scan)
			}
		}
	}
	m.Commit()
	committed = staged.clone()
	checkSnapshot(t, rng, gen, m.Snapshot(), committed, true)
	for _, sm := range snaps {
		checkSnapshot(t, rng, gen, sm.snap, sm.md, true)
	}
}

// checkSnapshot compares a snapshot with its model: point gets, a full scan
// both ways, and a random walk of seeks and steps within random bounds.
func checkSnapshot(t *testing.T, rng *rand.Rand, gen *keyGen, s Snapshot, md *model, scan bool) {
	t.Helper()
	for range 10 {
		var k []byte
		if len(md.keys) > 0 && rng.IntN(2) == 0 {
			k = []byte(md.keys[rng.IntN(len(md.keys))])
		} else {
			k = gen.key()
		}
		want, wantOK := md.values[string(k)]
		got, ok := s.Get(k)
		if ok != wantOK || string(got) != want {
			t.Fatalf("Get(%q) = %q, %v; want %q, %v", k, got, ok, want, wantOK)
		}
	}
	if scan {
		checkScan(t, s, md)
	}
	bound := func() []byte {
		if rng.IntN(3) == 0 {
			return nil
		}
		return gen.key()
	}
	lower, upper := bound(), bound()
	it := s.NewIter(lower, upper)
	mi := &modelIter{md: md, lower: lower, upper: upper}
	for range 40 {
		var op string
		var got, want bool
		switch rng.IntN(6) {
		case 0:
			k := gen.key()
			op = fmt.Sprintf("SeekGE(%q)", k)
			got, want = it.SeekGE(k), mi.SeekGE(k)
		case 1:
			k := gen.key()
			op = fmt.Sprintf("SeekLT(%q)", k)
			got, want = it.SeekLT(k), mi.SeekLT(k)
		case 2:
			op = "First"
			got, want = it.First(), mi.First()
		case 3:
			op = "Last"
			got, want = it.Last(), mi.Last()
		case 4:
			op = "Next"
			got, want = it.Next(), mi.Next()
		case 5:
			op = "Prev"
			got, want = it.Prev(), mi.Prev()
		}
		if got != want {
			t.Fatalf("bounds [%q, %q): %s = %v, want %v", lower, upper, op, got, want)
		}
		if got {
			wk := md.keys[mi.i]
			if string(it.Key()) != wk || string(it.Value()) != md.values[wk] {
				t.Fatalf("bounds [%q, %q): %s at %q=%q, want %q=%q",
					lower, upper, op, it.Key(), it.Value(), wk, md.values[wk])
			}
		}
	}
	if it.Error() != nil {
		t.Fatal(it.Error())
	}
}

func TestOlderSnapshotKeepsOlderValue(t *testing.T) {
	m := New(Options{Merge: maxMerge})
	k := []byte("0123456789key")
	mustSet(t, m, k, []byte("a"))
	before := m.Snapshot()
	m.Commit()
	s1 := m.Snapshot()
	mustSet(t, m, k, []byte("c"))
	mustSet(t, m, []byte("other"), []byte("x"))
	if v, _ := m.Snapshot().Get(k); string(v) != "a" {
		t.Fatalf("uncommitted merge visible: %q", v)
	}
	m.Commit()
	s2 := m.Snapshot()
	mustSet(t, m, k, []byte("b")) // merges to "c": max
	m.Commit()
	s3 := m.Snapshot()

	if _, ok := before.Get(k); ok {
		t.Fatal("snapshot before the first commit sees the key")
	}
	for _, c := range []struct {
		s    Snapshot
		want string
	}{{s1, "a"}, {s2, "c"}, {s3, "c"}} {
		if v, ok := c.s.Get(k); !ok || string(v) != c.want {
			t.Fatalf("Get = %q, %v; want %q", v, ok, c.want)
		}
	}
	if _, ok := s1.Get([]byte("other")); ok {
		t.Fatal("s1 sees a key committed after it")
	}
}

func TestMergeError(t *testing.T) {
	m := New(Options{Merge: maxMerge})
	k := []byte("k")
	mustSet(t, m, k, []byte("a"))
	size := m.Size()
	if err := m.Set(k, []byte{0xff}); !errors.Is(err, errBadValue) {
		t.Fatalf("Set = %v, want %v", err, errBadValue)
	}
	if m.Size() != size {
		t.Fatalf("failed Set grew Size from %d to %d", size, m.Size())
	}
	m.Commit()
	if v, _ := m.Snapshot().Get(k); string(v) != "a" {
		t.Fatalf("Get = %q after failed merge", v)
	}
}

func TestNoMergeReplaces(t *testing.T) {
	m := New(Options{})
	mustSet(t, m, []byte("k"), []byte("new-but-smaller"))
	mustSet(t, m, []byte("k"), []byte("a"))
	m.Commit()
	if v, _ := m.Snapshot().Get([]byte("k")); string(v) != "a" {
		t.Fatalf("Get = %q, want the last value", v)
	}
}

// aliasingMerge returns one of its inputs instead of appending to dst. The
// memtable must not reuse such a result as scratch space.
func aliasingMerge(dst, a, b []byte) ([]byte, error) {
	if bytes.Compare(a, b) >= 0 {
		return a, nil
	}
	return b, nil
}

func TestAliasingMerge(t *testing.T) {
	m := New(Options{Merge: aliasingMerge})
	mustSet(t, m, []byte("k1"), []byte("zzzz"))
	mustSet(t, m, []byte("k1"), []byte("a")) // returns the arena's "zzzz"
	mustSet(t, m, []byte("k2"), []byte("b"))
	mustSet(t, m, []byte("k2"), []byte("c"))
	m.Commit()
	s := m.Snapshot()
	for k, want := range map[string]string{"k1": "zzzz", "k2": "c"} {
		if v, _ := s.Get([]byte(k)); string(v) != want {
			t.Fatalf("Get(%s) = %q, want %q", k, v, want)
		}
	}
}

func TestKeyTooLarge(t *testing.T) {
	m := New(Options{})
	if err := m.Set(make([]byte, MaxKeyLen+1), nil); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("Set = %v, want %v", err, ErrKeyTooLarge)
	}
	if m.Size() != headSize {
		t.Fatalf("Size = %d after rejected Set", m.Size())
	}
}

func TestFull(t *testing.T) {
	m := New(Options{ChunkSize: 4096})
	v := make([]byte, 3000) // one entry a chunk
	var err error
	n := 0
	for ; err == nil; n++ {
		err = m.Set(fmt.Appendf(nil, "key%08d", n), v)
	}
	if !errors.Is(err, ErrFull) {
		t.Fatalf("Set = %v, want %v", err, ErrFull)
	}
	if max, used := int64((maxChunks-1)*4096), m.arena.size.Load(); used > max || used < max-4096 {
		t.Fatalf("full at node arena size %d, address space %d", used, max)
	}
	m.Commit()
	s := m.Snapshot()
	for i := range n - 1 {
		if _, ok := s.Get(fmt.Appendf(nil, "key%08d", i)); !ok {
			t.Fatalf("key %d lost", i)
		}
	}
	if _, ok := s.Get(fmt.Appendf(nil, "key%08d", n-1)); ok {
		t.Fatal("the rejected entry is visible")
	}
}

func TestKeyAndValueAreCopied(t *testing.T) {
	m := New(Options{})
	k, v := []byte("key"), []byte("value")
	mustSet(t, m, k, v)
	k[0], v[0] = 'X', 'X'
	m.Commit()
	it := m.Snapshot().NewIter(nil, nil)
	if !it.First() || string(it.Key()) != "key" || string(it.Value()) != "value" {
		t.Fatalf("entry changed with the caller's buffers")
	}
	// Appending to returned slices must not write into the arena.
	_ = append(it.Key(), "!!!!"...)
	_ = append(it.Value(), "!!!!"...)
	mustSet(t, m, []byte("kez"), []byte("v"))
	m.Commit()
	if got := collect(m.Snapshot().NewIter(nil, nil)); !slices.Equal(got, []string{"key=value", "kez=v"}) {
		t.Fatalf("scan = %q", got)
	}
}

func TestMergingIterator(t *testing.T) {
	a, b := New(Options{Merge: maxMerge}), New(Options{Merge: maxMerge})
	mustSet(t, a, []byte("k1"), []byte("1"))
	mustSet(t, a, []byte("k2"), []byte("5"))
	mustSet(t, b, []byte("k2"), []byte("7"))
	mustSet(t, b, []byte("k3"), []byte("3"))
	a.Commit()
	b.Commit()
	it := kv.Merging(maxMerge, a.Snapshot().NewIter(nil, nil), b.Snapshot().NewIter(nil, nil))
	if got := collect(it); !slices.Equal(got, []string{"k1=1", "k2=7", "k3=3"}) {
		t.Fatalf("merged scan = %q", got)
	}
}

func collect(it kv.Iterator) []string {
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	it.Close()
	return out
}

func mustSet(t testing.TB, m *Memtable, k, v []byte) {
	t.Helper()
	if err := m.Set(k, v); err != nil {
		t.Fatal(err)
	}
}

// checkScan compares full forward and reverse scans with the model.
func checkScan(t *testing.T, s Snapshot, md *model) {
	t.Helper()
	it := s.NewIter(nil, nil)
	var fwd []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.Key()))
		if string(it.Value()) != md.values[string(it.Key())] {
			t.Fatalf("value of %q = %q, want %q", it.Key(), it.Value(), md.values[string(it.Key())])
		}
	}
	if !slices.Equal(fwd, md.keys) {
		t.Fatalf("forward scan: %d keys %q, want %d %q", len(fwd), fwd, len(md.keys), md.keys)
	}
	var rev []string
	for ok := it.Last(); ok; ok = it.Prev() {
		rev = append(rev, string(it.Key()))
	}
	slices.Reverse(rev)
	if !slices.Equal(rev, md.keys) {
		t.Fatalf("reverse scan: %q, want %q", rev, md.keys)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}
