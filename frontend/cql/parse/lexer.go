package parse

import (
	"strings"
	"unicode/utf8"
)

// tokKind is the lexical class of a token.
type tokKind uint8

const (
	tEOF      tokKind = iota
	tIdent            // unquoted word: keyword or identifier, as written
	tQuoted           // "quoted name", unescaped
	tString           // 'string' or $$string$$, unescaped
	tInteger          // -?[0-9]+
	tFloat            // 1.5, 1e3, NaN, -Infinity, ...
	tUUID             // 8-4-4-4-12 hex digits
	tHex              // 0x followed by hex digits
	tDuration         // 1h30m, P1D, ...
	tPunct            // operators and punctuation
)

// token is one lexeme. text is the unescaped value for strings and quoted
// names, and the source text otherwise.
type token struct {
	kind tokKind
	text string
	word string // tIdent: text in lower case, for keyword tests
	pos  int    // byte offset of the first character
	end  int    // byte offset just past the last character
	line int    // 1-based
	col  int    // 0-based, in characters, as ANTLR counts
}

// lexer splits a statement into tokens, one at a time as the parser
// asks (see parser.fill).
type lexer struct {
	src  string
	pos  int
	line int
	col  int // column of pos
}

// advance moves past n bytes, keeping line and column.
func (l *lexer) advance(n int) {
	end := l.pos + n
	for l.pos < end {
		r, size := utf8.DecodeRuneInString(l.src[l.pos:])
		l.pos += size
		if r == '\n' {
			l.line++
			l.col = 0
		} else {
			l.col++
		}
	}
}

func (l *lexer) errorf(format string, args ...any) *Error {
	return newError(l.line, l.col, format, args...)
}

func (l *lexer) peekByte(off int) byte {
	if l.pos+off < len(l.src) {
		return l.src[l.pos+off]
	}
	return 0
}

// skipSpace skips whitespace and comments.
func (l *lexer) skipSpace() error {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.advance(1)
		case c == '-' && l.peekByte(1) == '-', c == '/' && l.peekByte(1) == '/':
			n := strings.IndexAny(l.src[l.pos:], "\n\r")
			if n < 0 {
				n = len(l.src) - l.pos
			}
			l.advance(n)
		case c == '/' && l.peekByte(1) == '*':
			n := strings.Index(l.src[l.pos+2:], "*/")
			if n < 0 {
				l.advance(len(l.src) - l.pos)
				return l.errorf("mismatched character '<EOF>' expecting '*'")
			}
			l.advance(n + 4)
		default:
			return nil
		}
	}
	return nil
}

func (l *lexer) next() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	t := token{pos: l.pos, line: l.line, col: l.col}
	if l.pos >= len(l.src) {
		t.kind, t.end = tEOF, l.pos
		return t, nil
	}
	kind, n, text, err := l.scan()
	if err != nil {
		return token{}, err
	}
	t.kind = kind
	t.text = text
	if text == "" && kind != tString && kind != tQuoted {
		t.text = l.src[l.pos : l.pos+n]
	}
	if kind == tIdent {
		t.word = lower(t.text)
	}
	l.advance(n)
	t.end = l.pos
	return t, nil
}

// scan recognizes the token at l.pos and returns its kind, its length in
// bytes and, for strings and quoted names, its unescaped text.
func (l *lexer) scan() (tokKind, int, string, error) {
	s := l.src[l.pos:]
	c := s[0]
	switch {
	case c == '\'':
		return l.quoted(s, '\'', tString)
	case c == '"':
		return l.quoted(s, '"', tQuoted)
	case c == '$' && len(s) > 1 && s[1] == '$':
		end := strings.Index(s[2:], "$$")
		if end < 0 {
			l.advance(len(s))
			return 0, 0, "", l.errorf("mismatched character '<EOF>' expecting '$'")
		}
		body := s[2 : 2+end]
		if !utf8.ValidString(body) {
			return 0, 0, "", l.errorf("invalid UTF-8 in string literal")
		}
		return tString, end + 4, body, nil
	case c == '0' && len(s) > 1 && (s[1] == 'x' || s[1] == 'X') && !isUUID(s):
		n := 2
		for n < len(s) && isHex(s[n]) {
			n++
		}
		return tHex, n, "", nil
	case isUUID(s):
		return tUUID, 36, "", nil
	case isDigit(c) || c == '-' && len(s) > 1 && isDigit(s[1]):
		return l.number(s)
	case c == '-' && (hasWordPrefix(s[1:], "nan") || hasWordPrefix(s[1:], "infinity")):
		return tFloat, 1 + wordLen(s[1:]), "", nil
	case c == '-' && len(s) > 1 && s[1] == 'P':
		if n := isoDuration(s); n > 0 {
			return tDuration, n, "", nil
		}
	case isLetter(c):
		n := wordLen(s)
		if c == 'P' {
			if d := isoDuration(s); d >= n {
				return tDuration, d, "", nil
			}
		}
		return tIdent, n, "", nil
	}
	for _, p := range punctuation {
		if strings.HasPrefix(s, p) {
			return tPunct, len(p), "", nil
		}
	}
	r, _ := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		return 0, 0, "", l.errorf("invalid UTF-8 in statement")
	}
	return 0, 0, "", l.errorf("no viable alternative at character '%c'", r)
}

