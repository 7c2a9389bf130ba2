package values

import (
	"bytes"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// TestAuditDateLiterals checks date strings against Cassandra 4's
// SimpleDateSerializer, which reads them with java.time's ISO_LOCAL_DATE
// in strict mode: four-digit years (more only after '+'), two-digit months
// and days, and the supported range named in its own messages.
func TestAuditDateLiterals(t *testing.T) {
	date := cqltype.MustParse("date")
	coerce := func(s string) string { return "Unable to coerce '" + s + "' to a formatted date (long)" }
	tests := []struct {
		in   string
		want string // hex, or the message when err
		err  bool
	}{
		{"2024-02-29", "80004d46", false},
		{"1969-12-31", "7fffffff", false},
		{"0000-01-01", "7ff50558", false},
		{"-0001-01-01", "7ff503eb", false},
		{"+10000-01-01", "802cc0a1", false},
		{"-5877641-06-23", "00000000", false}, // the first date
		{"+5881580-07-11", "ffffffff", false}, // the last date

		{"2024-2-9", coerce("2024-2-9"), true},
		{"2024-02-9", coerce("2024-02-9"), true},
		{"24-02-09", coerce("24-02-09"), true},
		{"10000-01-01", coerce("10000-01-01"), true}, // five digits need '+'
		{"+2024-01-01", coerce("+2024-01-01"), true}, // '+' only past four digits
		{"-001-01-01", coerce("-001-01-01"), true},   // four digits at least
		{" 2024-01-01", coerce(" 2024-01-01"), true}, // no spaces
		{"2024-01-01 ", coerce("2024-01-01 "), true}, //
		{"2024-01-01T00:00", coerce("2024-01-01T00:00"), true},
		{"2023-02-29", coerce("2023-02-29"), true},
		{"2024-04-31", coerce("2024-04-31"), true},
		{"2024-00-10", coerce("2024-00-10"), true},
		{"+1000000000-01-01", coerce("+1000000000-01-01"), true}, // past Java's year field
		{"+300000000-01-01", coerce("+300000000-01-01"), true},   // its milliseconds overflow a long
		{"+5881580-07-12", "Input date +5881580-07-12 is greater than max supported date +5881580-07-11T00:00Z", true},
		{"+100000000-01-01", "Input date +100000000-01-01 is greater than max supported date +5881580-07-11T00:00Z", true},
		{"+999999999-12-31", coerce("+999999999-12-31"), true},
		{"-5877641-06-22", "Input date -5877641-06-22 is less than min supported date -5877641-06-23T00:00Z", true},
		{"-4294967296", "Unable to make unsigned int (for date) from: '-4294967296'", true},
	}
	for _, tc := range tests {
		got, err := Encode(date, str(tc.in), nil)
		switch {
		case tc.err && err == nil:
			t.Errorf("%q: got %x, want error %q", tc.in, got, tc.want)
		case tc.err && message(err) != tc.want:
			t.Errorf("%q: error %q, want %q", tc.in, message(err), tc.want)
		case !tc.err && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case !tc.err && err == nil && !bytes.Equal(got, unhex(tc.want)):
			t.Errorf("%q: got %x, want %s", tc.in, got, tc.want)
		}
	}
}

// TestAuditDateText checks that a date prints as ISO_LOCAL_DATE does
// (in CAST to text and in JSON), so that the text reads back.
func TestAuditDateText(t *testing.T) {
	date := cqltype.MustParse("date")
	for _, tc := range []struct{ hex, text string }{
		{"80000000", "1970-01-01"},
		{"7ff503eb", "-0001-01-01"},
		{"80004d46", "2024-02-29"},
		{"802cc0a0", "9999-12-31"},
		{"802cc0a1", "+10000-01-01"},
		{"ffffffff", "+5881580-07-11"},
		{"00000000", "-5877641-06-23"},
	} {
		v := unhex(tc.hex)
		if got := Text(date, v); got != tc.text {
			t.Errorf("Text(%s) = %q, want %q", tc.hex, got, tc.text)
		}
		if j, err := ToJSON(date, v); err != nil || string(j) != `"`+tc.text+`"` {
			t.Errorf("ToJSON(%s) = %s, %v; want %q", tc.hex, j, err, `"`+tc.text+`"`)
		}
		back, err := Parse(date, tc.text)
		if err != nil || !bytes.Equal(back, v) {
			t.Errorf("Parse(%q) = %x, %v; want %s", tc.text, back, err, tc.hex)
		}
	}
}

// TestAuditTimeuuidValues checks bound timeuuid values, validated as
// Cassandra 4's TimeUUIDSerializer does, and literals, read as
// TimeUUIDType.fromString does.
func TestAuditTimeuuidValues(t *testing.T) {
	tu := cqltype.MustParse("timeuuid")
	for _, tc := range []struct {
		v    []byte
		want string
	}{
		{unhex("550e8400e29b41d4a716446655440000"), "Invalid version for TimeUUID type."},
		{unhex("550e8400e29b"), "UUID should be 16 or 0 bytes (6)"},
		{unhex("d2177dd0eaa211dea572001b779c76e3"), ""},
		{[]byte{}, ""},
	} {
		err := cqltype.Validate(tu, tc.v)
		got := ""
		if me, ok := err.(*cqltype.MarshalError); ok {
			got = me.Msg
		} else if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Validate(timeuuid, %x) = %q, want %q", tc.v, got, tc.want)
		}
	}
	_, err := Encode(tu, lit(ast.LitUUID, "550e8400-e29b-41d4-a716-446655440000"), nil)
	if msg := message(err); msg != "TimeUUID supports only version 1 UUIDs" {
		t.Errorf("v4 uuid literal for timeuuid: %q", msg)
	}
}

