package ingest

import (
	"context"
	"time"

	"github.com/sedimentdb/sediment/internal/storage"
)

// L0Gauge reports how full the L0 of a table's token range is: 0 when it
// holds nothing to worry about, 1 at the limit its compaction strategy sets
// (compaction.Strategy.L0Pressure), more beyond. It is asked before every
// flush commit, so it must answer from memory.
type L0Gauge interface {
	L0Pressure(table storage.TableID, r int) float64
}

// holdPoll is how often a held flush asks again when Config.FlushDelay
// gives no period.
const holdPoll = 100 * time.Millisecond

// throttle slows the commit of a flush writing tables when their L0 is
// filling up, so that compaction catches up rather than read amplification
// growing without bound. Below the limit the delay grows with the pressure,
// up to Config.FlushDelay; at or past it the flush is held until the
// pressure drops below 1 or Config.FlushHold passes. Meanwhile the memtable
// stays in memory, so writes wait and then fail with storage.ErrOverloaded:
// back-pressure reaches clients, and nothing acknowledged is ever dropped.
// It returns early only if ctx ends.
func (s *Shard) throttle(ctx context.Context, tables []SSTable) error {
	g := s.deps.L0
	if g == nil || len(tables) == 0 {
		return nil
	}
	pressure := func() float64 {
		var p float64
		for _, t := range tables {
			if q := g.L0Pressure(t.Table, t.Range); q > p { // NaN never wins
				p = q
			}
		}
		s.m.l0Pressure.Set(p)
		return p
	}
	p := pressure()
	if p <= 0 {
		return nil
	}
	start := time.Now()
	defer func() {
		s.m.flushDelays.Inc()
		s.m.flushDelaySeconds.Add(time.Since(start).Seconds())
	}()
	if p < 1 {
		return sleep(ctx, time.Duration(p*float64(s.cfg.FlushDelay)))
	}
	s.logger.Warn("L0 at its limit; holding the flush", "pressure", p, "max_hold", s.cfg.FlushHold)
	poll := s.cfg.FlushDelay
	if poll <= 0 {
		poll = holdPoll
	}
	deadline := start.Add(s.cfg.FlushHold)
	for p >= 1 {
		left := time.Until(deadline)
		if left <= 0 {
			s.logger.Warn("L0 still at its limit after the longest hold; flushing", "pressure", p, "held", time.Since(start))
			return nil
		}
		if err := sleep(ctx, min(poll, left)); err != nil {
			return err
		}
		p = pressure()
	}
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
