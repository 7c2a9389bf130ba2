package bulk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/cql/parse"
	"github.com/sedimentdb/sediment/frontend/cql/values"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// TextOptions say how CSV text becomes values.
type TextOptions struct {
	// Null is the text of a null (default: the empty field; a quoted
	// empty field is the empty string).
	Null string
	// TimestampFormat, DateFormat and TimeFormat, when set, are strftime
	// formats (cqlsh's DATETIMEFORMAT: %Y-%m-%d %H:%M:%S%z) tried before
	// Cassandra's own text forms.
	TimestampFormat, DateFormat, TimeFormat string
}

// converter turns text into the serialized value of one type.
type converter struct {
	opts                       TextOptions
	tsLayout, dLayout, tLayout string
}

func newConverter(o TextOptions) (*converter, error) {
	c := &converter{opts: o}
	for _, f := range []struct {
		in  string
		out *string
	}{{o.TimestampFormat, &c.tsLayout}, {o.DateFormat, &c.dLayout}, {o.TimeFormat, &c.tLayout}} {
		if f.in == "" {
			continue
		}
		l, err := strftimeLayout(f.in)
		if err != nil {
			return nil, err
		}
		*f.out = l
	}
	return c, nil
}

// fromText returns the value of f for type t; nil is null.
func (c *converter) fromText(t *cqltype.Type, f Field) ([]byte, error) {
	if !f.Quoted && f.Value == c.opts.Null {
		return nil, nil
	}
	s := f.Value
	switch t.Kind {
	case cqltype.Timestamp:
		if c.tsLayout != "" {
			if tm, err := time.Parse(c.tsLayout, s); err == nil {
				return binary.BigEndian.AppendUint64(nil, uint64(tm.UnixMilli())), nil
			}
		}
	case cqltype.Date:
		if c.dLayout != "" {
			if tm, err := time.Parse(c.dLayout, s); err == nil {
				days := tm.Unix() / 86400
				if tm.Unix() < 0 && tm.Unix()%86400 != 0 {
					days--
				}
				return binary.BigEndian.AppendUint32(nil, uint32(days+1<<31)), nil
			}
		}
	case cqltype.Time:
		if c.tLayout != "" {
			if tm, err := time.Parse(c.tLayout, s); err == nil {
				ns := int64(tm.Hour())*int64(time.Hour) + int64(tm.Minute())*int64(time.Minute) +
					int64(tm.Second())*int64(time.Second) + int64(tm.Nanosecond())
				return binary.BigEndian.AppendUint64(nil, uint64(ns)), nil
			}
		}
	}
	if t.Kind == cqltype.Blob {
		// Unloads and cqlsh write blobs as 0x...
		s = strings.TrimPrefix(s, "0x")
	}
	if !complexKind(t) {
		return values.Parse(t, s)
	}
	// Collections, tuples and user types: JSON, as DSBulk writes them, or
	// a CQL literal, as cqlsh COPY does.
	if v, err := values.FromJSON(t, []byte(s)); err == nil {
		return v, nil
	}
	return literal(t, s)
}

// complexKind reports whether values.Parse cannot read t.
func complexKind(t *cqltype.Type) bool {
	switch t.Kind {
	case cqltype.List, cqltype.Set, cqltype.Map, cqltype.Tuple, cqltype.UDT:
		return true
	}
	return false
}

// literal reads s as one CQL literal of type t, with the CQL parser.
func literal(t *cqltype.Type, s string) ([]byte, error) {
	st, err := parse.Statement("INSERT INTO t (c) VALUES (" + s + ")")
	ins, ok := st.(*ast.Insert)
	if err != nil || !ok || len(ins.Values) != 1 {
		return nil, fmt.Errorf("not a JSON value nor a CQL literal of type %s", t)
	}
	return values.Encode(t, ins.Values[0], func(*cqltype.Type, ast.Term) ([]byte, error) {
		return nil, errors.New("only literals can be loaded")
	})
}

// strftimeLayout translates a strftime format into a Go time layout.
func strftimeLayout(f string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		i++
		if i == len(f) {
			return "", fmt.Errorf("format %q ends in %%", f)
		}
		switch f[i] {
		case 'Y':
			b.WriteString("2006")
		case 'y':
			b.WriteString("06")
		case 'm':
			b.WriteString("01")
		case 'd':
			b.WriteString("02")
		case 'H':
			b.WriteString("15")
		case 'I':
			b.WriteString("03")
		case 'p':
			b.WriteString("PM")
		case 'M':
			b.WriteString("04")
		case 'S':
			b.WriteString("05")
		case 'f':
			b.WriteString("999999999")
		case 'z':
			b.WriteString("-0700")
		case 'Z':
			b.WriteString("MST")
		case 'b':
			b.WriteString("Jan")
		case 'B':
			b.WriteString("January")
		case 'a':
			b.WriteString("Mon")
		case 'A':
			b.WriteString("Monday")
		case 'j':
			b.WriteString("002")
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("format %q: %%%c is not supported", f, f[i])
		}
	}
	return b.String(), nil
}