// TestAuditTimestampFields checks the widths of a timestamp's numbers:
// Cassandra 4 reads timestamps with commons-lang's DateUtils.parseDateStrictly,
// whose FastDateParser reads a number that is not followed by another one
// with any count of digits, and then refuses values out of their field's
// range (a non-lenient Calendar).
func TestAuditTimestampFields(t *testing.T) {
	ts := cqltype.MustParse("timestamp")
	coerce := func(s string) string { return "Unable to coerce '" + s + "' to a formatted date (long)" }
	const at = "0000018cc820d888" // 2024-01-02 03:04:05 UTC
	tests := []struct {
		in   string
		want string
		err  bool
	}{
		{"2024-01-02 03:04:05", at, false},
		{"2024-1-2 3:4:5", at, false},
		{"2024-01-02T3:04:05Z", at, false},
		{"2024-001-002 003:004:005", at, false},
		{"2024-1-2 3:04", "0000018cc820c500", false},
		{"2024-01-02 24:00", coerce("2024-01-02 24:00"), true},
		{"2024-01-02 03:60", coerce("2024-01-02 03:60"), true},
		{"2024-01-02 03:04:60", coerce("2024-01-02 03:04:60"), true},
		{"2024-01-02 03:", coerce("2024-01-02 03:"), true},
		{"2024-01-02 :04", coerce("2024-01-02 :04"), true},
		{"2024-13-02", coerce("2024-13-02"), true},
	}
	for _, tc := range tests {
		got, err := Encode(ts, str(tc.in), nil)
		switch {
		case tc.err && err == nil:
			t.Errorf("%q: got %x, want error %q", tc.in, got, tc.want)
		case tc.err && message(err) != tc.want:
			t.Errorf("%q: error %q, want %q", tc.in, message(err), tc.want)
		case !tc.err && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case !tc.err && !bytes.Equal(got, unhex(tc.want)):
			t.Errorf("%q: got %x, want %s", tc.in, got, tc.want)
		}
	}
}

// TestAuditASCIILiterals checks the message for a non-ASCII character in
// an ascii literal: AsciiType.fromString formats the CharsetEncoder's
// exception, which counts the character's UTF-16 units.
func TestAuditASCIILiterals(t *testing.T) {
	ascii := cqltype.MustParse("ascii")
	const prefix = "Invalid ASCII character in string literal: java.nio.charset.UnmappableCharacterException: Input length = "
	for _, tc := range []struct{ in, want string }{
		{"abc\x7f", ""},
		{"café", prefix + "1"},
		{"x\u00e0\u0080", prefix + "1"},
		{"\U0001F600", prefix + "2"},
	} {
		_, err := Encode(ascii, str(tc.in), nil)
		got := ""
		if err != nil {
			got = message(err)
		}
		if got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
		if tc.want == "" {
			continue
		}
		if _, err := FromJSON(ascii, []byte(`"`+tc.in+`"`)); err == nil || message(err) != tc.want {
			t.Errorf("fromJson %q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestAuditInetLiterals checks inet strings against Java's
// InetAddress.getByName, which takes IPv6 literals in brackets too.
func TestAuditInetLiterals(t *testing.T) {
	inet := cqltype.MustParse("inet")
	for _, tc := range []struct{ in, want string }{
		{"[::1]", "00000000000000000000000000000001"},
		{"[2001:db8::8:800:200c:417a]", "20010db8000000000008080020 0c417a"},
		{"[::ffff:1.2.3.4]", "01020304"},
		{"::ffff:1.2.3.4", "01020304"},
		{"[1.2.3.4]", "Unable to make inet address from '[1.2.3.4]'"},
		{"[::1", "Unable to make inet address from '[::1'"},
		{"[]", "Unable to make inet address from '[]'"},
		{"::1]", "Unable to make inet address from '::1]'"},
		{"1.2.3.256", "Unable to make inet address from '1.2.3.256'"},
		{"2001:db8::g", "Unable to make inet address from '2001:db8::g'"},
	} {
		got, err := Encode(inet, str(tc.in), nil)
		if err != nil {
			if message(err) != tc.want {
				t.Errorf("%q: %q, want %q", tc.in, message(err), tc.want)
			}
			continue
		}
		if !bytes.Equal(got, unhex(tc.want)) {
			t.Errorf("%q: got %x, want %s", tc.in, got, tc.want)
		}
	}
}
