package manifest

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// A Beater keeps one member in the member list: Run renews it every
// interval, and Err tells a readiness check whether the last renewal
// worked. Frontends and ingest nodes each run one.
type Beater struct {
	m      *Manifest
	every  time.Duration
	member func() Member
	logger *slog.Logger
	last   atomic.Pointer[error]
}

// NewBeater returns a Beater that announces member() every interval; member
// is called before each renewal, so that what it reports stays current.
func (m *Manifest) NewBeater(every time.Duration, member func() Member, logger *slog.Logger) *Beater {
	return &Beater{m: m, every: every, member: member, logger: logger}
}

// Beat announces the member once, as a role does before it starts to serve.
func (b *Beater) Beat(ctx context.Context) error {
	err := b.m.Heartbeat(ctx, b.member())
	b.record(err)
	return err
}

// Run renews the member every interval until ctx ends. A failed renewal is
// logged once until one works again.
func (b *Beater) Run(ctx context.Context) {
	tick := time.NewTicker(b.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		hctx, cancel := context.WithTimeout(ctx, b.every)
		err := b.m.Heartbeat(hctx, b.member())
		cancel()
		if ctx.Err() != nil {
			return
		}
		b.record(err)
	}
}

func (b *Beater) record(err error) {
	if err == nil {
		b.last.Store(nil)
		return
	}
	if b.last.Load() == nil {
		b.logger.Warn("heartbeat failed", "err", err)
	}
	b.last.Store(&err)
}

// Err is the last renewal's error, nil if it worked.
func (b *Beater) Err() error {
	if err := b.last.Load(); err != nil {
		return *err
	}
	return nil
}
