package manifest

import (
	"fmt"
	"strings"
)

// escapeName maps a CQL identifier (any non-empty UTF-8 string) to a valid
// NATS KV key token and object key segment: ASCII letters, digits, '_' and
// '-' stand for themselves, every other byte becomes "=XX" (upper-case hex).
// The mapping is injective, so names never collide, and it never produces
// '.', so a token never splits.
func escapeName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if plainByte(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "=%02X", c)
	}
	return b.String()
}

// unescapeName inverts escapeName. It rejects anything escapeName cannot
// produce, so that every name has exactly one spelling.
func unescapeName(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: empty name", ErrCorrupt)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case plainByte(c):
			b.WriteByte(c)
		case c == '=' && i+2 < len(s):
			hi, ok1 := upperHex(s[i+1])
			lo, ok2 := upperHex(s[i+2])
			v := hi<<4 | lo
			if !ok1 || !ok2 || plainByte(v) {
				return "", fmt.Errorf("%w: bad escape in %q", ErrCorrupt, s)
			}
			b.WriteByte(v)
			i += 2
		default:
			return "", fmt.Errorf("%w: bad byte in %q", ErrCorrupt, s)
		}
	}
	return b.String(), nil
}

func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func upperHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
