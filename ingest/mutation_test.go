package ingest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sedimentdb/sediment/internal/storage"
)

func TestRecordRoundTrip(t *testing.T) {
	ms := []*storage.Mutation{
		rowMutation(1, "a", 1, 10, "x"),
		{Table: 1<<32 - 1, Entries: []storage.Entry{
			{Key: rowKey("b", 1), Value: rowValue(1, "y")},
			{Key: rowKey("b", 2), Value: rowValue(2, string(make([]byte, 300)))},
		}},
	}
	rec := []byte{recordMutations}
	for _, m := range ms {
		rec = appendMutation(rec, m)
	}
	var got []*storage.Mutation
	err := decodeRecord(rec, func(m *storage.Mutation) error {
		c := &storage.Mutation{Table: m.Table, Entries: append([]storage.Entry(nil), m.Entries...)}
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ms) {
		t.Fatalf("decoded %+v, want %+v", got, ms)
	}
}

func TestRecordRejects(t *testing.T) {
	good := appendMutation([]byte{recordMutations}, rowMutation(3, "a", 1, 1, "v"))
	for name, rec := range map[string][]byte{
		"empty":         {},
		"version only":  {recordMutations},
		"bad type":      append([]byte{9}, good[1:]...),
		"truncation":    appendTruncate(nil, 3),
		"truncated":     good[:len(good)-1],
		"trailing byte": append(append([]byte(nil), good...), 0),
		"zero entries":  {recordMutations, 3, 0},
		"huge count":    {recordMutations, 3, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge table":    {recordMutations, 0xff, 0xff, 0xff, 0xff, 0x1f, 1, 1, 'k', 1, 'v'},
		"empty key":     {recordMutations, 3, 1, 0, 1, 'v'},
		"empty value":   {recordMutations, 3, 1, 1, 'k', 0},
	} {
		if err := decodeRecord(rec, func(*storage.Mutation) error { return nil }); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
}

func TestValidate(t *testing.T) {
	header := rowMutation(1, "a", 1, 1, "v")
	header.Entries[0].Value = []byte{0x11, 0}
	bad := []*storage.Mutation{
		{Table: 1},
		{Table: 1, Entries: []storage.Entry{{Key: []byte("nokey"), Value: rowValue(1, "v")}}},
		{Table: 1, Entries: []storage.Entry{{Key: rowKey("a", 1), Value: []byte{0xff}}}},
		{Table: 1, Entries: []storage.Entry{{Key: rowKey("a", 1), Value: rowValue(1, "v")[:3]}}},
		header, // header value under a row key
	}
	for i, m := range bad {
		if err := validate(m); !errors.Is(err, storage.ErrInvalidMutation) {
			t.Errorf("mutation %d: got %v, want ErrInvalidMutation", i, err)
		}
	}
	if err := validate(rowMutation(1, "a", 1, 1, "v")); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendMutation([]byte{recordMutations}, rowMutation(3, "a", 1, 1, "v")))
	f.Add([]byte{recordMutations, 3, 1, 1, 'k', 1, 'v', 4, 2, 1, 'a', 1, 'b', 1, 'c', 2, 'd', 'e'})
	f.Add([]byte{recordMutations, 3, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{})
	f.Add(appendTruncate(nil, 1<<32-1))
	f.Fuzz(func(t *testing.T, rec []byte) {
		if table, err := decodeTruncate(rec); err == nil {
			if again := appendTruncate(nil, table); len(again) > len(rec) {
				t.Fatalf("truncation %x re-encodes to %x", rec, again)
			}
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not match ErrCorrupt", err)
		}
		var again []byte
		err := decodeRecord(rec, func(m *storage.Mutation) error {
			if len(m.Entries) == 0 {
				t.Fatal("mutation without entries")
			}
			if again == nil {
				again = []byte{recordMutations}
			}
			again = appendMutation(again, m)
			return nil
		})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
			return
		}
		// A record that decodes re-encodes to itself, unless it used
		// non-minimal varints, which decode to the same mutations.
		if len(again) > len(rec) {
			t.Fatalf("re-encoding grew from %d to %d bytes", len(rec), len(again))
		}
	})
}
