package model

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/encoding.golden")

const (
	t0 = 1_700_000_000_000_000 // a write timestamp, µs
	l0 = 1_700_000_000         // a local time, s
)

// examples are the values pinned by testdata/encoding.golden.
func examples() []struct {
	name string
	v    []byte
} {
	type ex = struct {
		name string
		v    []byte
	}
	return []ex{
		{"empty row", AppendRow(nil, &Row{})},
		{"insert", AppendRow(nil, &Row{
			Liveness: Liveness{Present: true, Timestamp: t0},
			Cells: []Cell{
				{Column: 1, Timestamp: t0, Value: []byte("alice")},
				{Column: 2, Timestamp: t0, Value: []byte{0, 0, 0, 42}},
				{Column: 5, Timestamp: t0, Value: []byte("x")},
			},
		})},
		{"insert with ttl", AppendRow(nil, &Row{
			Liveness: Liveness{Present: true, Timestamp: t0, TTL: 3600, Expires: l0 + 3600},
			Cells:    []Cell{{Column: 1, Timestamp: t0, TTL: 3600, LocalDeletionTime: l0 + 3600, Value: []byte("v")}},
		})},
		{"update with a column deleted", AppendRow(nil, &Row{
			Cells: []Cell{
				{Column: 1, Timestamp: t0 + 1, Value: []byte("b")},
				{Column: 3, Timestamp: t0 + 1, LocalDeletionTime: l0, Tombstone: true},
			},
		})},
		{"map overwrite", AppendRow(nil, &Row{
			ColumnDeletions: []ColumnDeletion{{Column: 4, Deletion: Deletion{MarkedForDeleteAt: t0 - 1, LocalDeletionTime: l0}}},
			Cells: []Cell{
				{Column: 4, Path: []byte("k1"), Timestamp: t0, Value: []byte("v1")},
				{Column: 4, Path: []byte("k2"), Timestamp: t0, Value: []byte("v2")},
			},
		})},
		{"row deletion", AppendRow(nil, &Row{Deletion: Deletion{MarkedForDeleteAt: t0, LocalDeletionTime: l0}})},
		{"empty header", AppendHeader(nil, &Header{})},
		{"partition deletion", AppendHeader(nil, &Header{Deletion: Deletion{MarkedForDeleteAt: t0, LocalDeletionTime: l0}})},
		{"range tombstones and static row", AppendHeader(nil, &Header{
			Static: Row{Cells: []Cell{{Column: 7, Timestamp: t0, Value: []byte("s")}}},
			RangeTombstones: []RangeTombstone{
				{Start: []byte("a"), End: []byte("c"), Deletion: Deletion{MarkedForDeleteAt: t0, LocalDeletionTime: l0}},
				{Start: []byte("m"), Deletion: Deletion{MarkedForDeleteAt: t0 + 5, LocalDeletionTime: l0 + 1}},
			},
		})},
	}
}

func TestEncodingGolden(t *testing.T) {
	var b strings.Builder
	for _, ex := range examples() {
		fmt.Fprintf(&b, "%s: %x\n", ex.name, ex.v)
	}
	path := filepath.Join("testdata", "encoding.golden")
	if *rewrite {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("encoding changed (run with -rewrite if intended):\ngot:\n%swant:\n%s", got, want)
	}
}

func TestEncodingIsCompact(t *testing.T) {
	for _, ex := range examples() {
		if ex.name == "insert" {
			// tag, flags, ts base (8), liveness delta, count, 3 cells of
			// flags+column+ts delta+len: 12, values 10.
			if len(ex.v) > 34 {
				t.Errorf("a 3-cell insert takes %d bytes: %x", len(ex.v), ex.v)
			}
		}
	}
}

