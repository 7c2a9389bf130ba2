package cache

import (
	"bytes"
	"errors"
	"testing"
)

func TestEntryRoundTrip(t *testing.T) {
	for _, k := range []Key{
		{},
		{Object: "tables/ks/t/0001.sst", Offset: 1 << 40, Length: 32 << 10},
		{Object: "x", Offset: -1, Length: 3},
	} {
		v := valueOf(Key{Object: k.Object, Length: k.Length & 0xffff})
		b := encodeEntry(k, v)
		if int64(len(b)) != entryLen(k, len(v)) {
			t.Fatalf("%v: encoded %d bytes, entryLen %d", k, len(b), entryLen(k, len(v)))
		}
		gotK, gotV, err := decodeEntry(b)
		if err != nil || gotK != k || !bytes.Equal(gotV, v) {
			t.Fatalf("%v: decoded %v, %d bytes, %v", k, gotK, len(gotV), err)
		}
		// Single-bit flips (all of them in small entries) and truncations
		// are caught: CRC32C detects every single-bit error.
		step := 1
		if len(b) > 1024 {
			step = 61
		}
		for i := 0; i < len(b)*8; i += step {
			b[i/8] ^= 1 << (i % 8)
			if _, _, err := decodeEntry(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v: bit %d flipped, decode gave %v", k, i, err)
			}
			b[i/8] ^= 1 << (i % 8)
		}
		for n := 0; n < len(b); n += step {
			if _, _, err := decodeEntry(b[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v: truncated to %d, decode gave %v", k, n, err)
			}
		}
	}
}

func TestDigestName(t *testing.T) {
	d := digestOf(Key{Object: "o", Offset: 1, Length: 2})
	if d == digestOf(Key{Object: "o", Offset: 2, Length: 1}) {
		t.Fatal("offset and length do not both name the file")
	}
	got, ok := parseDigest(d.name())
	if !ok || got != d {
		t.Fatalf("parseDigest(%q) = %x, %v", d.name(), got, ok)
	}
	for _, bad := range []string{"", "00", d.name() + "0", d.name()[:31] + "g", d.name()[:31] + "A", d.name() + tempSuffix} {
		if _, ok := parseDigest(bad); ok {
			t.Errorf("parseDigest(%q) accepted", bad)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(Key{Object: "obj", Offset: 4096, Length: 5}, []byte("hello")))
	f.Add(encodeEntry(Key{}, nil))
	f.Add([]byte("sdc1"))
	f.Add(make([]byte, minEntryLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, v, err := decodeEntry(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		// Whatever decodes is exactly what encoding the same entry writes.
		if again := encodeEntry(k, v); !bytes.Equal(again, b) {
			t.Fatalf("decoded %v, %q does not re-encode to the input", k, v)
		}
	})
}

func FuzzParseDigest(f *testing.F) {
	f.Add(digestOf(Key{Object: "o"}).name())
	f.Add("not a digest")
	f.Fuzz(func(t *testing.T, name string) {
		d, ok := parseDigest(name)
		if ok && d.name() != name {
			t.Fatalf("parseDigest(%q) = %s", name, d.name())
		}
	})
}
