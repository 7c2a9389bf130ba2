package values

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

const (
	nanosPerDay = 24 * 60 * 60 * 1e9
	// dateEpoch is the serialized date of 1970-01-01.
	dateEpoch = 1 << 31
)

// parseDate parses a date as Cassandra 4's SimpleDateSerializer does: a
// raw unsigned day number, or an ISO local date (DateTimeFormatter's
// ISO_LOCAL_DATE, strict): a year of four digits, or of five to ten after
// '+', or of four to ten after '-', then two-digit month and day.
func parseDate(s string) (uint32, error) {
	bad := func() error { return errorf(fmt.Sprintf("Unable to coerce '%s' to a formatted date (long)", s)) }
	if allDigits(strings.TrimPrefix(s, "-")) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > math.MaxUint32 {
			return 0, errorf(fmt.Sprintf("Unable to make unsigned int (for date) from: '%s'", s))
		}
		return uint32(n), nil
	}
	y, m, d, ok := splitISODate(s)
	if !ok {
		return 0, bad()
	}
	days, ok := civilDays(y, m, d)
	// Java computes the date's milliseconds and fails on overflow.
	if !ok || days > math.MaxInt64/msPerDay || days < math.MinInt64/msPerDay {
		return 0, bad()
	}
	switch {
	case days < math.MinInt32:
		return 0, errorf(fmt.Sprintf("Input date %s is less than min supported date %s", s, minDateText))
	case days > math.MaxInt32:
		return 0, errorf(fmt.Sprintf("Input date %s is greater than max supported date %s", s, maxDateText))
	}
	return uint32(days + dateEpoch), nil
}

const (
	msPerDay = 24 * 60 * 60 * 1000
	// minDateText and maxDateText are the first and last dates, as Java's
	// ZonedDateTime prints them in the out of range messages.
	minDateText = "-5877641-06-23T00:00Z"
	maxDateText = "+5881580-07-11T00:00Z"
)

// splitISODate reads the whole of s as an ISO local date. Java's year field
// holds up to nine digits' worth (±999999999), which ten digits may exceed.
func splitISODate(s string) (y, m, d int64, ok bool) {
	sign := byte(0)
	if s != "" && (s[0] == '+' || s[0] == '-') {
		sign, s = s[0], s[1:]
	}
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	switch {
	case n > 10,
		sign == 0 && n != 4,
		sign == '+' && n <= 4,
		sign == '-' && n < 4:
		return 0, 0, 0, false
	}
	y, err := strconv.ParseInt(s[:n], 10, 64)
	if err != nil || y > 999999999 {
		return 0, 0, 0, false
	}
	if sign == '-' {
		y = -y
	}
	rest := s[n:]
	if len(rest) != 6 || rest[0] != '-' || rest[3] != '-' {
		return 0, 0, 0, false
	}
	m, ok1 := twoDigits(rest[1:3])
	d, ok2 := twoDigits(rest[4:6])
	return y, m, d, ok1 && ok2
}

func twoDigits(s string) (int64, bool) {
	if s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int64(s[0]-'0')*10 + int64(s[1]-'0'), true
}

// splitDate reads [-]y+-m+-d+ from the start of a timestamp: commons-lang's
// FastDateParser, which Cassandra's DateUtils.parseDateStrictly uses, reads
// a number not followed by another number with any count of digits.
func splitDate(s string) (y, m, d int64, rest string, ok bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	y, s, ok = digits(s, 9)
	if !ok || len(s) == 0 || s[0] != '-' {
		return 0, 0, 0, "", false
	}
	m, s, ok = digits(s[1:], 9)
	if !ok || len(s) == 0 || s[0] != '-' {
		return 0, 0, 0, "", false
	}
	d, s, ok = digits(s[1:], 9)
	if !ok {
		return 0, 0, 0, "", false
	}
	if neg {
		y = -y
	}
	return y, m, d, s, true
}

