package manifest

import "errors"

// Errors a caller may match with errors.Is.
var (
	// ErrConflict means a compare-and-set kept losing to concurrent writers
	// until the retry budget ran out.
	ErrConflict = errors.New("manifest: too many concurrent updates")
	// ErrFenced means the committer's ownership epoch is not the current
	// one: its token range has been reassigned.
	ErrFenced = errors.New("manifest: stale ownership epoch")
	// ErrExists means the keyspace, table, type or column already exists.
	ErrExists = errors.New("manifest: already exists")
	// ErrNotFound means the keyspace, table, type, column, range or lease
	// does not exist.
	ErrNotFound = errors.New("manifest: not found")
	// ErrInvalid means a definition or change is malformed.
	ErrInvalid = errors.New("manifest: invalid")
	// ErrLeaseHeld means another holder owns an unexpired lease.
	ErrLeaseHeld = errors.New("manifest: lease held by another holder")
	// ErrMissingSSTable means a commit removes an SSTable that is not live,
	// typically because a concurrent compaction already replaced it.
	ErrMissingSSTable = errors.New("manifest: sstable not live")
	// ErrNotArchived means a change is committed in NATS but its copy in the
	// object store could not be written. The change must not be relied on
	// until a retry of the same change succeeds (retries are idempotent).
	ErrNotArchived = errors.New("manifest: change not archived")
	// ErrArchiveConflict means the object store already holds a different
	// value for the same key and version.
	ErrArchiveConflict = errors.New("manifest: archive holds a different version")
	// ErrCorrupt means a stored value cannot be decoded.
	ErrCorrupt = errors.New("manifest: corrupt value")
	// ErrRestoreConflict means Restore found a key in NATS whose value
	// differs from the newest archived one.
	ErrRestoreConflict = errors.New("manifest: restore target holds a different value")
)
