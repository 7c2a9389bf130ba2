package values

import (
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

func TestText(t *testing.T) {
	tests := []struct {
		typ  *cqltype.Type
		v    []byte
		want string
	}{
		{cqltype.TextType, []byte("it's"), "it's"},
		{cqltype.TextType, nil, "null"},
		{cqltype.IntType, []byte{}, ""},
		{cqltype.IntType, []byte{1}, "0x01"}, // malformed
		{cqltype.IntType, unhex("ffffff85"), "-123"},
		{cqltype.BooleanType, []byte{2}, "true"},
		{cqltype.BlobType, unhex("00ff"), "0x00ff"},
		{cqltype.DoubleType, unhex("7ff8000000000000"), "NaN"},
		{cqltype.DoubleType, unhex("fff0000000000000"), "-Infinity"},
		{cqltype.DoubleType, unhex("4341c37937e08000"), "1.0E16"},
		{cqltype.DoubleType, unhex("3f50624dd2f1a9fc"), "0.001"},
		{cqltype.DoubleType, unhex("3f40624dd2f1a9fc"), "5.0E-4"},
		{cqltype.FloatType, unhex("3dcccccd"), "0.1"},
		{cqltype.FloatType, unhex("4b189680"), "1.0E7"},
		{cqltype.FloatType, unhex("4b18967f"), "9999999.0"},
		{cqltype.DecimalType, unhex("00000002 0096"), "1.50"},
		{cqltype.DecimalType, unhex("fffffffd 0c"), "1.2E+4"},
		{cqltype.DecimalType, unhex("00000008 0c"), "1.2E-7"},
		{cqltype.DecimalType, unhex("00000007 f4"), "-0.0000012"},
		{cqltype.DecimalType, unhex("00000000"), "0"},
		{cqltype.VarintType, unhex("ff7f"), "-129"},
		{cqltype.TimestampType, unhex("0000018cc820db2e"), "2024-01-02T03:04:05.678Z"},
		{cqltype.DateType, unhex("80004d46"), "2024-02-29"},
		{cqltype.DateType, unhex("00000000"), "-5877641-06-23"},
		{cqltype.TimeType, unhex("00000362f1e51300"), "01:02:03.500000000"},
		{cqltype.TimeType, unhex("ffffffffffffffff"), "-1"},
		{cqltype.InetType, unhex("20010db8000000000000000000000001"), "2001:db8:0:0:0:0:0:1"},
		{cqltype.UUIDType, unhex("550e8400e29b41d4a716446655440000"), "550e8400-e29b-41d4-a716-446655440000"},
		{cqltype.DurationType, unhex("000000"), "0s"},
		{cqltype.DurationType, unhex("1c32fc2168cdf9d664"), "1y2mo25d5h6m7s8ms9us10ns"},
		{cqltype.DurationType, unhex("000300"), "-2d"},
		{cqltype.MustParse("list<text>"), elems(true, []byte("a"), []byte("it's")), "['a', 'it''s']"},
		{cqltype.MustParse("set<int>"), elems(true, i32(1), i32(2)), "{1, 2}"},
		{cqltype.MustParse("map<text, frozen<list<date>>>"),
			append([]byte{0, 0, 0, 1}, elems(false, []byte("k"), elems(true, unhex("80000000")))...),
			"{'k': ['1970-01-01']}"},
		{cqltype.MustParse("tuple<int, text, blob>"), elems(false, i32(1), nil, []byte{}), "(1, null, 0x)"},
		{pointType, elems(false, i32(1), nil, []byte("p")), `{x: 1, y: null, "Label": 'p'}`},
		{pointType, elems(false, i32(1)), `{x: 1, y: null, "Label": null}`},
	}
	for _, tc := range tests {
		if got := Text(tc.typ, tc.v); got != tc.want {
			t.Errorf("Text(%s, %x) = %q, want %q", tc.typ, tc.v, got, tc.want)
		}
	}
}