// punctuation lists the operators, longest first.
var punctuation = []string{
	"..", "<=", ">=", "!=", ";", ",", ".", "(", ")", "[", "]", "{", "}",
	"<", ">", "=", "+", "-", "*", "/", "%", ":", "?",
}

// quoted scans a 'string' or "name" whose quote is doubled to escape it.
func (l *lexer) quoted(s string, q byte, kind tokKind) (tokKind, int, string, error) {
	var b strings.Builder
	i := 1
	for {
		j := strings.IndexByte(s[i:], q)
		if j < 0 {
			l.advance(len(s))
			return 0, 0, "", l.errorf("mismatched character '<EOF>' expecting '%c'", q)
		}
		b.WriteString(s[i : i+j])
		i += j + 1
		if i < len(s) && s[i] == q {
			b.WriteByte(q)
			i++
			continue
		}
		break
	}
	text := b.String()
	if !utf8.ValidString(text) {
		return 0, 0, "", l.errorf("invalid UTF-8 in %s", map[tokKind]string{tString: "string literal", tQuoted: "quoted name"}[kind])
	}
	return kind, i, text, nil
}

// number scans an integer, a float or a duration starting with a digit or
// a minus sign.
func (l *lexer) number(s string) (tokKind, int, string, error) {
	i := 0
	if s[0] == '-' {
		i++
	}
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if n := unitDuration(s); n > 0 {
		return tDuration, n, "", nil
	}
	if strings.HasPrefix(s[i:], "..") {
		return tInteger, i, "", nil // a range, as in c[1..2]
	}
	kind := tInteger
	if i < len(s) && s[i] == '.' {
		kind = tFloat
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			kind, i = tFloat, j
		}
	}
	return kind, i, "", nil
}

// durationUnits are the units of the 1h30m duration form, longest first
// so that "ms" is not read as "m" followed by "s".
var durationUnits = []string{"mo", "ms", "us", "µs", "ns", "y", "w", "d", "h", "m", "s"}

// unitDuration returns the length of a -?(digits unit)+ duration at the
// start of s, or 0.
func unitDuration(s string) int {
	i := 0
	if strings.HasPrefix(s, "-") {
		i++
	}
	n := 0
	for {
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == i {
			break
		}
		u := matchUnit(s[j:])
		if u == 0 {
			break
		}
		i = j + u
		n = i
	}
	return n
}

func matchUnit(s string) int {
	for _, u := range durationUnits {
		if len(s) >= len(u) && strings.EqualFold(s[:len(u)], u) {
			return len(u)
		}
	}
	return 0
}

// isoDuration returns the length of an ISO 8601 duration (P1Y2M3D,
// PT1H, P2W, P0001-02-03T04:05:06) at the start of s, or 0. The
// designators are upper case, as Cassandra's lexer wants them.
func isoDuration(s string) int {
	i := 0
	if strings.HasPrefix(s, "-") {
		i++
	}
	if !strings.HasPrefix(s[i:], "P") {
		return 0
	}
	i++
	if n := isoAlternative(s[i:]); n > 0 {
		return i + n
	}
	start := i
	// Period designators Y, M, D in order, or a lone W.
	if j, ok := designated(s, i, "W"); ok {
		return j
	}
	for _, d := range []string{"Y", "M", "D"} {
		if j, ok := designated(s, i, d); ok {
			i = j
		}
	}
	if strings.HasPrefix(s[i:], "T") {
		j := i + 1
		t := j
		for _, d := range []string{"H", "M", "S"} {
			if k, ok := designated(s, j, d); ok {
				j = k
			}
		}
		if j > t {
			i = j
		}
	}
	if i == start {
		return 0
	}
	return i
}

// designated matches digits followed by the designator d at s[i:].
func designated(s string, i int, d string) (int, bool) {
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j == i || !strings.HasPrefix(s[j:], d) {
		return i, false
	}
	return j + len(d), true
}

// isoAlternative matches the YYYY-MM-DDThh:mm:ss form after the P.
func isoAlternative(s string) int {
	const pattern = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(pattern) {
		return 0
	}
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == 'd' && !isDigit(s[i]) || pattern[i] != 'd' && s[i] != pattern[i] {
			return 0
		}
	}
	return len(pattern)
}

// isUUID reports whether s starts with 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	if len(s) < 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHex(s[i]) {
				return false
			}
		}
	}
	return true
}

// wordLen is the length of the identifier at the start of s.
func wordLen(s string) int {
	if s == "" || !isLetter(s[0]) {
		return 0
	}
	i := 1
	for i < len(s) && (isLetter(s[i]) || isDigit(s[i]) || s[i] == '_') {
		i++
	}
	return i
}

// hasWordPrefix reports whether s starts with the word w (any case),
// not followed by more identifier characters.
func hasWordPrefix(s, w string) bool {
	return wordLen(s) == len(w) && strings.EqualFold(s[:len(w)], w)
}

// lower is strings.ToLower for ASCII words, without allocating when the
// word is already in lower case.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isHex(c byte) bool    { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