// digits reads one to max decimal digits from the start of s.
func digits(s string, max int) (int64, string, bool) {
	i := 0
	var n int64
	for i < len(s) && i < max && s[i] >= '0' && s[i] <= '9' {
		n = n*10 + int64(s[i]-'0')
		i++
	}
	return n, s[i:], i > 0
}

// civilDays returns the days from 1970-01-01 to the given proleptic
// Gregorian date, rejecting dates such as February 30.
func civilDays(y, m, d int64) (int64, bool) {
	if m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, false
	}
	t := time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC)
	if int64(t.Day()) != d || int64(t.Month()) != m {
		return 0, false
	}
	return floorDiv(t.Unix(), 86400), true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// parseTime parses hh:mm:ss[.fffffffff] or nanoseconds since midnight, as
// Cassandra's TimeSerializer does: fields of any width, a fraction of up to
// nine digits padded on the right, surrounding spaces ignored.
func parseTime(s string) (int64, error) {
	if allDigits(strings.TrimPrefix(s, "-")) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n >= nanosPerDay {
			return 0, errorf(fmt.Sprintf("Unable to make long (for time) from: '%s'", s))
		}
		return n, nil
	}
	ns, ok := parseClock(strings.TrimSpace(s))
	if !ok {
		return 0, errorf(fmt.Sprintf("(TimeType) Unable to coerce '%s' to a formatted time (long)", s))
	}
	return ns, nil
}

func parseClock(s string) (int64, bool) {
	hh, rest, ok := strings.Cut(s, ":")
	if !ok {
		return 0, false
	}
	mm, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return 0, false
	}
	ss, frac, hasFrac := strings.Cut(rest, ".")
	field := func(f string, limit int64) (int64, bool) {
		n, tail, ok := digits(f, 9)
		return n, ok && tail == "" && n < limit
	}
	h, ok1 := field(hh, 24)
	m, ok2 := field(mm, 60)
	sec, ok3 := field(ss, 60)
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	ns := ((h*60+m)*60 + sec) * 1e9
	if hasFrac {
		if len(frac) == 0 || len(frac) > 9 || !allDigits(frac) {
			return 0, false
		}
		f, _ := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		ns += f
	}
	return ns, true
}

// splitClock reads the hh:mm[:ss[.SSS]] of a timestamp from the start of s
// and returns the nanoseconds since midnight. Each field may have any count
// of digits (3:4:5 is 03:04:05), as Cassandra's parser reads them; SSS is a
// count of milliseconds up to 999, so '.5' is 5 ms.
func splitClock(s string) (int64, string, bool) {
	h, s, ok1 := digits(s, 9)
	if !ok1 || len(s) < 2 || s[0] != ':' {
		return 0, "", false
	}
	m, s, ok2 := digits(s[1:], 9)
	if !ok2 || h > 23 || m > 59 {
		return 0, "", false
	}
	ns := (h*60 + m) * 60 * 1e9
	if len(s) == 0 || s[0] != ':' {
		return ns, s, true
	}
	sec, s, ok := digits(s[1:], 9)
	if !ok || sec > 59 {
		return 0, "", false
	}
	ns += sec * 1e9
	if len(s) > 0 && s[0] == '.' {
		n := 1
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		frac := s[1:n]
		if len(frac) == 0 || len(frac) > 9 {
			return 0, "", false
		}
		f, _ := strconv.ParseInt(frac, 10, 64)
		if f > 999 {
			return 0, "", false
		}
		ns += f * 1e6
		s = s[n:]
	}
	return ns, s, true
}

// parseTimestamp parses the formats Cassandra's TimestampSerializer
// accepts, milliseconds since the epoch, or "now".
func parseTimestamp(s string) (int64, error) {
	bad := func() error { return errorf(fmt.Sprintf("Unable to coerce '%s' to a formatted date (long)", s)) }
	if strings.EqualFold(s, "now") {
		return time.Now().UnixMilli(), nil
	}
	if allDigits(strings.TrimPrefix(s, "-")) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, errorf(fmt.Sprintf("Unable to make long (for date) from: '%s'", s))
		}
		return n, nil
	}
	y, m, d, rest, ok := splitDate(s)
	if !ok {
		return 0, bad()
	}
	days, ok := civilDays(y, m, d)
	if !ok {
		return 0, bad()
	}
	var clock int64
	if len(rest) > 0 && (rest[0] == ' ' || rest[0] == 'T') {
		clock, rest, ok = splitClock(rest[1:])
		if !ok {
			return 0, bad()
		}
	}
	offset, ok := parseZone(rest)
	if !ok {
		return 0, bad()
	}
	ms, ok := mulAdd(days, 86400e3, clock/1e6-offset*1e3)
	if !ok {
		return 0, bad()
	}
	return ms, nil
}

