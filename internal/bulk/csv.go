package bulk

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// CSVOptions are the CSV dialect, named as cqlsh COPY and DSBulk name them.
type CSVOptions struct {
	// Delimiter separates fields (default ',').
	Delimiter rune
	// Quote encloses fields that hold delimiters, quotes or line breaks
	// (default '"'); inside, a doubled quote is one quote.
	Quote rune
	// Escape, inside a quoted field, makes the next character literal
	// (default '\\'); equal to Quote, only doubling escapes.
	Escape rune
	// MaxRecordBytes bounds one record (default 1 MiB): a longer one is
	// rejected, and reading goes on at the next line.
	MaxRecordBytes int
}

func (o *CSVOptions) fill() {
	if o.Delimiter == 0 {
		o.Delimiter = ','
	}
	if o.Quote == 0 {
		o.Quote = '"'
	}
	if o.Escape == 0 {
		o.Escape = '\\'
	}
	if o.MaxRecordBytes <= 0 {
		o.MaxRecordBytes = 1 << 20
	}
}

// Field is one field of a record. Quoted tells a quoted empty field (an
// empty string) from an empty one (null, by default).
type Field struct {
	Value  string
	Quoted bool
}

// RecordError is a record that could not be read: the reader skipped it
// and goes on with the next.
type RecordError struct {
	Line   int    // the record's first line, from 1
	Reason string // what is wrong
	Raw    string // the record's bytes as read (cut at the size limit)
}

