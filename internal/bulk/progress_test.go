package bulk

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgress(t *testing.T) {
	st := Stats{Rows: 5000, Rejected: 3, InputBytes: 25e6, InputTotal: 100e6, SSTables: 2, Seconds: 10}
	if got, want := progressLine(st, true), "[=======                       ]  25% 5000 rows (500 rows/s), 2.5 MB/s, 3 rejected, 2 SSTables ETA 30s"; got != want {
		t.Errorf("bar:\n got %q\nwant %q", got, want)
	}
	st.InputTotal = 0 // standard input: no bar, no ETA
	if got, want := progressLine(st, false), "5000 rows (500 rows/s), 2.5 MB/s, 3 rejected, 2 SSTables"; got != want {
		t.Errorf("line:\n got %q\nwant %q", got, want)
	}
	var b bytes.Buffer
	p := NewProgress(&b, false)
	p.Show(st)
	p.Show(st) // within the period: not drawn again
	p.Done()
	if n := strings.Count(b.String(), "\n"); n != 1 {
		t.Errorf("plain progress drew %d lines: %q", n, b.String())
	}
	b.Reset()
	p = NewProgress(&b, true)
	p.Show(st)
	p.Show(st)
	p.Done()
	if got := b.String(); strings.Count(got, "\r\033[K") != 2 || !strings.HasSuffix(got, "\n") {
		t.Errorf("terminal progress %q", got)
	}
}
