package values

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// Parse converts the text form of a value of native type t to its
// serialized form, as Cassandra's AbstractType.fromString does: numbers in
// decimal, blobs in hex without 0x, dates, times and timestamps in the
// formats of the package comment. The empty string is the empty value for
// the types that have one. Parse does not accept collections, tuples or
// user types.
func Parse(t *cqltype.Type, s string) ([]byte, error) {
	if s == "" && allowsEmpty(t.Kind) {
		return []byte{}, nil
	}
	switch t.Kind {
	case cqltype.Ascii:
		for _, r := range s {
			if r >= 0x80 {
				// AsciiType formats the encoder's exception, whose input
				// length counts UTF-16 units: two for a supplementary
				// character.
				n := 1
				if r > 0xffff {
					n = 2
				}
				return nil, errorf(fmt.Sprintf("Invalid ASCII character in string literal: java.nio.charset.UnmappableCharacterException: Input length = %d", n))
			}
		}
		return []byte(s), nil
	case cqltype.Text:
		if !utf8.ValidString(s) {
			return nil, errorf("String didn't validate.")
		}
		return []byte(s), nil
	case cqltype.Blob:
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, errorf(fmt.Sprintf("cannot parse '%s' as hex bytes", s))
		}
		return b, nil
	case cqltype.Boolean:
		switch strings.ToLower(s) {
		case "true":
			return []byte{1}, nil
		case "false":
			return []byte{0}, nil
		}
		return nil, errorf(fmt.Sprintf("Unable to make boolean from '%s'", s))
	case cqltype.Tinyint:
		n, err := strconv.ParseInt(s, 10, 8)
		if err != nil {
			return nil, errorf(fmt.Sprintf("Unable to make byte from '%s'", s))
		}
		return []byte{byte(n)}, nil
	case cqltype.Smallint:
		n, err := strconv.ParseInt(s, 10, 16)
		if err != nil {
			return nil, errorf(fmt.Sprintf("Unable to make short from '%s'", s))
		}
		return binary.BigEndian.AppendUint16(nil, uint16(n)), nil
	case cqltype.Int:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, errorf(fmt.Sprintf("Unable to make int from '%s'", s))
		}
		return binary.BigEndian.AppendUint32(nil, uint32(n)), nil
	case cqltype.Bigint, cqltype.Counter:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errorf(fmt.Sprintf("Unable to make long from '%s'", s))
		}
		return binary.BigEndian.AppendUint64(nil, uint64(n)), nil
	case cqltype.Varint:
		x, ok := parseBigInt(s)
		if !ok {
			return nil, errorf(fmt.Sprintf("unable to make int from '%s'", s))
		}
		return appendVarint(nil, x), nil
	case cqltype.Decimal:
		v, ok := parseDecimal(s)
		if !ok {
			return nil, errorf(fmt.Sprintf("unable to make BigDecimal from '%s'", s))
		}
		return v, nil
	case cqltype.Float:
		f, ok := parseJavaFloat(s, 32)
		if !ok {
			return nil, errorf(fmt.Sprintf("Unable to make float from '%s'", s))
		}
		return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f))), nil
	case cqltype.Double:
		f, ok := parseJavaFloat(s, 64)
		if !ok {
			return nil, errorf(fmt.Sprintf("Unable to make double from '%s'", s))
		}
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), nil
	case cqltype.UUID, cqltype.Timeuuid:
		u, ok := parseUUID(s)
		if !ok {
			if t.Kind == cqltype.Timeuuid {
				return nil, errorf(fmt.Sprintf("Unknown timeuuid representation: %s", s))
			}
			return nil, errorf(fmt.Sprintf("Unable to make UUID from '%s'", s))
		}
		if t.Kind == cqltype.Timeuuid && u[6]>>4 != 1 {
			return nil, errorf("TimeUUID supports only version 1 UUIDs")
		}
		return u[:], nil
	case cqltype.Inet:
		text := s
		// InetAddress.getByName takes an IPv6 literal in brackets, as in
		// a URL, but not an IPv4 one.
		bracketed := len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']'
		if bracketed {
			text = s[1 : len(s)-1]
		}
		a, err := netip.ParseAddr(text)
		if err != nil || a.Zone() != "" || bracketed && a.Is4() {
			return nil, errorf(fmt.Sprintf("Unable to make inet address from '%s'", s))
		}
		// Java's InetAddress turns IPv4-mapped IPv6 addresses into IPv4.
		a = a.Unmap()
		return a.AsSlice(), nil
	case cqltype.Date:
		days, err := parseDate(s)
		if err != nil {
			return nil, err
		}
		return binary.BigEndian.AppendUint32(nil, days), nil
	case cqltype.Time:
		ns, err := parseTime(s)
		if err != nil {
			return nil, err
		}
		return binary.BigEndian.AppendUint64(nil, uint64(ns)), nil
	case cqltype.Timestamp:
		ms, err := parseTimestamp(s)
		if err != nil {
			return nil, err
		}
		return binary.BigEndian.AppendUint64(nil, uint64(ms)), nil
	case cqltype.Duration:
		d, err := parseDuration(s)
		if err != nil {
			return nil, err
		}
		return d.append(nil), nil
	}
	return nil, errorf(fmt.Sprintf("Cannot parse a value of type %s from a string", t))
}

