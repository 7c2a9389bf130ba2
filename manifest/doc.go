// Package manifest is Sediment's catalog: the schema, the live SSTables of
// every table, the members of the cluster, token-range ownership and
// leases, kept in NATS JetStream key-value buckets that every node watches.
// NATS is never on the per-request data path: nodes read the catalog from a
// View, an in-memory copy kept current by KV watchers.
//
// # Buckets and keys
//
// Every bucket is named "<cluster>_<kind>" (cluster names are letters,
// digits and '-', so the last '_' splits the name), keeps one revision per
// key, and stores on file:
//
//	bucket            key                    document
//	<c>_schema        ks.<keyspace>          Keyspace: replication, tables, types
//	<c>_sstables      t.<table ID>.<%05d r>  TableSSTables: live SSTables in range r,
//	                                         the garbage that left them, and
//	                                         per-shard flush watermarks
//	<c>_ownership     ranges                 Ranges: the fixed number of ranges
//	                  range.<%05d index>     Ownership: owner and epoch
//	<c>_members       m.<node ID>            Member: roles, address, heartbeat
//	<c>_leases        l.<lease name>         Lease: holder and expiry
//	<c>_roles         role.<role name>       Role: password hash, LOGIN, SUPERUSER,
//	                                         OPTIONS, roles granted, permissions
//	<c>_requests      c.<table ID>           CompactionRequest: a major compaction
//	                                         asked for and when it was done (made
//	                                         by the first request)
//
// Names in keys are escaped: ASCII letters, digits, '_' and '-' stand for
// themselves and every other byte is "=XX" (upper-case hex), so any CQL
// identifier maps to one valid key token and back.
//
// SSTables are kept per table and token range: a flush commits to its own
// range's document without contending with other ranges, and no document
// grows with the table's total SSTable count.
//
// A keyspace, with all its tables and types, is one document: a DDL
// statement is then a single compare-and-set. Table IDs (UUIDs) and column
// IDs (uint32, per table, from NextColumnID) are assigned at creation and
// never reused; dropped columns are remembered with their drop time. The
// schema version is a name-based UUID over every keyspace's own random
// version, so it changes with every change and all nodes derive the same
// one from the same catalog.
//
// A table has one handle, its *Table: it names its keyspace, its ID, and
// its ShortID, the first four bytes of the ID, by which memtables,
// commitlogs and SSTable object keys know it (CreateTable keeps them
// distinct). A Schema indexes its tables by both once (NewSchema), and a
// View builds its Schema once per change of the schema bucket, so lookups
// by ID (Schema.TableByID, TablesByShortID, View.TableByID) cost a map
// read.
//
// # Values
//
// Values are JSON: the catalog is small, changes rarely, and an operator can
// read it with the nats CLI; decoding is strict (unknown fields are
// ErrCorrupt), so a value written by a newer format is never half-read.
// Every value is an envelope:
//
//	{"version": 7, "data": {...document...}}
//	{"version": 8, "deleted": true}
//
// Version grows by one with every change of the key. A deletion is a
// tombstone envelope, not a KV delete, so a key's version never goes back,
// even when a dropped keyspace is created again.
//
// # Changes
//
// Every change reads the key, runs the caller's mutation on the decoded
// document, and writes the result with a compare-and-set on the key's
// revision (KV Create for a new key, Update otherwise). A writer that loses
// reloads and re-runs the mutation on the fresh value, up to MaxAttempts
// times with jittered exponential backoff, and then fails with ErrConflict.
// Mutations must therefore depend only on the value they are given.
//
// # Fencing
//
// The token ring is cut into a fixed number of equal ranges (RangeOf,
// RangeBounds); every SSTable commit names its range and its SSTables must
// lie inside it. Assign gives a range to a node under a new, larger epoch. A
// commit that carries an epoch is rejected with ErrFenced unless it is the
// range's current one, or the commit is already applied (a retry, which
// only archives it). The epoch is read right before each compare-and-set attempt; an Assign that
// lands between that read and the write cannot stop that one commit (NATS KV
// has no multi-key transaction), but every later commit of the former owner
// fails. Such a late commit is harmless to data: SSTables hold acknowledged
// writes, and merging is idempotent and order-free. Compaction swaps are
// guarded by the compare-and-set itself: removing an SSTable that is no
// longer live fails with ErrMissingSSTable.
//
// # Garbage
//
// An object leaves the live set by a Commit's Remove (compaction inputs),
// by DropSSTables (TRUNCATE, DROP) or, never having joined it, by a
// Commit's Discard (failed outputs). It then goes on the garbage list of
// its table and range, in the same document and so in the same
// compare-and-set: no crash leaves an object both unlisted and undeleted,
// or listed while live. Each entry records when it became garbage; a
// collector (package gc) deletes objects older than a grace period and
// then removes them with Collected. A document left with neither SSTables,
// garbage nor flush watermarks (see Flushes) is deleted. An add of an
// SSTable already on the list counts as applied, so a retried flush never
// revives an object bound for deletion.
//
// # The copy in the bucket
//
// After its compare-and-set wins, every change of the schema, SSTable,
// ownership and roles buckets is written, before the call returns, to the object
// store as an immutable object:
//
//	manifest/<bucket>/<key>/<version, 20 digits>   the envelope, byte for byte
//
// A change is durable enough to rebuild from only once the call has
// returned nil; if the object cannot be written the call fails with
// ErrNotArchived although NATS holds the change, and retrying the same change
// (retries are idempotent: an already applied change writes nothing new)
// writes the missing object. Restore rebuilds those buckets of every cluster
// in the object store from the newest version of each key, so the catalog
// survives the loss of NATS; older versions remain for reading the catalog
// as it was. Members and leases are not copied: they describe live processes,
// which rewrite them within one heartbeat or lease period; nor are
// compaction requests, which an operator can make again.
//
// # Liveness
//
// A member is live while its last heartbeat is younger than a maximum age
// the reader chooses (Member.Live). A lease is held until its expiry;
// holders renew it before then.
package manifest
