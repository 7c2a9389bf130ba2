package cqltype_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/cqltype/cqltypetest"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		v    []byte
		want string // substring of the error, "" for valid
	}{
		{"int", be32(1), ""},
		{"int", nil, ""},
		{"int", []byte{1, 2, 3}, "Expected 4 or 0 byte int (3)"},
		{"bigint", be32(1), "Expected 8 or 0 byte long (4)"},
		{"counter", be64(1), ""},
		{"smallint", nil, "Expected 2 bytes for a smallint (0)"},
		{"tinyint", []byte{1, 2}, "Expected 1 byte for a tinyint (2)"},
		{"date", nil, "Expected 4 byte long for date (0)"},
		{"time", be32(0), "Expected 8 byte long for time (4)"},
		{"timestamp", []byte{1}, "Expected 8 or 0 byte long for date (1)"},
		{"boolean", []byte{1, 0}, "Expected 1 or 0 byte value (2)"},
		{"float", be64(0), "Expected 4 or 0 byte value for a float (8)"},
		{"double", be32(0), "Expected 8 or 0 byte value for a double (4)"},
		{"decimal", []byte{0, 0, 0}, "Expected 0 or at least 4 bytes (3)"},
		{"decimal", be32(2), ""},
		{"varint", []byte{0, 0, 0xff}, ""},
		{"ascii", []byte("abc\x7f"), ""},
		{"ascii", []byte("ab\x80"), "Invalid byte for ascii: -128"},
		{"text", []byte("héllo"), ""},
		{"text", []byte{0xc3}, "String didn't validate."},
		{"text", []byte{0xed, 0xa0, 0x80}, "String didn't validate."}, // surrogate
		{"uuid", make([]byte, 15), "UUID should be 16 or 0 bytes (15)"},
		{"timeuuid", hx("00000000000040000000000000000000"), "Invalid version for TimeUUID type."},
		{"timeuuid", hx("00000000000010000000000000000000"), ""},
		{"inet", []byte{127, 0, 0, 1}, ""},
		{"inet", []byte{127, 0, 0}, "Expected 4 or 16 byte inetaddress; got 7f0000"},
		{"duration", []byte{2, 4, 6}, ""},
		{"duration", []byte{1, 3, 5}, ""},
		{"duration", []byte{2, 3, 6}, "must be all of the same sign (1, -2, 3)"},
		{"duration", []byte{2, 4}, "Expected at least 3 bytes for a duration (2)"},
		{"duration", []byte{2, 4, 0xc0}, "Not enough bytes to read a duration"},
		{"duration", []byte{2, 4, 6, 8}, "extraneous bytes"},
		{"duration", []byte{0xf8, 2, 0, 0, 0, 0, 2, 4}, "months must be a 32 bits integer"},
		{"frozen<list<int>>", seqOf(be32(1), be32(2)), ""},
		{"frozen<list<int>>", nil, "Not enough bytes to read a list"},
		{"frozen<list<int>>", be32(math.MaxUint32), "Not enough bytes to read a list"},
		{"frozen<list<int>>", seqOf(be32(1))[:6], "Not enough bytes to read a list"},
		{"frozen<list<int>>", append(seqOf(be32(1)), 0), "Unexpected extraneous bytes after list value"},
		{"frozen<list<int>>", seqOf([]byte{1}), "Expected 4 or 0 byte int (1)"},
		{"frozen<set<int>>", append(be32(1), be32(math.MaxUint32)...), "null is not supported inside collections"},
		{"map<int, text>", mapOf(be32(1), []byte("a")), ""},
		{"map<int, text>", mapOf(be32(1), []byte{0xff}), "String didn't validate."},
		{"map<int, text>", seqOf(be32(1)), "Not enough bytes to read a map"},
		{"tuple<int, text>", tup(be32(1), nil), ""},
		{"tuple<int, text>", tup(be32(1)), ""},
		{"tuple<int, text>", nil, ""},
		{"tuple<int, text>", tup(be32(1), []byte("a"), nil), "Invalid remaining data after end of tuple value"},
		{"tuple<int, text>", tup(be32(1))[:6], "Not enough bytes to read 0th component"},
		{"tuple<int, text>", []byte{0, 0}, "Not enough bytes to read size of 0th component"},
		{"tuple<int, text>", tup([]byte{1}), "Expected 4 or 0 byte int (1)"},
	} {
		typ := cqltype.MustParse(tc.typ)
		err := cqltype.Validate(typ, tc.v)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Validate(%s, %x): %v", tc.typ, tc.v, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Validate(%s, %x) = %v, want %q", tc.typ, tc.v, err, tc.want)
		case err != nil && !errors.Is(err, cqltype.ErrInvalid):
			t.Errorf("Validate(%s, %x) = %v, not ErrInvalid", tc.typ, tc.v, err)
		}
	}
}