// mulAdd returns a*b+c, reporting whether it fits an int64 (the product
// alone may not, as for the day of math.MinInt64 ms).
func mulAdd(a, b, c int64) (int64, bool) {
	r := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
	r.Add(r, big.NewInt(c))
	return r.Int64(), r.IsInt64()
}

// parseZone parses "", Z, ±hh, ±hhmm or ±hh:mm into seconds east of UTC;
// after a space also UTC, GMT and GMT±hh:mm.
func parseZone(s string) (int64, bool) {
	if s == "" || s == "Z" {
		return 0, true
	}
	if strings.HasPrefix(s, " ") {
		s = s[1:]
		switch {
		case s == "UTC" || s == "GMT" || s == "Z":
			return 0, true
		case strings.HasPrefix(s, "GMT") || strings.HasPrefix(s, "UTC"):
			s = s[3:]
		}
		if s == "" || s[0] == ' ' {
			return 0, false
		}
		return parseZone(s)
	}
	if s[0] != '+' && s[0] != '-' {
		return 0, false
	}
	sign := int64(1)
	if s[0] == '-' {
		sign = -1
	}
	z := s[1:]
	var hh, mm string
	switch {
	case len(z) == 2:
		hh = z
	case len(z) == 4:
		hh, mm = z[:2], z[2:]
	case len(z) == 5 && z[2] == ':':
		hh, mm = z[:2], z[3:]
	default:
		return 0, false
	}
	if !allDigits(hh) || mm != "" && !allDigits(mm) {
		return 0, false
	}
	h, _ := strconv.Atoi(hh)
	m := 0
	if mm != "" {
		m, _ = strconv.Atoi(mm)
	}
	if h > 18 || m > 59 {
		return 0, false
	}
	return sign * int64(h*3600+m*60), true
}

// formatDate writes a serialized day number as ISO_LOCAL_DATE prints it:
// yyyy-mm-dd, with '-' before negative years and '+' before years past
// 9999.
func formatDate(days uint32) string {
	t := time.Unix((int64(days)-dateEpoch)*86400, 0).UTC()
	if t.Year() > 9999 {
		// ISO_LOCAL_DATE signs years of more than four digits.
		return "+" + formatYMD(t)
	}
	return formatYMD(t)
}

func formatYMD(t time.Time) string {
	y := t.Year()
	sign := ""
	if y < 0 {
		sign, y = "-", -y
	}
	return fmt.Sprintf("%s%04d-%02d-%02d", sign, y, int(t.Month()), t.Day())
}

// formatTime writes nanoseconds since midnight as hh:mm:ss.fffffffff, or
// as the bare number when it is not within a day (such values validate, as
// in Cassandra, but have no clock form).
func formatTime(ns int64) string {
	if ns < 0 || ns >= nanosPerDay {
		return strconv.FormatInt(ns, 10)
	}
	return fmt.Sprintf("%02d:%02d:%02d.%09d", ns/3600e9, ns/60e9%60, ns/1e9%60, ns%1e9)
}

// formatTimestamp writes milliseconds since the epoch in UTC with the given
// separator between date and time: yyyy-mm-dd hh:mm:ss.SSSZ.
func formatTimestamp(ms int64, sep byte) string {
	t := time.UnixMilli(ms).UTC()
	return fmt.Sprintf("%s%c%02d:%02d:%02d.%03dZ", formatYMD(t), sep, t.Hour(), t.Minute(), t.Second(), t.Nanosecond()/1e6)
}
