package bulk

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

func TestLineReader(t *testing.T) {
	lr := newLineReader(strings.NewReader("a\r\n"+strings.Repeat("x", 300)+"\nb"), 100)
	type got struct {
		text string
		line int
		long bool
	}
	var out []got
	for {
		text, line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, errTooLong) {
			t.Fatal(err)
		}
		out = append(out, got{string(text), line, err != nil})
	}
	want := []got{{"a", 1, false}, {strings.Repeat("x", 100), 2, true}, {"b", 3, false}}
	if len(out) != len(want) {
		t.Fatalf("got %+v", out)
	}
	for i := range want {
		if out[i] != want[i] {
			t.Errorf("line %d: got %+v, want %+v", i, out[i], want[i])
		}
	}
}

// FuzzJSONLines reads any input as JSON lines without panicking: every
// line comes back once, within the size limit, and decodes or fails.
func FuzzJSONLines(f *testing.F) {
	for _, s := range []string{`{"a": 1}` + "\n", `{"a": [1, 2], "b": {"c": "d"}}`, "{\n}\n", `{"a": "\xff"}`, "[]\n\n"} {
		f.Add(s)
	}
	types := []*cqltype.Type{cqltype.IntType, cqltype.TextType, cqltype.TimestampType}
	f.Fuzz(func(t *testing.T, in string) {
		const max = 128
		lr := newLineReader(strings.NewReader(in), max)
		lines := 0
		for {
			text, line, err := lr.next()
			if err == io.EOF {
				break
			}
			if err != nil && !errors.Is(err, errTooLong) {
				t.Fatal(err)
			}
			lines++
			if line != lines || len(text) > max+1 {
				t.Fatalf("line %d (%d bytes), want line %d", line, len(text), lines)
			}
			obj, err := decodeObject(bytes.Clone(text))
			if err != nil {
				continue
			}
			for _, raw := range obj {
				for _, typ := range types {
					_, _ = fromJSON(typ, raw) // must not panic
				}
			}
		}
		if want := strings.Count(in, "\n") + boolInt(in != "" && !strings.HasSuffix(in, "\n")); lines != want {
			t.Fatalf("%d lines, want %d", lines, want)
		}
	})
}
