package objectstore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"syscall"
	"time"
)

// requester runs each logical operation of a backend as a series of
// attempts: every attempt is counted and timed, and transient failures are
// retried with exponential backoff and jitter. The SDKs' own retries are
// switched off so that attempts never multiply unseen.
type requester struct {
	log       *slog.Logger // nil: no logs
	backend   string
	cfg       RetryConfig
	timeout   time.Duration
	m         *metrics
	transient func(error) bool
}

// withTimeout bounds one whole operation, retries and backoff included.
func (r *requester) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, r.timeout)
}

// do calls attempt until it succeeds, fails permanently, retries run out or
// ctx ends. sent is the request body size, counted once per attempt.
func (r *requester) do(ctx context.Context, op string, sent int, attempt func(context.Context) error) error {
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err // no request is sent on a dead context
		}
		err := r.once(ctx, op, sent, attempt)
		if err == nil {
			return nil
		}
		if n >= r.cfg.MaxRetries || ctx.Err() != nil || !r.transient(err) {
			return err
		}
		r.m.retries.WithLabelValues(r.backend, op).Inc()
		if r.log != nil {
			r.log.Debug("retrying request", "operation", op, "attempt", n+1, "err", err)
		}
		t := time.NewTimer(r.cfg.backoff(n))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ctx.Err(), err)
		case <-t.C:
		}
	}
}

// once makes and counts a single attempt.
func (r *requester) once(ctx context.Context, op string, sent int, attempt func(context.Context) error) error {
	start := time.Now()
	err := attempt(ctx)
	r.m.requests.WithLabelValues(r.backend, op).Inc()
	r.m.duration.WithLabelValues(r.backend, op).Observe(time.Since(start).Seconds())
	if sent > 0 {
		r.m.sent.WithLabelValues(r.backend, op).Add(float64(sent))
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		// The transport's error hides why it gave up; say it.
		err = errors.Join(ctx.Err(), err)
	}
	r.m.failures.WithLabelValues(r.backend, op, failureReason(err)).Inc()
	return err
}

// backoff returns the pause before retry n+1: exponential from MinBackoff,
// capped at MaxBackoff, with "equal jitter" (a random half) so that clients
// throttled together do not retry together.
func (c RetryConfig) backoff(n int) time.Duration {
	d := c.MinBackoff << min(n, 30)
	if d <= 0 || d > c.MaxBackoff {
		d = c.MaxBackoff
	}
	half := d / 2
	return half + rand.N(half+1)
}

// transientStatus reports whether an HTTP status or S3 error code means the
// request may succeed if repeated: throttling (429, 503 SlowDown), server
// errors, and S3's 400 RequestTimeout for a body that arrived too slowly.
func transientStatus(status int, code string) bool {
	switch code {
	case "SlowDown", "RequestTimeout", "ConditionalRequestConflict", "RequestTimeTooSkewed", "InternalError", "ServiceUnavailable", "XMinioServerNotInitialized":
		return true
	}
	return status == 429 || status >= 500
}

// transientNetwork reports whether err is a failure to reach the server or a
// connection lost mid-request, rather than an answer from it.
func transientNetwork(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	var ue *url.Error
	return errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) ||
		errors.As(err, &ne) ||
		errors.As(err, &ue)
}
