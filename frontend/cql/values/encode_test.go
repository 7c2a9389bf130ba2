package values

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

func lit(k ast.LitKind, text string) *ast.Literal { return &ast.Literal{Kind: k, Text: text} }

func str(s string) *ast.Literal { return lit(ast.LitString, s) }
func num(s string) *ast.Literal { return lit(ast.LitInteger, s) }
func flt(s string) *ast.Literal { return lit(ast.LitFloat, s) }
func null() *ast.Literal        { return lit(ast.LitNull, "null") }
func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// message returns the client message of an Encode error for column k.
func message(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message("k")
	}
	return err.Error()
}

// TestEncodeNative drives every native type with valid literals (want is
// the serialized value in hex) and invalid ones (want is Cassandra's
// message, for a column named k).
func TestEncodeNative(t *testing.T) {
	tests := []struct {
		typ  string
		term *ast.Literal
		want string // hex, or the error message when err is set
		err  bool
	}{
		{"ascii", str("abc"), "616263", false},
		{"ascii", str(""), "", false},
		{"ascii", str("é"), "Invalid ASCII character in string literal: java.nio.charset.UnmappableCharacterException: Input length = 1", true},
		{"ascii", num("1"), `Invalid INTEGER constant (1) for "k" of type ascii`, true},
		{"text", str("é'x"), "c3a92778", false},
		{"varchar", str("x"), "78", false},
		{"text", flt("1.5"), `Invalid FLOAT constant (1.5) for "k" of type text`, true},
		{"text", lit(ast.LitBoolean, "true"), `Invalid BOOLEAN constant (true) for "k" of type text`, true},

		{"tinyint", num("-128"), "80", false},
		{"tinyint", num("127"), "7f", false},
		{"tinyint", num("128"), "Unable to make byte from '128'", true},
		{"smallint", num("-32768"), "8000", false},
		{"smallint", num("32768"), "Unable to make short from '32768'", true},
		{"int", num("-1"), "ffffffff", false},
		{"int", num("2147483647"), "7fffffff", false},
		{"int", num("2147483648"), "Unable to make int from '2147483648'", true},
		{"int", str("foo"), `Invalid STRING constant (foo) for "k" of type int`, true},
		{"int", flt("1.0"), `Invalid FLOAT constant (1.0) for "k" of type int`, true},
		{"bigint", num("-9223372036854775808"), "8000000000000000", false},
		{"bigint", num("9223372036854775808"), "Unable to make long from '9223372036854775808'", true},
		{"counter", num("5"), "0000000000000005", false},
		{"varint", num("0"), "00", false},
		{"varint", num("128"), "0080", false},
		{"varint", num("-129"), "ff7f", false},
		{"varint", num("-123456789012345678901234567890"), "fe7116f0093c8c1f11b1c0f52e", false},
		{"varint", flt("1.5"), `Invalid FLOAT constant (1.5) for "k" of type varint`, true},

		{"decimal", flt("1.50"), "00000002 0096", false},
		{"decimal", num("-1"), "00000000 ff", false},
		{"decimal", flt("1e10"), "fffffff6 01", false},
		{"decimal", flt("-0.001"), "00000003 ff", false},
		{"decimal", flt("NaN"), "unable to make BigDecimal from 'NaN'", true},
		{"float", flt("1.5"), "3fc00000", false},
		{"float", num("2"), "40000000", false},
		{"float", flt("1e40"), "7f800000", false},
		{"float", flt("NaN"), "7fc00000", false},
		{"float", flt("-Infinity"), "ff800000", false},
		{"double", flt("0.1"), "3fb999999999999a", false},
		{"double", flt("Infinity"), "7ff0000000000000", false},
		{"double", flt("-0.0"), "8000000000000000", false},
		{"double", str("1.0"), `Invalid STRING constant (1.0) for "k" of type double`, true},

		{"boolean", lit(ast.LitBoolean, "true"), "01", false},
		{"boolean", lit(ast.LitBoolean, "false"), "00", false},
		{"boolean", num("1"), `Invalid INTEGER constant (1) for "k" of type boolean`, true},

		{"blob", lit(ast.LitBlob, "0xCAFE"), "cafe", false},
		{"blob", lit(ast.LitBlob, "0x"), "", false},
		{"blob", lit(ast.LitBlob, "0xabc"), "cannot parse 'abc' as hex bytes", true},
		{"blob", str("cafe"), `Invalid STRING constant (cafe) for "k" of type blob`, true},

		{"uuid", lit(ast.LitUUID, "550e8400-e29b-41d4-a716-446655440000"), "550e8400e29b41d4a716446655440000", false},
		{"uuid", str("550e8400-e29b-41d4-a716-446655440000"), `Invalid STRING constant (550e8400-e29b-41d4-a716-446655440000) for "k" of type uuid`, true},
		{"timeuuid", lit(ast.LitUUID, "d2177dd0-eaa2-11de-a572-001b779c76e3"), "d2177dd0eaa211dea572001b779c76e3", false},
		{"timeuuid", lit(ast.LitUUID, "550e8400-e29b-41d4-a716-446655440000"), "TimeUUID supports only version 1 UUIDs", true},

		{"inet", str("127.0.0.1"), "7f000001", false},
		{"inet", str("::1"), "00000000000000000000000000000001", false},
		{"inet", str("::ffff:10.0.0.1"), "0a000001", false},
		{"inet", str("fe80::1%eth0"), "Unable to make inet address from 'fe80::1%eth0'", true},
		{"inet", str("localhost"), "Unable to make inet address from 'localhost'", true},

		{"date", str("1970-01-01"), "80000000", false},
		{"date", str("2024-02-29"), "80004d46", false},
		{"date", str("1969-12-31"), "7fffffff", false},
		{"date", str("-0001-01-01"), "7ff503eb", false},
		{"date", num("2147483648"), "80000000", false},
		{"date", num("0"), "00000000", false},
		{"date", num("4294967296"), "Unable to make unsigned int (for date) from: '4294967296'", true},
		{"date", str("2023-02-29"), "Unable to coerce '2023-02-29' to a formatted date (long)", true},
		{"date", str("2024-2-9"), "Unable to coerce '2024-2-9' to a formatted date (long)", true},
		{"date", str("2024-001-01"), "Unable to coerce '2024-001-01' to a formatted date (long)", true},
		{"date", str("2024-01-01x"), "Unable to coerce '2024-01-01x' to a formatted date (long)", true},
		{"date", str(""), "Unable to coerce '' to a formatted date (long)", true},

		{"time", str("00:00:00"), "0000000000000000", false},
		{"time", str("23:59:59.999999999"), "00004e94914effff", false},
		{"time", str("01:02:03.5"), "00000362f1e51300", false},
		{"time", num("1"), "0000000000000001", false},
		{"time", num("86400000000000"), "Unable to make long (for time) from: '86400000000000'", true},
		{"time", str(" 1:2:3.000000001 "), "00000362d417ae01", false},
		{"time", str("24:00:00"), "(TimeType) Unable to coerce '24:00:00' to a formatted time (long)", true},
		{"time", str("01:02"), "(TimeType) Unable to coerce '01:02' to a formatted time (long)", true},
		{"time", str("01:02:03."), "(TimeType) Unable to coerce '01:02:03.' to a formatted time (long)", true},
		{"time", str("01:02:03.1234567890"), "(TimeType) Unable to coerce '01:02:03.1234567890' to a formatted time (long)", true},

		{"timestamp", num("0"), "0000000000000000", false},
		{"timestamp", num("-1"), "ffffffffffffffff", false},
		{"timestamp", str("1700000000000"), "0000018bcfe56800", false},
		{"timestamp", str("2024-01-02"), "0000018cc7785000", false},
		{"timestamp", str("2024-01-02 03:04"), "0000018cc820c500", false},
		{"timestamp", str("2024-01-02T03:04:05"), "0000018cc820d888", false},
		{"timestamp", str("2024-01-02 03:04:05.678"), "0000018cc820db2e", false},
		// SimpleDateFormat reads .5 as 5 ms.
		{"timestamp", str("2024-01-02 03:04:05.5"), "0000018cc820d88d", false},
		{"timestamp", str("2024-01-02 03:04:05.678Z"), "0000018cc820db2e", false},
		{"timestamp", str("2024-01-02 04:04:05.678+01:00"), "0000018cc820db2e", false},
		{"timestamp", str("2024-01-02 04:04:05.678+0100"), "0000018cc820db2e", false},
		{"timestamp", str("2024-01-02 02:04:05.678-01"), "0000018cc820db2e", false},
		{"timestamp", str("2024-01-02 03:04:05.678 UTC"), "0000018cc820db2e", false},
		{"timestamp", str("2024-01-02 04:04:05.678 GMT+01:00"), "0000018cc820db2e", false},
		{"timestamp", str("2024-01-02+0000"), "0000018cc7785000", false},
		{"timestamp", str("2024-01-02 03:04:05.1000"), "Unable to coerce '2024-01-02 03:04:05.1000' to a formatted date (long)", true},
		{"timestamp", str("2024-13-02"), "Unable to coerce '2024-13-02' to a formatted date (long)", true},
		{"timestamp", str("yesterday"), "Unable to coerce 'yesterday' to a formatted date (long)", true},
		{"timestamp", str("2024-01-02 03:04+25:00"), "Unable to coerce '2024-01-02 03:04+25:00' to a formatted date (long)", true},
		{"timestamp", num("9223372036854775808"), "Unable to make long (for date) from: '9223372036854775808'", true},

		{"duration", lit(ast.LitDuration, "1h30m"), "0000fc09d29229e000", false},
		{"duration", lit(ast.LitDuration, "1y2mo3w4d5h6m7s8ms9us10ns"), "1c32fc2168cdf9d664", false},
		{"duration", lit(ast.LitDuration, "-2d"), "00 03 00", false},
		{"duration", lit(ast.LitDuration, "P1Y2M3DT4H5M6S"), "1c06fc1ac003cfe800", false},
		{"duration", lit(ast.LitDuration, "P2W"), "001c00", false},
		{"duration", lit(ast.LitDuration, "P0001-02-03T04:05:06"), "1c06fc1ac003cfe800", false},
		{"duration", lit(ast.LitDuration, "2µs"), "0000 8fa0", false},
		{"duration", lit(ast.LitDuration, "1m1h"), "Invalid duration. The minutes should be after hours", true},
		{"duration", lit(ast.LitDuration, "1h2H"), "Invalid duration. The hours are specified multiple times", true},
		{"duration", lit(ast.LitDuration, "1h2x"), "Unable to convert '1h2x' to a duration", true},
		{"duration", lit(ast.LitDuration, "P1WT1H"), "Unable to convert 'P1WT1H' to a duration", true},
		{"duration", lit(ast.LitDuration, "P1Y-2M"), "Unable to convert 'P1Y-2M' to a duration", true},
		{"duration", lit(ast.LitDuration, "P1M1Y"), "Unable to convert 'P1M1Y' to a duration", true},
		{"duration", lit(ast.LitDuration, "P"), "000000", false},
		{"duration", lit(ast.LitDuration, "-PT"), "000000", false},
		{"duration", lit(ast.LitDuration, "PT1h"), "Unable to convert 'PT1h' to a duration", true},
		{"duration", num("5"), "Unable to convert '5' to a duration", true},
		{"duration", lit(ast.LitDuration, "178956971y"), "Invalid duration. The total number of months must be less or equal to 2147483647", true},
		{"duration", lit(ast.LitDuration, "178956970y7mo"), "f0fffffffe 00 00", false},
		{"duration", lit(ast.LitDuration, "2562047h47m16s854ms775us807ns"), "0000 ff fffffffffffffffe", false},
		{"duration", lit(ast.LitDuration, "2562048h"), "Invalid duration. The total number of nanoseconds must be less or equal to 2147483647", true},
		{"duration", str("1h"), `Invalid STRING constant (1h) for "k" of type duration`, true},

		{"int", null(), "null", false},
		{"counter", null(), "Invalid null value for counter increment/decrement", true},
	}
	for _, tc := range tests {
		typ := cqltype.MustParse(tc.typ)
		name := fmt.Sprintf("%s/%s", tc.typ, tc.term.Text)
		got, err := Encode(typ, tc.term, nil)
		if tc.err {
			if err == nil {
				t.Errorf("%s: got %x, want error %q", name, got, tc.want)
			} else if msg := message(err); msg != tc.want {
				t.Errorf("%s: error %q, want %q", name, msg, tc.want)
			} else if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: error %v is not ErrInvalid", name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if tc.want == "null" {
			if got != nil {
				t.Errorf("%s: got %x, want null", name, got)
			}
			continue
		}
		if want := unhex(tc.want); !bytes.Equal(got, want) || got == nil {
			t.Errorf("%s: got %x, want %x", name, got, want)
		}
		if err := cqltype.Validate(typ, got); err != nil {
			t.Errorf("%s: %x does not validate: %v", name, got, err)
		}
	}
}