func TestRowRoundTrip(t *testing.T) {
	g := newGen(10)
	var r, r2 Row
	for i := range iterations() {
		r = g.row()
		enc := AppendRow(nil, &r)
		if err := DecodeRow(enc, &r2); err != nil {
			t.Fatalf("DecodeRow(%x) of %+v: %v", enc, r, err)
		}
		if again := AppendRow(nil, &r2); !bytes.Equal(again, enc) {
			t.Fatalf("re-encoding changed the bytes:\n%x\n%x", enc, again)
		}
		// A row already in normal form keeps every field that counts.
		r.Normalize()
		normalizeFields(&r)
		normalizeFields(&r2)
		if fmt.Sprint(r) != fmt.Sprint(r2) {
			t.Fatalf("round trip:\n%+v\n%+v", r, r2)
		}
		if i%4 == 0 {
			checkPrefixesFail(t, enc, func(b []byte) error { return DecodeRow(b, &r2) })
		}
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	g := newGen(11)
	var h, h2 Header
	for i := range iterations() {
		h = g.header()
		enc := AppendHeader(nil, &h)
		if err := DecodeHeader(enc, &h2); err != nil {
			t.Fatalf("DecodeHeader(%x) of %+v: %v", enc, h, err)
		}
		if again := AppendHeader(nil, &h2); !bytes.Equal(again, enc) {
			t.Fatalf("re-encoding changed the bytes:\n%x\n%x", enc, again)
		}
		if i%4 == 0 {
			checkPrefixesFail(t, enc, func(b []byte) error { return DecodeHeader(b, &h2) })
		}
	}
}

// checkPrefixesFail checks that no strict prefix of an encoding decodes:
// every structure's extent is known, so truncation is always detected.
func checkPrefixesFail(t *testing.T, enc []byte, decode func([]byte) error) {
	t.Helper()
	for n := range len(enc) {
		if err := decode(enc[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix %x of %x: err = %v", enc[:n], enc, err)
		}
	}
	if err := decode(append(enc[:len(enc):len(enc)], 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%x with a trailing byte: err = %v", enc, err)
	}
}

func TestAppendDoesNotChangeInput(t *testing.T) {
	r := Row{
		Deletion: Deletion{MarkedForDeleteAt: 5, LocalDeletionTime: 1},
		Cells: []Cell{
			{Column: 2, Timestamp: 9, Value: []byte("b")},
			{Column: 1, Timestamp: 4, Value: []byte("shadowed")},
		},
	}
	before := fmt.Sprint(r)
	enc := AppendRow(nil, &r)
	if fmt.Sprint(r) != before {
		t.Fatalf("AppendRow changed its input: %+v", r)
	}
	var got Row
	if err := DecodeRow(enc, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Cells) != 1 || got.Cells[0].Column != 2 {
		t.Fatalf("decoded %+v", got)
	}
}

func TestDecodeReusesRow(t *testing.T) {
	enc := AppendRow(nil, &Row{Cells: []Cell{{Column: 1, Timestamp: 1, Value: []byte("v")}, {Column: 2, Timestamp: 1}}})
	r := Row{
		Liveness: Liveness{Present: true, Timestamp: 99},
		Deletion: Deletion{MarkedForDeleteAt: 1, LocalDeletionTime: 1},
		Cells:    make([]Cell, 0, 8),
	}
	if err := DecodeRow(enc, &r); err != nil {
		t.Fatal(err)
	}
	if r.Liveness.Present || !r.Deletion.IsLive() || len(r.Cells) != 2 || cap(r.Cells) != 8 {
		t.Fatalf("decoded into a used row: %+v (cap %d)", r, cap(r.Cells))
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = DecodeRow(enc, &r) }); allocs != 0 {
		t.Errorf("DecodeRow allocates %v times into a reused row", allocs)
	}
}

func TestDecodeRejects(t *testing.T) {
	hx := func(s string) []byte {
		b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			panic(err)
		}
		return b
	}
	// Row: tag 21; header: tag 11.
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "empty value"},
		{"unknown tag", hx("31 00"), "unknown tag"},
		{"future version", hx("22 00"), "unsupported format version"},
		{"unknown row flag", hx("21 40"), "bad row flags"},
		{"expiring without liveness", hx("21 02"), "bad row flags"},
		{"truncated base", hx("21 01 80"), "truncated varint"},
		{"non-minimal varint", hx("21 01 8000 00"), "non-minimal varint"},
		{"varint overflow", hx("21 01 ffffffffffffffffff7f 00"), "varint overflows"},
		{"base not minimal", hx("21 01 00 01"), "base is not the minimum"},
		{"deletion without local base", hx("21 04 00 00 00"), "time without a base"},
		{"unused local base", hx("21 21 00 00 00"), "unused local time base"},
		{"live deletion", hx("21 24 00 00 00 00"), "encoded deletion is live"},
		{"zero ttl", hx("21 23 00 00 00 00 00"), "bad ttl"},
		{"ttl too large", hx("21 23 00 00 00 8080808008 00"), "bad ttl"},
		{"timestamp overflows", hx("21 01 fcffffffffffffffff01 02"), "time overflows"},
		{"zero cell count", hx("21 10 00 00"), "bad count"},
		{"huge cell count", hx("21 10 00 ffffffff0f 08"), "bad count"},
		{"first cell without column", hx("21 10 00 01 00 00 00"), "first cell without a column"},
		{"cells out of order", hx("21 10 00 02 0c 01 0161 00 00 04 0161 00 00"), "cells out of order"},
		{"duplicate cells", hx("21 10 00 02 08 01 00 00 00 00 00"), "cells out of order"},
		{"column id overflow", hx("21 10 00 01 08 8080808010 00 00"), "bad column id"},
		{"tombstone and expiring", hx("21 30 00 00 01 0b 01 00 00"), "bad cell flags"},
		{"empty path", hx("21 10 00 01 0c 01 00 00 00"), "empty cell path"},
		{"value too long", hx("21 10 00 01 08 01 00 05 6162"), "length exceeds value"},
		{"trailing bytes", hx("21 00 00"), "trailing bytes"},
		{"shadowed cell", hx("21 34 00 02 00 00 01 08 01 00 00"), "cell shadowed by a deletion"},
		{"shadowed liveness", hx("21 25 00 02 00 00 00"), "liveness shadowed"},
		{"unknown header flag", hx("11 08"), "bad header flags"},
		{"empty static row", hx("11 04 00"), "empty static row"},
		{"empty range tombstone end", hx("11 02 00 02 01 00 01 00 00"), "empty range tombstone end"},
		{"empty range", hx("11 02 00 02 01 0162 0262 00 00"), "empty range tombstone"},
		{"overlapping ranges", hx("11 02 00 02 02 0161 0263 00 00 0162 0264 00 01"), "range tombstones overlap"},
		{"uncoalesced ranges", hx("11 02 00 02 02 0161 0262 00 00 0162 0263 00 00"), "not coalesced"},
		{"range after unbounded", hx("11 02 00 02 02 0161 00 00 00 0162 0263 00 01"), "range tombstones overlap"},
		{"shadowed range", hx("11 03 00 02 01 01 01 0161 0262 00 00"), "range tombstone shadowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if len(tc.b) > 0 && tc.b[0] == tagHeader {
				var h Header
				err = DecodeHeader(tc.b, &h)
			} else {
				var r Row
				err = DecodeRow(tc.b, &r)
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestExtremeTimes(t *testing.T) {
	r := Row{
		Liveness: Liveness{Present: true, Timestamp: math.MaxInt64},
		Cells: []Cell{
			{Column: 0, Timestamp: math.MinInt64, TTL: math.MaxInt32, LocalDeletionTime: math.MaxInt64, Value: []byte("a")},
			{Column: math.MaxUint32, Timestamp: math.MaxInt64, LocalDeletionTime: math.MinInt64, Tombstone: true},
		},
	}
	enc := AppendRow(nil, &r)
	var got Row
	if err := DecodeRow(enc, &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(r) {
		t.Fatalf("got %+v, want %+v", got, r)
	}
}

// TestExtremeColumnIDs round-trips column deletions of the first and last
// column IDs, as TestExtremeTimes does cells.
func TestExtremeColumnIDs(t *testing.T) {
	r := Row{ColumnDeletions: []ColumnDeletion{
		{Column: 0, Deletion: Deletion{MarkedForDeleteAt: 1, LocalDeletionTime: 1}},
		{Column: math.MaxUint32, Deletion: Deletion{MarkedForDeleteAt: 2, LocalDeletionTime: 2}},
	}}
	var got Row
	if err := DecodeRow(AppendRow(nil, &r), &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(r) {
		t.Fatalf("got %+v, want %+v", got, r)
	}
}

func TestDecodeWrongKind(t *testing.T) {
	var r Row
	if err := DecodeRow(AppendHeader(nil, &Header{}), &r); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "header where a row was expected") {
		t.Errorf("DecodeRow of a header: %v", err)
	}
	var h Header
	if err := DecodeHeader(AppendRow(nil, &Row{}), &h); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "row where a header was expected") {
		t.Errorf("DecodeHeader of a row: %v", err)
	}
}
