package values

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// TestJSON drives FromJSON and ToJSON with one table: in is read with
// FromJSON, and ToJSON of the result must be out (in itself when out is
// empty); ToJSON's output must read back to the same value.
func TestJSON(t *testing.T) {
	tests := []struct {
		typ     *cqltype.Type
		in, out string
	}{
		{cqltype.AsciiType, `"abc"`, ""},
		{cqltype.TextType, `"h\u00e9 \"q\" \\ \n"`, `"hé \"q\" \\ \n"`},
		{cqltype.TextType, `""`, ""},
		{cqltype.TextType, `"<a&b> \u0000 \u001f \b\f\r\t \u2028 \/"`, "\"<a&b> \\u0000 \\u001F \\b\\f\\r\\t \u2028 /\""},
		{cqltype.TextType, `null`, ""},
		{cqltype.BooleanType, `true`, ""},
		{cqltype.BooleanType, `"False"`, `false`},
		{cqltype.TinyintType, `-128`, ""},
		{cqltype.SmallintType, `"300"`, `300`},
		{cqltype.IntType, `-2147483648`, ""},
		{cqltype.IntType, `""`, ""},
		{cqltype.BigintType, `9223372036854775807`, ""},
		{cqltype.CounterType, `-5`, ""},
		{cqltype.VarintType, `123456789012345678901234567890`, ""},
		{cqltype.VarintType, `"-7"`, `-7`},
		{cqltype.DecimalType, `1.50`, ""},
		{cqltype.DecimalType, `"1e3"`, `1E+3`},
		{cqltype.DecimalType, `0.0000001`, `1E-7`},
		{cqltype.DecimalType, `-0.000001`, ""},
		{cqltype.FloatType, `1.5`, `1.5`},
		{cqltype.FloatType, `100`, `100.0`},
		{cqltype.DoubleType, `0.1`, ""},
		{cqltype.DoubleType, `1e21`, `1.0E21`},
		{cqltype.DoubleType, `0.0001`, `1.0E-4`},
		{cqltype.DoubleType, `12345678.5`, `1.23456785E7`},
		{cqltype.DoubleType, `-0.0`, ""},
		{cqltype.DoubleType, `"NaN"`, `null`},
		{cqltype.BlobType, `"0xcafe"`, ""},
		{cqltype.BlobType, `"0x"`, ""},
		{cqltype.UUIDType, `"550e8400-e29b-41d4-a716-446655440000"`, ""},
		{cqltype.TimeuuidType, `"d2177dd0-eaa2-11de-a572-001b779c76e3"`, ""},
		{cqltype.InetType, `"10.0.0.1"`, ""},
		{cqltype.InetType, `"2001:db8::1"`, `"2001:db8:0:0:0:0:0:1"`},
		{cqltype.DateType, `"2024-02-29"`, ""},
		{cqltype.DateType, `"-0044-03-15"`, ""},
		{cqltype.TimeType, `"01:02:03.000000004"`, ""},
		{cqltype.TimestampType, `"2024-01-02 03:04:05.678Z"`, ""},
		{cqltype.TimestampType, `"2024-01-02T04:04:05.678+01:00"`, `"2024-01-02 03:04:05.678Z"`},
		{cqltype.TimestampType, `0`, `"1970-01-01 00:00:00.000Z"`},
		{cqltype.TimestampType, `123123123123`, `"1973-11-26 00:52:03.123Z"`},
		{cqltype.DecimalType, `""`, ""},
		{cqltype.SmallintType, `"-5"`, `-5`},
		{cqltype.TimestampType, `"-1"`, `"1969-12-31 23:59:59.999Z"`},
		{cqltype.DurationType, `"1y2mo3d4h5m6s7ms8us9ns"`, ""},
		{cqltype.DurationType, `"-P2W"`, `"-14d"`},
		{cqltype.DurationType, `"0s"`, ""},
		{cqltype.MustParse("list<int>"), `[3, 1, 3]`, ""},
		{cqltype.MustParse("list<int>"), `"[1,2]"`, `[1, 2]`},
		{cqltype.MustParse("set<text>"), `["b", "a", "b"]`, `["a", "b"]`},
		{cqltype.MustParse("map<text, int>"), `{"b": 2, "a": 1}`, `{"a": 1, "b": 2}`},
		{cqltype.MustParse("map<int, boolean>"), `{"2": true, "1": false}`, `{"1": false, "2": true}`},
		{cqltype.MustParse("map<int, int>"), `{"1": 1, "01": 2}`, `{"1": 2}`},
		{cqltype.MustParse("map<timestamp, blob>"), `{"1970-01-01 00:00:00.000Z": "0x01"}`, ""},
		{cqltype.MustParse("frozen<map<frozen<list<int>>, frozen<set<int>>>>"), `{"[2, 1]": [3, 3]}`, `{"[2, 1]": [3]}`},
		{cqltype.MustParse("tuple<int, text, frozen<list<double>>>"), `[1, "a", [1.5]]`, ""},
		{cqltype.MustParse("tuple<int, text>"), `[null, null]`, ""},
		{pointType, `{"x": 1, "y": 2, "\"Label\"": "p"}`, ""},
		{pointType, `{"X": 1}`, `{"x": 1, "y": null, "\"Label\"": null}`},
		{cqltype.ListOf(pointType, false), `[{"y": 2}]`, `[{"x": null, "y": 2, "\"Label\"": null}]`},
		{cqltype.MapOf(cqltype.TextType, cqltype.TupleOf(cqltype.IntType, pointType), false),
			`{"k": [1, {"x": 5}]}`, `{"k": [1, {"x": 5, "y": null, "\"Label\"": null}]}`},
	}
	for _, tc := range tests {
		name := tc.typ.String() + " " + tc.in
		v, err := FromJSON(tc.typ, []byte(tc.in))
		if err != nil {
			t.Errorf("%s: FromJSON: %v", name, err)
			continue
		}
		if v != nil {
			if err := cqltype.Validate(tc.typ, v); err != nil {
				t.Errorf("%s: FromJSON made an invalid value %x: %v", name, v, err)
				continue
			}
		}
		out, err := ToJSON(tc.typ, v)
		if err != nil {
			t.Errorf("%s: ToJSON: %v", name, err)
			continue
		}
		want := tc.out
		if want == "" {
			want = tc.in
		}
		if string(out) != want {
			t.Errorf("%s: ToJSON = %s, want %s", name, out, want)
		}
		if !json.Valid(out) {
			t.Errorf("%s: ToJSON wrote invalid JSON %s", name, out)
		}
		back, err := FromJSON(tc.typ, out)
		if err != nil {
			t.Errorf("%s: FromJSON(ToJSON) %s: %v", name, out, err)
			continue
		}
		if want != "null" && !bytes.Equal(back, v) && cqltype.Compare(tc.typ, back, v) != 0 {
			t.Errorf("%s: round trip gave %x, want %x", name, back, v)
		}
	}
}

