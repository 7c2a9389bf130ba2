package bulk

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

type csvRead struct {
	fields []string
	line   int
	reason string // of a RecordError
}

func readAll(t testing.TB, text string, o CSVOptions) []csvRead {
	r := NewCSVReader(strings.NewReader(text), o)
	var out []csvRead
	for {
		fs, line, err := r.Read()
		if err == io.EOF {
			return out
		}
		var rerr *RecordError
		if errors.As(err, &rerr) {
			out = append(out, csvRead{line: rerr.Line, reason: rerr.Reason})
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var vs []string
		for _, f := range fs {
			v := f.Value
			if f.Quoted {
				v = "'" + v + "'"
			}
			vs = append(vs, v)
		}
		out = append(out, csvRead{fields: vs, line: line})
	}
}

func TestCSVReader(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		opts CSVOptions
		want []csvRead
	}{
		{"plain", "a,b\nc,d", CSVOptions{}, []csvRead{{fields: []string{"a", "b"}, line: 1}, {fields: []string{"c", "d"}, line: 2}}},
		{"crlf and empty lines", "a,b\r\n\r\n\nc,\r\n", CSVOptions{}, []csvRead{{fields: []string{"a", "b"}, line: 1}, {fields: []string{"c", ""}, line: 4}}},
		{"quoted", `"a,1","b""q""","","x\"y"` + "\n", CSVOptions{}, []csvRead{{fields: []string{"'a,1'", `'b"q"'`, "''", `'x"y'`}, line: 1}}},
		{"multiline", "\"a\nb\",c\nd,e\n", CSVOptions{}, []csvRead{{fields: []string{"'a\nb'", "c"}, line: 1}, {fields: []string{"d", "e"}, line: 3}}},
		{"dialect", "'a|b'|c\n", CSVOptions{Delimiter: '|', Quote: '\''}, []csvRead{{fields: []string{"'a|b'", "c"}, line: 1}}},
		{"bare quote", "a\"b,c\nd,e\n", CSVOptions{}, []csvRead{{line: 1, reason: `quote '"' in an unquoted field`}, {fields: []string{"d", "e"}, line: 2}}},
		{"after closing quote", "\"a\"b,c\nd,e\n", CSVOptions{}, []csvRead{{line: 1, reason: `character 'b' after a closing quote`}, {fields: []string{"d", "e"}, line: 2}}},
		{"unclosed", "a,b\n\"c,d\n", CSVOptions{}, []csvRead{{fields: []string{"a", "b"}, line: 1}, {line: 2, reason: "quoted field not closed before the end of the input"}}},
		{"too long", "a,b\n" + strings.Repeat("x", 20) + "\nc,d\n", CSVOptions{MaxRecordBytes: 10}, []csvRead{{fields: []string{"a", "b"}, line: 1}, {line: 2, reason: "record longer than 10 bytes"}, {fields: []string{"c", "d"}, line: 3}}},
		{"bad utf-8", "a,\xff\nc,d\n", CSVOptions{}, []csvRead{{line: 1, reason: "invalid UTF-8"}, {fields: []string{"c", "d"}, line: 2}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := readAll(t, c.in, c.opts); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// FuzzCSVReader reads any input without panicking, and reads back
// whatever AppendCSVRecord writes of the records it found.
func FuzzCSVReader(f *testing.F) {
	for _, s := range []string{"a,b\n", `"a""b",c` + "\n", "\"x\ny\",\n", "a\"b\n", "\xff,\n", `"a\"b"`, "\r\n\r\n", `""`} {
		f.Add(s, byte(','), byte('"'), byte('\\'))
	}
	f.Fuzz(func(t *testing.T, in string, delim, quote, escape byte) {
		o := CSVOptions{Delimiter: rune(delim), Quote: rune(quote), Escape: rune(escape), MaxRecordBytes: 64}
		for _, b := range []byte{delim, quote, escape} {
			if b == 0 || b == '\n' || b == '\r' || b >= 0x80 {
				return
			}
		}
		if delim == quote || delim == escape {
			return
		}
		r := NewCSVReader(strings.NewReader(in), o)
		var records [][]Field
		lastLine := 0
		for {
			fs, line, err := r.Read()
			if err == io.EOF {
				break
			}
			var rerr *RecordError
			if err != nil && !errors.As(err, &rerr) {
				t.Fatal(err)
			}
			if line < lastLine {
				t.Fatalf("line %d after %d", line, lastLine)
			}
			lastLine = line
			if err == nil {
				records = append(records, fs)
			}
		}
		var out []byte
		for _, fs := range records {
			out = AppendCSVRecord(out, fs, CSVOptions{Delimiter: o.Delimiter, Quote: o.Quote, Escape: o.Escape})
		}
		back := NewCSVReader(strings.NewReader(string(out)), CSVOptions{Delimiter: o.Delimiter, Quote: o.Quote, Escape: o.Escape, MaxRecordBytes: 1 << 20})
		for i, want := range records {
			got, _, err := back.Read()
			if err != nil {
				t.Fatalf("record %d %+v written as %q: %v", i, want, out, err)
			}
			if !reflect.DeepEqual(fieldTexts(got), fieldTexts(want)) {
				t.Fatalf("record %d: read back %+v, want %+v (written %q)", i, got, want, out)
			}
		}
	})
}

// fieldTexts are the fields' texts, an empty record being one empty field.
func fieldTexts(fs []Field) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Value)
	}
	return out
}