func TestValidateUDTMessages(t *testing.T) {
	u := cqltype.Freeze(cqltype.UDTOf("ks", "u", []string{"a", "b"}, []*cqltype.Type{cqltype.IntType, cqltype.TextType}))
	err := cqltype.Validate(u, append(tup(be32(1)), 0, 0))
	if err == nil || !strings.Contains(err.Error(), "Not enough bytes to read size of 1th field b") {
		t.Errorf("got %v", err)
	}
	err = cqltype.Validate(u, tup(be32(1), nil, nil))
	if err == nil || !strings.Contains(err.Error(), "Invalid remaining data after end of UDT value") {
		t.Errorf("got %v", err)
	}
}

func TestDecimalRoundTrip(t *testing.T) {
	forSeeds(t, 4, func(t *testing.T, r *rand.Rand) {
		for range 5000 {
			v := cqltypetest.Value(r, cqltype.DecimalType)
			if len(v) == 0 {
				continue
			}
			d, err := cqltype.SplitDecimal(v)
			if err != nil {
				t.Fatal(err)
			}
			w, err := cqltype.JoinDecimal(nil, d)
			if err != nil {
				t.Fatalf("JoinDecimal(%+v) of %x: %v", d, v, err)
			}
			if cqltype.Compare(cqltype.DecimalType, v, w) != 0 {
				t.Fatalf("%x joined back as %x", v, w)
			}
			if d2, _ := cqltype.SplitDecimal(w); d2.Compare(d) != 0 || string(d2.Digits) != string(d.Digits) || d2.Exp != d.Exp {
				t.Fatalf("%x: parts %+v, again %+v", v, d, d2)
			}
		}
	})
}

func TestJoinDecimalRejects(t *testing.T) {
	for _, d := range []cqltype.DecimalParts{
		{Exp: 1, Digits: []byte("10")},
		{Exp: 1, Digits: []byte("01")},
		{Exp: 1, Digits: []byte("1a")},
		{Exp: -math.MaxInt32 - 10, Digits: []byte("1")},
		{Exp: math.MaxInt64, Digits: []byte("1")},
	} {
		if b, err := cqltype.JoinDecimal(nil, d); err == nil {
			t.Errorf("JoinDecimal(%+v) = %x, want error", d, b)
		}
	}
	// The largest exponent an int32 scale allows pads zeros.
	b, err := cqltype.JoinDecimal(nil, cqltype.DecimalParts{Exp: math.MaxInt32 + 3, Digits: []byte("1")})
	if err != nil || cqltype.Compare(cqltype.DecimalType, b, dec(math.MinInt32, 10)) != 0 {
		t.Errorf("JoinDecimal(1e2147483650) = %x, %v", b, err)
	}
}

func FuzzValidate(f *testing.F) {
	f.Add("frozen<map<int, text>>", mapOf(be32(1), []byte("a")))
	f.Add("tuple<int, frozen<list<varint>>>", tup(be32(1), seqOf([]byte{0xff})))
	f.Add("duration", []byte{2, 4, 6})
	f.Add("decimal", dec(3, -7))
	f.Add("text", []byte("héllo"))
	f.Add("frozen<set<frozen<map<int, text>>>>", seqOf(mapOf(be32(2), []byte("x"), be32(1), []byte("a")), mapOf()))
	f.Fuzz(func(t *testing.T, typStr string, v []byte) {
		typ, err := cqltype.Parse(typStr, nil)
		if err != nil {
			return
		}
		err = cqltype.Validate(typ, v)
		if err != nil && !errors.Is(err, cqltype.ErrInvalid) {
			t.Fatalf("Validate(%s, %x) = %v, not ErrInvalid", typ, v, err)
		}
		if err == nil {
			n, err := cqltype.Normalize(typ, v)
			if err != nil {
				t.Fatalf("Normalize(%s, %x) of a valid value: %v", typ, v, err)
			}
			if err := cqltype.Validate(typ, n); err != nil {
				t.Fatalf("Normalize(%s, %x) = %x, invalid: %v", typ, v, n, err)
			}
		}
		if typ.Kind == cqltype.Decimal {
			if d, err := cqltype.SplitDecimal(v); err == nil {
				if _, err := cqltype.JoinDecimal(nil, d); err != nil {
					t.Fatalf("decimal %x splits to %+v but does not join: %v", v, d, err)
				}
			}
		}
	})
}