func TestFromJSONErrors(t *testing.T) {
	tests := []struct {
		typ     *cqltype.Type
		in, msg string
	}{
		{cqltype.TextType, `1`, "Expected a UTF-8 string, but got a Integer: 1"},
		{cqltype.AsciiType, `"é"`, "Invalid ASCII character in string literal: java.nio.charset.UnmappableCharacterException: Input length = 1"},
		{cqltype.IntType, `1.5`, "Expected an int value, but got a Double: 1.5"},
		{cqltype.IntType, `3000000000`, "Expected an int value, but got a Long: 3000000000"},
		{cqltype.IntType, `"3000000000"`, "Unable to make int from '3000000000'"},
		{cqltype.BigintType, `9223372036854775808`, "Expected a bigint value, but got a BigInteger: 9223372036854775808"},
		{cqltype.SmallintType, `123.456`, "Unable to make short from '123.456'"},
		{cqltype.SmallintType, `true`, "Expected a short value, but got a Boolean: true"},
		{cqltype.TinyintType, `128`, "Unable to make byte from '128'"},
		{cqltype.TinyintType, `false`, "Expected a byte value, but got a Boolean: false"},
		{cqltype.VarintType, `123123.123`, "Value '123123.123' is not a valid representation of a varint value"},
		{cqltype.VarintType, `""`, "Value '' is not a valid representation of a varint value"},
		{cqltype.VarintType, `true`, "Value 'true' is not a valid representation of a varint value"},
		{cqltype.DecimalType, `"xyzz"`, "Value 'xyzz' is not a valid representation of a decimal value"},
		{cqltype.DecimalType, `true`, "Value 'true' is not a valid representation of a decimal value"},
		{cqltype.DoubleType, `true`, "Expected a double value, but got a Boolean: true"},
		{cqltype.FloatType, `"xyzz"`, "Unable to make float from 'xyzz'"},
		{cqltype.DateType, `123`, "Expected a string representation of a date value, but got a Integer: 123"},
		{cqltype.TimeType, `123456`, "Expected a string representation of a time value, but got a Integer: 123456"},
		{cqltype.TimeuuidType, `123`, "Expected a string representation of a timeuuid, but got a Integer: 123"},
		{cqltype.TimeuuidType, `"00000000-0000-0000-0000-000000000000"`, "TimeUUID supports only version 1 UUIDs"},
		{cqltype.UUIDType, `123`, "Expected a string representation of a uuid, but got a Integer: 123"},
		{cqltype.MustParse("tuple<int, text>"), `[1]`, "Tuple is missing items (expected 2, got 1)"},
		{cqltype.IntType, `true`, "Expected an int value, but got a Boolean: true"},
		{cqltype.BigintType, `[1]`, "Expected a bigint value, but got a ArrayList: [1]"},
		{cqltype.BooleanType, `"yes"`, "Unable to make boolean from 'yes'"},
		{cqltype.BlobType, `"cafe"`, "Value 'cafe' is not a valid blob representation: String representation of blob is missing 0x prefix: cafe"},
		{cqltype.BlobType, `1`, "Value '1' is not a valid blob representation"},
		{cqltype.BlobType, `"0x123"`, "Value '0x123' is not a valid blob representation: cannot parse '123' as hex bytes"},
		{cqltype.UUIDType, `"x"`, "Unable to make UUID from 'x'"},
		{cqltype.InetType, `4`, "Expected a string representation of an inet value, but got a Integer: 4"},
		{cqltype.TimestampType, `1.5`, "Expected a long or a datestring representation of a timestamp value, but got a Double: 1.5"},
		{cqltype.DurationType, `"1x"`, "Unable to convert '1x' to a duration"},
		{cqltype.MustParse("list<int>"), `{"a": 1}`, `Expected a list, but got a LinkedHashMap: {"a":1}`},
		{cqltype.MustParse("list<int>"), `[null]`, "Invalid null element in list"},
		{cqltype.MustParse("set<int>"), `1`, "Expected a list (representing a set), but got a Integer: 1"},
		{cqltype.MustParse("map<int, int>"), `{"x": 1}`, "Unable to make int from 'x'"},
		{cqltype.MustParse("map<int, int>"), `{"1": null}`, "Invalid null value in map"},
		{cqltype.MustParse("map<int, int>"), `"[1"`, "Could not decode JSON string '[1': unexpected end of input"},
		{cqltype.MustParse("tuple<int>"), `[1, 2]`, "Tuple contains extra items (expected 1, got 2)"},
		{pointType, `{"z": 1}`, "Unknown field 'z' in value of user defined type point"},
		{pointType, `{"label": "x"}`, "Unknown field 'label' in value of user defined type point"},
		{pointType, `[1]`, "Expected a map, but got a ArrayList: [1]"},
		{cqltype.IntType, `1 2`, "Could not decode JSON string '1 2': unexpected data after the value"},
		{cqltype.IntType, ``, "Could not decode JSON string '': unexpected end of input"},
	}
	for _, tc := range tests {
		v, err := FromJSON(tc.typ, []byte(tc.in))
		if err == nil {
			t.Errorf("%s %s: got %x, want error", tc.typ, tc.in, v)
			continue
		}
		if msg := message(err); msg != tc.msg {
			t.Errorf("%s %s: error %q, want %q", tc.typ, tc.in, msg, tc.msg)
		}
	}
}

func TestToJSONInvalid(t *testing.T) {
	if _, err := ToJSON(cqltype.IntType, []byte{1}); err == nil {
		t.Error("ToJSON accepted a 1-byte int")
	}
}

func TestDecodeObject(t *testing.T) {
	got, err := DecodeObject([]byte(`{"A": 1, "\"B\"": [1, 2],  "c" : {"x": null}, "a": "last", "\"q\"\"\"": true}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": `"last"`, "B": `[1, 2]`, "c": `{"x": null}`, `q"`: `true`}
	if len(got) != len(want) {
		t.Errorf("got %d members, want %d: %q", len(got), len(want), got)
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("member %q = %s, want %s", k, got[k], v)
		}
	}
	for _, bad := range []string{`[1]`, `{"a": }`, `{"a": 1} x`, `"s"`, `{1: 2}`} {
		if _, err := DecodeObject([]byte(bad)); err == nil {
			t.Errorf("DecodeObject(%s) succeeded", bad)
		}
	}
}
