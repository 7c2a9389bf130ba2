package values

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// duration is a CQL duration: months, days and nanoseconds, all of one sign.
type duration struct {
	months, days int32
	nanos        int64
}

// append appends the serialized form: three zigzag vints.
func (d duration) append(dst []byte) []byte {
	for _, v := range [3]int64{int64(d.months), int64(d.days), d.nanos} {
		dst = appendUvint(dst, uint64(v<<1)^uint64(v>>63))
	}
	return dst
}

// appendUvint appends u in Cassandra's VIntCoding: the count of leading
// one bits of the first byte is the count of bytes that follow.
func appendUvint(dst []byte, u uint64) []byte {
	n := (639 - bits.LeadingZeros64(u|1)*9) >> 6 // total bytes, 1..9
	if n == 9 {
		dst = append(dst, 0xff)
		for i := 7; i >= 0; i-- {
			dst = append(dst, byte(u>>(8*i)))
		}
		return dst
	}
	start := len(dst)
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(u>>(8*i)))
	}
	dst[start] |= ^byte(0xff >> (n - 1))
	return dst
}

// Duration units in the order they must appear, as Cassandra's
// Duration.Builder numbers them.
const (
	unitYears = iota + 1
	unitMonths
	unitWeeks
	unitDays
	unitHours
	unitMinutes
	unitSeconds
	unitMillis
	unitMicros
	unitNanos
)

var unitNames = [...]string{"", "years", "months", "weeks", "days", "hours", "minutes", "seconds",
	"milliseconds", "microseconds", "nanoseconds"}

// unitSizes gives each unit in months, days or nanoseconds.
var unitSizes = [...]struct{ months, days, nanos int64 }{
	unitYears: {months: 12}, unitMonths: {months: 1}, unitWeeks: {days: 7}, unitDays: {days: 1},
	unitHours: {nanos: 3600e9}, unitMinutes: {nanos: 60e9}, unitSeconds: {nanos: 1e9},
	unitMillis: {nanos: 1e6}, unitMicros: {nanos: 1e3}, unitNanos: {nanos: 1},
}

// durationSymbols are the symbols of the standard form. Longer ones come
// before their prefixes so that "mo" and "ms" are not read as "m".
var durationSymbols = []struct {
	name string
	unit int
}{
	{"y", unitYears}, {"mo", unitMonths}, {"w", unitWeeks}, {"d", unitDays}, {"h", unitHours},
	{"ms", unitMillis}, {"m", unitMinutes}, {"s", unitSeconds}, {"us", unitMicros}, {"µs", unitMicros},
	{"ns", unitNanos},
}

// durationBuilder sums the components of a duration as Cassandra's
// Duration.Builder does: units in order, each at most once, totals within
// their types.
type durationBuilder struct {
	months, days, nanos int64
	last                int
	err                 error
}

func (b *durationBuilder) add(n int64, unit int) {
	if b.err != nil {
		return
	}
	switch {
	case unit == b.last:
		b.err = errorf(fmt.Sprintf("Invalid duration. The %s are specified multiple times", unitNames[unit]))
		return
	case unit < b.last:
		b.err = errorf(fmt.Sprintf("Invalid duration. The %s should be after %s", unitNames[b.last], unitNames[unit]))
		return
	}
	b.last = unit
	size := unitSizes[unit]
	acc, per, limit, name := &b.nanos, size.nanos, int64(math.MaxInt64), "nanoseconds"
	switch {
	case size.months != 0:
		acc, per, limit, name = &b.months, size.months, math.MaxInt32, "months"
	case size.days != 0:
		acc, per, limit, name = &b.days, size.days, math.MaxInt32, "days"
	}
	if n > (limit-*acc)/per {
		// Cassandra names Integer.MAX_VALUE as the limit for all three.
		b.err = errorf(fmt.Sprintf("Invalid duration. The total number of %s must be less or equal to %d", name, math.MaxInt32))
		return
	}
	*acc += n * per
}

// parseDuration parses the three duration forms of the package comment.
func parseDuration(s string) (duration, error) {
	src := strings.TrimPrefix(s, "-")
	neg := len(src) != len(s)
	var b durationBuilder
	var ok bool
	switch {
	case !strings.HasPrefix(src, "P"):
		ok = parseStandardDuration(src, &b)
	case strings.HasSuffix(src, "W"):
		n, rest, isNum := leadingNumber(src[1:])
		if ok = isNum && rest == "W"; ok {
			b.add(n, unitWeeks)
		}
	case strings.Contains(src, "-"):
		ok = parseAlternativeDuration(src[1:], &b)
	default:
		ok = parseISODuration(src[1:], &b)
	}
	if !ok {
		return duration{}, errorf(fmt.Sprintf("Unable to convert '%s' to a duration", s))
	}
	if b.err != nil {
		return duration{}, b.err
	}
	d := duration{int32(b.months), int32(b.days), b.nanos}
	if neg {
		d = duration{-d.months, -d.days, -d.nanos}
	}
	return d, nil
}

// leadingNumber splits a run of digits off the start of s.
func leadingNumber(s string) (int64, string, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, s, false
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, s, false
	}
	return n, s[i:], true
}

// parseStandardDuration parses 1y2mo3w4d5h6m7s8ms9us10ns, symbols in any
// case.
func parseStandardDuration(s string, b *durationBuilder) bool {
	if s == "" {
		return false
	}
	for s != "" {
		n, rest, ok := leadingNumber(s)
		if !ok {
			return false
		}
		found := false
		for _, u := range durationSymbols {
			if len(rest) >= len(u.name) && strings.EqualFold(rest[:len(u.name)], u.name) {
				b.add(n, u.unit)
				s = rest[len(u.name):]
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// parseAlternativeDuration parses what follows the P of
// P0001-02-03T04:05:06.
func parseAlternativeDuration(s string, b *durationBuilder) bool {
	if len(s) != 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return false
	}
	parts := []string{s[0:4], s[5:7], s[8:10], s[11:13], s[14:16], s[17:19]}
	for i, p := range parts {
		if !allDigits(p) {
			return false
		}
		n, _ := strconv.ParseInt(p, 10, 64)
		b.add(n, []int{unitYears, unitMonths, unitDays, unitHours, unitMinutes, unitSeconds}[i])
	}
	return true
}

// parseISODuration parses what follows the P of P1Y2M3DT4H5M6S, each part
// optional: P alone, or PT, is zero, as Cassandra's pattern allows.
func parseISODuration(s string, b *durationBuilder) bool {
	datePart, timePart, _ := strings.Cut(s, "T")
	return isoFields(datePart, "YMD", []int{unitYears, unitMonths, unitDays}, b) &&
		isoFields(timePart, "HMS", []int{unitHours, unitMinutes, unitSeconds}, b)
}

// isoFields parses number-letter pairs whose letters appear in letters,
// in that order, each at most once.
func isoFields(s, letters string, units []int, b *durationBuilder) bool {
	next := 0
	for s != "" {
		n, rest, ok := leadingNumber(s)
		if !ok || rest == "" {
			return false
		}
		i := strings.IndexByte(letters[next:], rest[0])
		if i < 0 {
			return false
		}
		i += next
		b.add(n, units[i])
		next = i + 1
		s = rest[1:]
	}
	return true
}
