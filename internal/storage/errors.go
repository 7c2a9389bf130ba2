package storage

import "errors"

// The classes of failure of reads and writes. Each says what the caller may
// conclude and do; errors carry more detail and match their class with
// errors.Is.
var (
	// ErrOverloaded: the node refused the request, and did not apply it,
	// because it is short of memtable memory (flushes are not keeping up).
	// Retry later or elsewhere.
	ErrOverloaded = errors.New("storage: overloaded")
	// ErrUnavailable: no node that owns the data could be reached, so
	// nothing was sent. Ownership moves: retrying may succeed.
	ErrUnavailable = errors.New("storage: unavailable")
	// ErrTimeout: the request's fate is unknown, for its connection broke
	// while it was in flight: a write may or may not have been applied. A
	// request whose context's deadline ran out (context.DeadlineExceeded)
	// is in the same state; that error keeps its own identity.
	ErrTimeout = errors.New("storage: timeout")
	// ErrTooLarge: the mutation does not fit in one commitlog record.
	// Never retry it as it is.
	ErrTooLarge = errors.New("storage: mutation too large")
	// ErrFenced: the node no longer owns a token range the request
	// touches: another node took it over under a newer epoch (a flush's
	// manifest commit was fenced), and the node refuses every write.
	ErrFenced = errors.New("storage: fenced, token range owned by another node")
	// ErrFlushRaced: a node flushed and dropped memtable entries a scan had
	// yet to fetch, after the scan chose its SSTables, which may lack them.
	// Repeating the read is safe.
	ErrFlushRaced = errors.New("storage: a flush raced the scan's later memtable pages")
	// ErrInvalidMutation: the mutation was refused before it reached the
	// log (malformed keys or values, or no entries): the caller's bug.
	// Never retry it.
	ErrInvalidMutation = errors.New("storage: invalid mutation")
	// ErrClosed: the node is shutting down.
	ErrClosed = errors.New("storage: node closed")
)

// Retriable reports whether err is a transient failure after which the same
// request may succeed. A write that failed with ErrTimeout may already have
// been applied: whether to send it again is the caller's decision (the same
// timestamped cells applied twice reconcile to once, but not every write is
// that plain), and no layer below the caller resends one by itself.
func Retriable(err error) bool {
	return errors.Is(err, ErrOverloaded) || errors.Is(err, ErrUnavailable) ||
		errors.Is(err, ErrTimeout) || errors.Is(err, ErrFlushRaced)
}
