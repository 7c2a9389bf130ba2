package kv

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// sliceIter iterates over sorted, unique entries held in memory.
type sliceIter struct {
	keys, vals [][]byte
	i          int
	err        error // returned once the iterator reaches failAt
	failAt     int
}

func (s *sliceIter) valid() bool {
	if s.i >= 0 && s.i < len(s.keys) && s.err != nil && s.i == s.failAt {
		return false
	}
	return s.i >= 0 && s.i < len(s.keys)
}

func (s *sliceIter) SeekGE(k []byte) bool {
	s.i, _ = slices.BinarySearchFunc(s.keys, k, bytes.Compare)
	return s.valid()
}

func (s *sliceIter) SeekLT(k []byte) bool {
	i, _ := slices.BinarySearchFunc(s.keys, k, bytes.Compare)
	s.i = i - 1
	return s.valid()
}

func (s *sliceIter) First() bool   { s.i = 0; return s.valid() }
func (s *sliceIter) Last() bool    { s.i = len(s.keys) - 1; return s.valid() }
func (s *sliceIter) Next() bool    { s.i++; return s.valid() }
func (s *sliceIter) Prev() bool    { s.i--; return s.valid() }
func (s *sliceIter) Key() []byte   { return s.keys[s.i] }
func (s *sliceIter) Value() []byte { return s.vals[s.i] }
func (s *sliceIter) Close() error  { return nil }

func (s *sliceIter) Error() error {
	if s.err != nil && s.i == s.failAt {
		return s.err
	}
	return nil
}

// maxMerge keeps the greater value: associative and commutative.
func maxMerge(dst, a, b []byte) ([]byte, error) {
	if bytes.Compare(a, b) >= 0 {
		return append(dst, a...), nil
	}
	return append(dst, b...), nil
}

func TestMergingMatchesModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for round := range 200 {
		nsrc := 1 + rng.IntN(5)
		model := map[string][]byte{}
		var sources []Iterator
		for range nsrc {
			entries := map[string][]byte{}
			for range rng.IntN(30) {
				k := fmt.Sprintf("k%02d", rng.IntN(40))
				v := fmt.Appendf(nil, "v%03d", rng.IntN(1000))
				entries[k] = v
			}
			it := &sliceIter{}
			for _, k := range slices.Sorted(maps.Keys(entries)) {
				it.keys = append(it.keys, []byte(k))
				it.vals = append(it.vals, entries[k])
				if old, ok := model[k]; !ok || bytes.Compare(entries[k], old) > 0 {
					model[k] = entries[k]
				}
			}
			sources = append(sources, it)
		}
		keys := slices.Sorted(maps.Keys(model))
		m := Merging(maxMerge, sources...)
		pos := -1 // index into keys; -1 or len(keys) when unpositioned
		check := func(op string, ok bool) {
			t.Helper()
			want := pos >= 0 && pos < len(keys)
			if ok != want {
				t.Fatalf("round %d: %s: valid=%v, want %v (pos %d of %d)", round, op, ok, want, pos, len(keys))
			}
			if ok && (string(m.Key()) != keys[pos] || !bytes.Equal(m.Value(), model[keys[pos]])) {
				t.Fatalf("round %d: %s: at %q=%q, want %q=%q", round, op, m.Key(), m.Value(), keys[pos], model[keys[pos]])
			}
		}
		for range 100 {
			valid := pos >= 0 && pos < len(keys)
			switch op := rng.IntN(6); {
			case op == 0:
				pos = 0
				check("First", m.First())
			case op == 1:
				pos = len(keys) - 1
				check("Last", m.Last())
			case op == 2:
				k := fmt.Sprintf("k%02d", rng.IntN(42))
				pos, _ = slices.BinarySearch(keys, k)
				check("SeekGE "+k, m.SeekGE([]byte(k)))
			case op == 3:
				k := fmt.Sprintf("k%02d", rng.IntN(42))
				pos, _ = slices.BinarySearch(keys, k)
				pos--
				check("SeekLT "+k, m.SeekLT([]byte(k)))
			case op == 4 && valid:
				pos++
				check("Next", m.Next())
			case op == 5 && valid:
				pos--
				check("Prev", m.Prev())
			}
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMergingReportsSourceError(t *testing.T) {
	boom := errors.New("boom")
	a := &sliceIter{keys: [][]byte{[]byte("a"), []byte("c")}, vals: [][]byte{{1}, {2}}}
	b := &sliceIter{keys: [][]byte{[]byte("b"), []byte("d")}, vals: [][]byte{{3}, {4}}, err: boom, failAt: 1}
	m := Merging(maxMerge, a, b)
	var got []string
	for ok := m.First(); ok; ok = m.Next() {
		got = append(got, string(m.Key()))
	}
	if !errors.Is(m.Error(), boom) {
		t.Fatalf("error = %v, want %v", m.Error(), boom)
	}
	if want := []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("keys before the error = %v, want %v", got, want)
	}
}

func TestMergingPropagatesMergeError(t *testing.T) {
	bad := errors.New("undecodable")
	a := &sliceIter{keys: [][]byte{[]byte("a")}, vals: [][]byte{{1}}}
	b := &sliceIter{keys: [][]byte{[]byte("a")}, vals: [][]byte{{2}}}
	m := Merging(func(dst, x, y []byte) ([]byte, error) { return nil, bad }, a, b)
	if m.First() || !errors.Is(m.Error(), bad) {
		t.Fatalf("First with failing merge: error %v, want %v", m.Error(), bad)
	}
}
