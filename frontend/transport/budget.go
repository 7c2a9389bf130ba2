package transport

import "sync"

// budget counts the bytes held for requests, of one connection or of the
// whole server, against a limit, in the way of Cassandra's
// native_transport_max_concurrent_requests_in_bytes: a request's frame
// and a reservation for its answer from when it is read until its
// answer is queued, then the answer until it is written. The count may
// pass the limit (an answer is larger than its reservation, or is
// already in memory); what the limit stops is reading more.
type budget struct {
	limit int64

	mu   sync.Mutex
	used int64
	// below is closed while used < limit, and replaced by an open
	// channel when used reaches the limit.
	below chan struct{}
}

func newBudget(limit int64) *budget {
	b := &budget{limit: limit, below: make(chan struct{})}
	close(b.below)
	return b
}

// add counts n more bytes, or frees -n.
func (b *budget) add(n int64) {
	b.mu.Lock()
	was := b.used >= b.limit
	b.used += n
	now := b.used >= b.limit
	switch {
	case was && !now:
		close(b.below)
	case !was && now:
		b.below = make(chan struct{})
	}
	b.mu.Unlock()
}

// load returns the bytes counted.
func (b *budget) load() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// full reports whether the limit is reached.
func (b *budget) full() bool { return b.load() >= b.limit }

// wait waits until the count is below the limit; false when done closed
// first.
func (b *budget) wait(done <-chan struct{}) bool {
	b.mu.Lock()
	below := b.below
	b.mu.Unlock()
	select {
	case <-below:
		return true
	case <-done:
		return false
	}
}