func (e *RecordError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// CSVReader reads CSV records. Unlike encoding/csv it takes any quote and
// escape character (cqlsh's default escape is a backslash) and reports a
// malformed record without losing the records after it.
type CSVReader struct {
	opts CSVOptions
	r    *bufio.Reader
	line int // lines read
	raw  bytes.Buffer
	buf  []byte
}

// NewCSVReader reads records from r.
func NewCSVReader(r io.Reader, opts CSVOptions) *CSVReader {
	opts.fill()
	return &CSVReader{opts: opts, r: bufio.NewReaderSize(r, 64<<10)}
}

// errTooLong stops a record at the size limit.
var errTooLong = errors.New("too long")

// Read returns the next record and the line it starts on. At the end of
// the input it returns io.EOF; a malformed record is a *RecordError, after
// which Read may be called again. Empty lines are skipped.
func (c *CSVReader) Read() ([]Field, int, error) {
	for {
		c.raw.Reset()
		start := c.line + 1
		fields, err := c.record()
		if err == io.EOF && c.raw.Len() == 0 {
			return nil, 0, io.EOF
		}
		var rerr *RecordError
		switch {
		case errors.As(err, &rerr):
			rerr.Line, rerr.Raw = start, c.raw.String()
			return nil, start, rerr
		case err != nil && err != io.EOF:
			return nil, start, err
		}
		if len(fields) == 1 && fields[0].Value == "" && !fields[0].Quoted {
			continue // an empty line
		}
		return fields, start, nil
	}
}

// next returns the next character, counting lines and the record's size.
func (c *CSVReader) next() (rune, error) {
	r, size, err := c.r.ReadRune()
	if err != nil {
		return 0, err
	}
	if c.raw.Len()+size > c.opts.MaxRecordBytes {
		c.r.UnreadRune()
		return 0, errTooLong
	}
	if r == utf8.RuneError && size == 1 {
		c.raw.WriteByte(c.lastByte())
		return r, errBadUTF8
	}
	c.raw.WriteRune(r)
	if r == '\n' {
		c.line++
	}
	return r, nil
}

var errBadUTF8 = errors.New("invalid UTF-8")

// lastByte returns the byte just read, for an invalid UTF-8 sequence.
func (c *CSVReader) lastByte() byte {
	_ = c.r.UnreadByte()
	b, _ := c.r.ReadByte()
	return b
}

// skipLine drops the rest of the current physical line, keeping it in the
// record's raw text up to the size limit.
func (c *CSVReader) skipLine() error {
	for {
		b, err := c.r.ReadByte()
		if err != nil {
			return err
		}
		if c.raw.Len() < c.opts.MaxRecordBytes {
			c.raw.WriteByte(b)
		}
		if b == '\n' {
			c.line++
			return nil
		}
	}
}

// fail turns an error met inside a record into a RecordError, skipping to
// the next line so that reading can go on.
func (c *CSVReader) fail(err error, inQuotes bool) error {
	switch {
	case errors.Is(err, errTooLong):
		if serr := c.skipLine(); serr != nil && serr != io.EOF {
			return serr
		}
		return &RecordError{Reason: fmt.Sprintf("record longer than %d bytes", c.opts.MaxRecordBytes)}
	case errors.Is(err, errBadUTF8):
		if serr := c.skipLine(); serr != nil && serr != io.EOF {
			return serr
		}
		return &RecordError{Reason: "invalid UTF-8"}
	case err == io.EOF && inQuotes:
		return &RecordError{Reason: "quoted field not closed before the end of the input"}
	}
	return err
}

// record reads one record.
func (c *CSVReader) record() ([]Field, error) {
	var fields []Field
	for {
		f, end, err := c.field()
		if err != nil && err != io.EOF {
			return nil, err
		}
		fields = append(fields, f)
		if end || err == io.EOF {
			return fields, err
		}
	}
}

// field reads one field and whether it ended the record.
func (c *CSVReader) field() (Field, bool, error) {
	o := &c.opts
	c.buf = c.buf[:0]
	r, err := c.next()
	if err != nil {
		return Field{}, true, c.fail(err, false)
	}
	if r != o.Quote {
		// Unquoted: up to the delimiter or the end of the line.
		for {
			switch {
			case r == o.Delimiter:
				return Field{Value: string(c.buf)}, false, nil
			case r == '\n':
				return Field{Value: string(trimCR(c.buf))}, true, nil
			case r == o.Quote:
				_ = c.skipLine()
				return Field{}, true, &RecordError{Reason: fmt.Sprintf("quote %q in an unquoted field", o.Quote)}
			}
			c.buf = utf8.AppendRune(c.buf, r)
			if r, err = c.next(); err != nil {
				if err == io.EOF {
					return Field{Value: string(c.buf)}, true, io.EOF
				}
				return Field{}, true, c.fail(err, false)
			}
		}
	}
	for {
		if r, err = c.next(); err != nil {
			return Field{}, true, c.fail(err, true)
		}
		switch {
		case r == o.Escape && o.Escape != o.Quote:
			if r, err = c.next(); err != nil {
				return Field{}, true, c.fail(err, true)
			}
			c.buf = utf8.AppendRune(c.buf, r)
		case r == o.Quote:
			r, err = c.next()
			switch {
			case err == io.EOF:
				return Field{Value: string(c.buf), Quoted: true}, true, io.EOF
			case err != nil:
				return Field{}, true, c.fail(err, false)
			case r == o.Quote:
				c.buf = utf8.AppendRune(c.buf, r) // a doubled quote
			case r == o.Delimiter:
				return Field{Value: string(c.buf), Quoted: true}, false, nil
			case r == '\n':
				return Field{Value: string(c.buf), Quoted: true}, true, nil
			case r == '\r':
				if r, err = c.next(); err == nil && r == '\n' {
					return Field{Value: string(c.buf), Quoted: true}, true, nil
				}
				if err != nil && err != io.EOF {
					return Field{}, true, c.fail(err, false)
				}
				fallthrough
			default:
				if r != '\n' {
					_ = c.skipLine()
				}
				return Field{}, true, &RecordError{Reason: fmt.Sprintf("character %q after a closing quote", r)}
			}
		default:
			c.buf = utf8.AppendRune(c.buf, r)
		}
	}
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// AppendCSVRecord appends fields as one CSV record of the dialect in opts,
// ended by a newline: a field is quoted when it must be (it holds the
// delimiter, the quote, the escape, a line break, or is empty but not
// null), with quotes doubled. CSVReader reads it back as it was.
func AppendCSVRecord(dst []byte, fields []Field, opts CSVOptions) []byte {
	opts.fill()
	for i, f := range fields {
		if i > 0 {
			dst = utf8.AppendRune(dst, opts.Delimiter)
		}
		if !f.Quoted && !needsQuotes(f.Value, opts) {
			dst = append(dst, f.Value...)
			continue
		}
		dst = utf8.AppendRune(dst, opts.Quote)
		for _, r := range f.Value {
			switch r {
			case opts.Quote:
				dst = utf8.AppendRune(dst, opts.Quote)
			case opts.Escape:
				dst = utf8.AppendRune(dst, opts.Escape)
			}
			dst = utf8.AppendRune(dst, r)
		}
		dst = utf8.AppendRune(dst, opts.Quote)
	}
	return append(dst, '\n')
}

func needsQuotes(s string, o CSVOptions) bool {
	for _, r := range s {
		if r == o.Delimiter || r == o.Quote || r == o.Escape || r == '\n' || r == '\r' {
			return true
		}
	}
	return false
}
