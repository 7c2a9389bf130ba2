package bulk

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress draws a load's progress: on a terminal a bar redrawn in place
// (rows/s, MB/s, rejects, ETA), otherwise a plain line every Every.
type Progress struct {
	w        io.Writer
	terminal bool
	every    time.Duration
	mu       sync.Mutex
	last     time.Time
	drawn    bool
}

// NewProgress draws on w; terminal picks the bar.
func NewProgress(w io.Writer, terminal bool) *Progress {
	return &Progress{w: w, terminal: terminal, every: 10 * time.Second}
}

// Show draws st (Options.Progress).
func (p *Progress) Show(st Stats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if !p.terminal && now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	line := progressLine(st, p.terminal)
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// Done ends the bar's line.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// progressLine formats st, with a bar when known how much is left.
func progressLine(st Stats, bar bool) string {
	secs := max(st.Seconds, 1e-9)
	mbs := float64(st.InputBytes) / 1e6 / secs
	var b strings.Builder
	frac := -1.0
	if st.InputTotal > 0 {
		frac = min(float64(st.InputBytes)/float64(st.InputTotal), 1)
		if bar {
			const width = 30
			n := int(frac * width)
			fmt.Fprintf(&b, "[%s%s] ", strings.Repeat("=", n), strings.Repeat(" ", width-n))
		}
		fmt.Fprintf(&b, "%3.0f%% ", frac*100)
	}
	fmt.Fprintf(&b, "%d rows (%.0f rows/s), %.1f MB/s, %d rejected, %d SSTables",
		st.Rows, float64(st.Rows)/secs, mbs, st.Rejected, st.SSTables)
	if frac > 0 && frac < 1 {
		eta := time.Duration(secs*(1-frac)/frac) * time.Second
		fmt.Fprintf(&b, " ETA %s", eta.Round(time.Second))
	}
	return b.String()
}
