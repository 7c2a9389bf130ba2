// Package logsample limits logs of events that an outside party can cause
// at will (failed requests, refused connections), so that a misbehaving
// client cannot flood the log.
package logsample

import (
	"log/slog"
	"sync"
	"time"
)

// Sampler logs about one event a second and counts the ones it drops in the
// next line it logs. The zero value is ready to use and safe for concurrent
// use.
type Sampler struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// Warn logs msg at warning level on l unless a line was logged less than a
// second ago.
func (p *Sampler) Warn(l *slog.Logger, msg string, args ...any) {
	p.mu.Lock()
	now := time.Now()
	if now.Sub(p.last) < time.Second {
		p.suppressed++
		p.mu.Unlock()
		return
	}
	n := p.suppressed
	p.last, p.suppressed = now, 0
	p.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed_since_last", n)
	}
	l.Warn(msg, args...)
}