// allowsEmpty reports whether the empty value is valid for kind k (see
// package cqltype).
func allowsEmpty(k cqltype.Kind) bool {
	switch k {
	case cqltype.Smallint, cqltype.Tinyint, cqltype.Date, cqltype.Time, cqltype.Duration:
		return false
	}
	return k.Native()
}

// parseBigInt parses an optionally signed decimal integer, as Java's
// BigInteger(String) does.
func parseBigInt(s string) (*big.Int, bool) {
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || !allDigits(digits) {
		return nil, false
	}
	return new(big.Int).SetString(s, 10)
}

// appendVarint appends the minimal two's complement form of x.
func appendVarint(dst []byte, x *big.Int) []byte {
	return cqltype.AppendBigInt(dst, new(big.Int).Abs(x), x.Sign() < 0)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseDecimal parses Java BigDecimal syntax, [+-]digits[.digits][e[+-]n],
// keeping the scale as written: 1.50 has scale 2.
func parseDecimal(s string) ([]byte, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	if intPart+frac == "" || (intPart != "" && !allDigits(intPart)) || (frac != "" && !allDigits(frac)) {
		return nil, false
	}
	scale := int64(len(frac))
	if exp != "" {
		e, err := strconv.ParseInt(exp, 10, 64)
		if err != nil || e > 1<<40 || e < -1<<40 {
			return nil, false
		}
		scale -= e
	}
	if scale < math.MinInt32 || scale > math.MaxInt32 {
		return nil, false
	}
	unscaled, _ := new(big.Int).SetString(intPart+frac, 10)
	v := binary.BigEndian.AppendUint32(nil, uint32(int32(scale)))
	return cqltype.AppendBigInt(v, unscaled, neg && unscaled.Sign() != 0), true
}

// parseJavaFloat parses a number as Java's Float.parseFloat and
// Double.parseDouble do for decimal input: NaN and Infinity are spelled as in
// Java, and numbers too large become infinite rather than an error.
func parseJavaFloat(s string, bits int) (float64, bool) {
	switch strings.TrimLeft(s, "+-") {
	case "NaN":
		if len(s) > 4 {
			return 0, false
		}
		return math.NaN(), true
	case "Infinity":
		if len(s) > 9 {
			return 0, false
		}
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, bits)
	if err != nil && !isRange(err) {
		return 0, false
	}
	return f, true
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// parseUUID parses the 8-4-4-4-12 hex form.
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, false
	}
	return u, true
}
