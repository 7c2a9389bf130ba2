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

// durationUnits are the units of the standard duration form, in the order
// they must appear. Longer names come before their prefixes so that "mo"
// and "ms" are not read as "m".
var durationUnits = []struct {
	name   string
	months int64
	days   int64
	nanos  int64
	order  int
}{
	{"y", 12, 0, 0, 0},
	{"mo", 1, 0, 0, 1},
	{"w", 0, 7, 0, 2},
	{"d", 0, 1, 0, 3},
	{"h", 0, 0, 3600e9, 4},
	{"ms", 0, 0, 1e6, 7},
	{"m", 0, 0, 60e9, 5},
	{"s", 0, 0, 1e9, 6},
	{"us", 0, 0, 1e3, 8},
	{"µs", 0, 0, 1e3, 8},
	{"ns", 0, 0, 1, 9},
}

// durationBuilder sums the components of a duration, checking overflow.
type durationBuilder struct {
	months, days, nanos int64
	ok                  bool
}

func (b *durationBuilder) add(n, months, days, nanos int64) {
	mul := func(acc *int64, n, by int64, limit int64) {
		if by == 0 {
			return
		}
		if n > (limit-*acc)/by {
			b.ok = false
			return
		}
		*acc += n * by
	}
	mul(&b.months, n, months, math.MaxInt32)
	mul(&b.days, n, days, math.MaxInt32)
	mul(&b.nanos, n, nanos, math.MaxInt64)
}

// parseDuration parses the three duration forms of the package comment.
func parseDuration(s string) (duration, error) {
	src := strings.TrimPrefix(s, "-")
	neg := len(src) != len(s)
	b := durationBuilder{ok: true}
	var ok bool
	if strings.HasPrefix(src, "P") {
		ok = parseISODuration(src[1:], &b)
	} else {
		ok = parseStandardDuration(src, &b)
	}
	if !ok {
		return duration{}, errorf(fmt.Sprintf("Unable to convert '%s' to a duration", s))
	}
	if !b.ok {
		return duration{}, errorf(fmt.Sprintf("Invalid duration. The total number of months, days or nanoseconds of '%s' is too large", s))
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

// parseStandardDuration parses 1y2mo3w4d5h6m7s8ms9us10ns: units in this
// order, each at most once, case-insensitive.
func parseStandardDuration(s string, b *durationBuilder) bool {
	last := -1
	if s == "" {
		return false
	}
	for s != "" {
		n, rest, ok := leadingNumber(s)
		if !ok {
			return false
		}
		found := false
		for _, u := range durationUnits {
			if len(rest) >= len(u.name) && strings.EqualFold(rest[:len(u.name)], u.name) {
				if u.order <= last {
					return false
				}
				last = u.order
				b.add(n, u.months, u.days, u.nanos)
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

// parseISODuration parses what follows the P of P1Y2M3DT4H5M6S, P2W or
// P0001-02-03T04:05:06.
func parseISODuration(s string, b *durationBuilder) bool {
	if strings.HasSuffix(s, "W") {
		n, rest, ok := leadingNumber(s)
		if !ok || rest != "W" {
			return false
		}
		b.add(n, 0, 7, 0)
		return true
	}
	if len(s) == 19 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' {
		parts := []string{s[0:4], s[5:7], s[8:10], s[11:13], s[14:16], s[17:19]}
		units := [6][3]int64{{12, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 3600e9}, {0, 0, 60e9}, {0, 0, 1e9}}
		for i, p := range parts {
			if !allDigits(p) {
				return false
			}
			n, _ := strconv.ParseInt(p, 10, 64)
			b.add(n, units[i][0], units[i][1], units[i][2])
		}
		return true
	}
	datePart, timePart, hasT := strings.Cut(s, "T")
	if datePart == "" && (!hasT || timePart == "") {
		return false
	}
	if hasT && timePart == "" {
		return false
	}
	if !isoFields(datePart, "YMD", []int64{12, 1, 0}, []int64{0, 0, 1}, []int64{0, 0, 0}, b) {
		return false
	}
	return isoFields(timePart, "HMS", []int64{0, 0, 0}, []int64{0, 0, 0}, []int64{3600e9, 60e9, 1e9}, b)
}

// isoFields parses number-letter pairs whose letters appear in units, in
// that order, each at most once.
func isoFields(s, units string, months, days, nanos []int64, b *durationBuilder) bool {
	next := 0
	for s != "" {
		n, rest, ok := leadingNumber(s)
		if !ok || rest == "" {
			return false
		}
		i := strings.IndexByte(units[next:], rest[0])
		if i < 0 {
			return false
		}
		i += next
		b.add(n, months[i], days[i], nanos[i])
		next = i + 1
		s = rest[1:]
	}
	return true
}
