package values

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/big"
	"net/netip"
	"strconv"
	"strings"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// nativeText returns the text form of a valid, non-empty value of a native
// type as Cassandra's AbstractType.getString does. Floats and doubles are
// written as Java writes them, NaN and Infinity included.
func nativeText(t *cqltype.Type, v []byte) string {
	switch t.Kind {
	case cqltype.Ascii, cqltype.Text:
		return string(v)
	case cqltype.Blob:
		return "0x" + hex.EncodeToString(v)
	case cqltype.Boolean:
		if v[0] != 0 {
			return "true"
		}
		return "false"
	case cqltype.Tinyint:
		return strconv.Itoa(int(int8(v[0])))
	case cqltype.Smallint:
		return strconv.Itoa(int(int16(binary.BigEndian.Uint16(v))))
	case cqltype.Int:
		return strconv.Itoa(int(int32(binary.BigEndian.Uint32(v))))
	case cqltype.Bigint, cqltype.Counter:
		return strconv.FormatInt(int64(binary.BigEndian.Uint64(v)), 10)
	case cqltype.Varint:
		return varintInt(v).String()
	case cqltype.Decimal:
		return decimalText(v)
	case cqltype.Float:
		return javaFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(v))), 32)
	case cqltype.Double:
		return javaFloat(math.Float64frombits(binary.BigEndian.Uint64(v)), 64)
	case cqltype.UUID, cqltype.Timeuuid:
		return uuidText(v)
	case cqltype.Inet:
		return inetText(v)
	case cqltype.Date:
		return formatDate(binary.BigEndian.Uint32(v))
	case cqltype.Time:
		return formatTime(int64(binary.BigEndian.Uint64(v)))
	case cqltype.Timestamp:
		return formatTimestamp(int64(binary.BigEndian.Uint64(v)), 'T')
	case cqltype.Duration:
		months, days, nanos, _ := cqltype.SplitDuration(v)
		return durationText(months, days, nanos)
	}
	return "0x" + hex.EncodeToString(v)
}

// varintInt reads a big-endian two's complement integer.
func varintInt(v []byte) *big.Int {
	x := new(big.Int).SetBytes(v)
	if len(v) > 0 && v[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v))))
	}
	return x
}

// decimalText writes a decimal as Java's BigDecimal.toString: plain when
// the scale is not negative and the exponent is at least -6, otherwise in
// scientific notation such as 1.5E+7.
func decimalText(v []byte) string {
	scale := int64(int32(binary.BigEndian.Uint32(v)))
	unscaled := varintInt(v[4:])
	digits := new(big.Int).Abs(unscaled).String()
	sign := ""
	if unscaled.Sign() < 0 {
		sign = "-"
	}
	adjusted := -scale + int64(len(digits)) - 1
	if scale >= 0 && adjusted >= -6 {
		if scale == 0 {
			return sign + digits
		}
		if int64(len(digits)) > scale {
			i := int64(len(digits)) - scale
			return sign + digits[:i] + "." + digits[i:]
		}
		return sign + "0." + strings.Repeat("0", int(scale-int64(len(digits)))) + digits
	}
	s := sign + digits[:1]
	if len(digits) > 1 {
		s += "." + digits[1:]
	}
	s += "E"
	if adjusted >= 0 {
		s += "+"
	}
	return s + strconv.FormatInt(adjusted, 10)
}

// javaFloat writes f as Java's Double.toString (or Float.toString for
// bits 32) does: plain decimal with at least one fractional digit for
// magnitudes in [1e-3, 1e7), otherwise d.dddE±n.
func javaFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	e := strconv.FormatFloat(f, 'e', -1, bits) // d.ddde±xx
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	if f >= 1e-3 && f < 1e7 {
		if exp >= 0 {
			for len(digits) < exp+2 {
				digits += "0"
			}
			return sign + digits[:exp+1] + "." + digits[exp+1:]
		}
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	}
	frac := digits[1:]
	if frac == "" {
		frac = "0"
	}
	return sign + digits[:1] + "." + frac + "E" + strconv.Itoa(exp)
}

func uuidText(v []byte) string {
	var b [36]byte
	hex.Encode(b[0:8], v[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], v[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], v[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], v[8:10])
	b[23] = '-'
	hex.Encode(b[24:], v[10:16])
	return string(b[:])
}

// inetText writes an address as Java's getHostAddress does: IPv6 as eight
// uncompressed groups without leading zeros.
func inetText(v []byte) string {
	if len(v) == 4 {
		return netip.AddrFrom4([4]byte(v)).String()
	}
	var b strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.FormatUint(uint64(binary.BigEndian.Uint16(v[i:])), 16))
	}
	return b.String()
}

// durationText writes a duration as Cassandra's Duration.toString does,
// except that the zero duration is "0s" rather than the empty string, so
// that it parses back.
func durationText(months, days int32, nanos int64) string {
	if months == 0 && days == 0 && nanos == 0 {
		return "0s"
	}
	var b strings.Builder
	if months < 0 || days < 0 || nanos < 0 {
		b.WriteByte('-')
	}
	abs := func(x int64) uint64 {
		if x < 0 {
			return uint64(-x)
		}
		return uint64(x)
	}
	unit := func(n uint64, name string) {
		if n != 0 {
			b.WriteString(strconv.FormatUint(n, 10))
			b.WriteString(name)
		}
	}
	m := abs(int64(months))
	unit(m/12, "y")
	unit(m%12, "mo")
	unit(abs(int64(days)), "d")
	n := abs(nanos)
	unit(n/3600e9, "h")
	unit(n/60e9%60, "m")
	unit(n/1e9%60, "s")
	unit(n/1e6%1e3, "ms")
	unit(n/1e3%1e3, "us")
	unit(n%1e3, "ns")
	return b.String()
}
