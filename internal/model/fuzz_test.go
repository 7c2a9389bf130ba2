package model

import (
	"bytes"
	"testing"
)

// seeds adds the golden examples and some random values to a fuzz corpus.
func seeds(f *testing.F, kind Kind, add func(v []byte)) {
	for _, ex := range examples() {
		if ex.v[0]>>4 == byte(kind) {
			add(ex.v)
		}
	}
	g := newGen(40)
	for range 20 {
		if kind == KindRow {
			r := g.row()
			add(AppendRow(nil, &r))
		} else {
			h := g.header()
			add(AppendHeader(nil, &h))
		}
	}
}

func FuzzDecodeRow(f *testing.F) {
	seeds(f, KindRow, func(v []byte) { f.Add(v) })
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Row
		if err := DecodeRow(b, &r); err != nil {
			if _, serr := ValueStats(b); serr == nil && b[0] == tagRow {
				t.Fatalf("ValueStats accepts what DecodeRow rejects: %v", err)
			}
			return
		}
		// Every value has exactly one encoding.
		if enc := AppendRow(nil, &r); !bytes.Equal(enc, b) {
			t.Fatalf("decoded %x, encodes as %x", b, enc)
		}
		if m := mustMerge(t, b, b); !bytes.Equal(m, b) {
			t.Fatalf("Merge(v, v) = %x", m)
		}
		if _, err := ValueStats(b); err != nil {
			t.Fatal(err)
		}
		r.Resolve(Deletion{MarkedForDeleteAt: 0, LocalDeletionTime: 1}, 1_700_000_000)
	})
}

func FuzzDecodeHeader(f *testing.F) {
	seeds(f, KindHeader, func(v []byte) { f.Add(v) })
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		if err := DecodeHeader(b, &h); err != nil {
			return
		}
		if enc := AppendHeader(nil, &h); !bytes.Equal(enc, b) {
			t.Fatalf("decoded %x, encodes as %x", b, enc)
		}
		if m := mustMerge(t, b, b); !bytes.Equal(m, b) {
			t.Fatalf("Merge(v, v) = %x", m)
		}
		if _, err := ValueStats(b); err != nil {
			t.Fatal(err)
		}
		h.DeletionAt([]byte("b"))
	})
}

func FuzzMerge(f *testing.F) {
	var rows, headers [][]byte
	seeds(f, KindRow, func(v []byte) { rows = append(rows, v) })
	seeds(f, KindHeader, func(v []byte) { headers = append(headers, v) })
	for i := 1; i < len(rows); i++ {
		f.Add(rows[i-1], rows[i])
	}
	for i := 1; i < len(headers); i++ {
		f.Add(headers[i-1], headers[i])
	}
	f.Add(rows[0], headers[0])
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ab, err := Merge(nil, a, b)
		if err != nil {
			if _, err2 := Merge(nil, b, a); err2 == nil {
				t.Fatalf("Merge(a, b) fails (%v) but Merge(b, a) does not", err)
			}
			return
		}
		ba, err := Merge(nil, b, a)
		if err != nil || !bytes.Equal(ab, ba) {
			t.Fatalf("not commutative: %x vs %x (%v)", ab, ba, err)
		}
		if again := mustMerge(t, ab, a); !bytes.Equal(again, ab) {
			t.Fatalf("merging an input again: %x vs %x", again, ab)
		}
	})
}
