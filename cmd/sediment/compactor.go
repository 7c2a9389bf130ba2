package main

import (
	"context"

	"github.com/sedimentdb/sediment/gc"
	"github.com/sedimentdb/sediment/vfs"
)

// initCompactor runs the compactor role. So far that is the garbage
// collector: it deletes the objects the manifest lists as garbage once
// their grace period is over, while this process holds the collection
// lease; the compactors of the other processes stand by.
func (s *Sediment) initCompactor(ctx context.Context) (service, error) {
	id, err := loadNodeID(vfs.Default, s.cfg.DataDir)
	if err != nil {
		return service{}, err
	}
	c, err := gc.New(s.manifest, s.store, s.cfg.GC, gc.Options{Holder: id, Logger: s.logger, Registerer: s.reg})
	if err != nil {
		return service{}, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(runCtx) // returns nil once runCtx ends
	}()
	s.logger.Info("garbage collector started", "component", "gc", "holder", id, "grace_period", s.cfg.GC.GracePeriod, "interval", s.cfg.GC.Interval)
	return service{
		stop: func(ctx context.Context) error {
			cancel()
			select {
			case <-done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}, nil
}
