package exec

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
)

func TestDescribePagingState(t *testing.T) {
	v := uuid.MustParse("5d8b2c1e-0f4a-4c3b-9a71-2b6e0d9f1a33")
	for _, next := range []int{1, 2, 127, 128, 1 << 20} {
		got, err := decodeDescribePaging(encodeDescribePaging(v, next), v)
		if err != nil || got != next {
			t.Errorf("next %d: decoded %d, %v", next, got, err)
		}
	}
	if got, err := decodeDescribePaging(nil, v); got != 0 || err != nil {
		t.Errorf("no state: %d, %v", got, err)
	}
	other := uuid.MustParse("00000000-0000-4000-8000-000000000001")
	if _, err := decodeDescribePaging(encodeDescribePaging(other, 3), v); err == nil || err.Error() != errSchemaChangedWhilePaging {
		t.Errorf("another schema version: %v", err)
	}
	good := encodeDescribePaging(v, 300)
	for name, b := range map[string][]byte{
		"short":         good[:10],
		"magic":         append([]byte{1}, good[1:]...),
		"no offset":     good[:17],
		"cut varint":    good[:18],
		"trailing byte": append(bytes.Clone(good), 0),
		"huge offset":   append(bytes.Clone(good[:17]), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	} {
		if _, err := decodeDescribePaging(b, v); err == nil || err.Error() != "Invalid paging state." {
			t.Errorf("%s: got %v, want Invalid paging state.", name, err)
		}
	}
}

// FuzzDescribePagingState: a client's paging state decodes to an offset
// that re-encodes to the same bytes, or is refused; never a panic.
func FuzzDescribePagingState(f *testing.F) {
	v := uuid.MustParse("5d8b2c1e-0f4a-4c3b-9a71-2b6e0d9f1a33")
	f.Add(encodeDescribePaging(v, 7))
	f.Add(encodeDescribePaging(v, 1<<31))
	f.Add([]byte{describePagingMagic})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		next, err := decodeDescribePaging(b, v)
		if err != nil || len(b) == 0 {
			return
		}
		if next < 0 || next > 1<<31 {
			t.Fatalf("offset %d out of range", next)
		}
		if !bytes.Equal(encodeDescribePaging(v, next), b) {
			t.Fatalf("%x decodes to %d, which encodes differently", b, next)
		}
	})
}
