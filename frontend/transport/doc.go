// Package transport serves the CQL native protocol (versions 3, 4 and 5;
// see package wire for the frames) and hands statements to a Handler.
//
// # Connections
//
// Each connection has one reader and one writer goroutine. The reader
// decodes frames and answers the handshake (OPTIONS, STARTUP,
// AUTH_RESPONSE, REGISTER) itself, in order; QUERY, PREPARE, EXECUTE and
// BATCH each run on a worker goroutine of their own (workers outlive
// statements so that their grown stacks serve again), so that many
// requests of one connection execute at once and are answered as they
// finish, whatever their order. The reader reads a frame only with a free
// slot of the connection's in-flight bound, and handles it only with one
// of the server's (taken after the read, so that idle connections hold
// none): when either is full it stops reading, and TCP pushes back on the
// client.
//
// Memory is bounded by bytes too, per connection and for the server (see
// budget): a statement's frame and a reservation for its answer count
// from its read until its answer is queued, then the answer until it is
// written. The reservation follows the connection's answers (as large as
// the last, or half the previous one), so that a connection of large
// answers has few executing at once. The reader stops reading while the
// connection's count is over its bound, and before running a statement
// while the server's is (or answers Overloaded to a THROW_ON_OVERLOAD
// client); a statement that finishes while its connection's count is over
// the bound waits for the writer before queueing its answer. So a client
// that sends without reading holds about its connection's bound, and the
// handshake, never held up by the server's count, still lets others in.
// The writer sends, in one write, every answer queued while its previous
// write was in progress.
//
// Connections are bounded in number, overall (within the process's file
// descriptor limit less reservedFDs, kept for the node itself) and per
// client IP address; one not ready within the handshake timeout of its
// accept, or idle past the idle timeout once ready, is closed.
//
// The handshake follows Cassandra 4 (its InitialConnectionHandler and
// ServerConnection): until STARTUP only OPTIONS and STARTUP are accepted,
// each answered in its frame's version, and STARTUP fixes the connection's
// version; with password authentication STARTUP is answered with
// AUTHENTICATE (org.apache.cassandra.auth.PasswordAuthenticator) and only
// AUTH_RESPONSE, a SASL PLAIN token, is accepted until it succeeds. Once
// ready, AUTH_RESPONSE logs in again, as Cassandra allows.
//
// # Version 5
//
// A v5 STARTUP is answered, like every frame before it, as a plain
// envelope; from the answer on (READY or AUTHENTICATE) both directions
// travel in segments. The reader then reads envelopes through a
// wire.SegmentReader, which checks each segment's CRCs and joins
// envelopes split over segments; a CRC mismatch closes the connection,
// since nothing after it can be trusted. The writer wraps each write's
// envelopes in segments (wire.AppendSegments, into a reused buffer):
// small answers packed together in self-contained segments, an answer
// over 128 KiB split over segments of its own, all lz4-compressed when
// the client asked for lz4 (the only compression v5 has; snappy is
// refused in a v5 STARTUP). EXECUTE answers follow the result metadata
// ID the client sent (see Handler).
//
// # Events
//
// REGISTER subscribes a connection to event types; Server.Publish pushes
// an EVENT on stream -1 to every connection subscribed to its type. The
// executor publishes SCHEMA_CHANGE after DDL; TOPOLOGY_CHANGE and
// STATUS_CHANGE come from the catalog's members. Delivery is best effort:
// a client that does not read misses events rather than holding up the
// publisher.
//
// # Errors
//
// A frame in a version other than 3, 4 or 5 is answered with a Protocol error
// that names the supported versions, framed in the client's own version
// where its framing is known (see wire.UnsupportedVersionError), and the
// connection is closed; drivers then reconnect with a lower version. A
// frame longer than the maximum is skipped and answered with an Invalid
// error on its stream, as Cassandra answers it; a malformed body, an
// unknown opcode or one in the wrong direction gets a Protocol error worded
// as Cassandra words it, and a response frame from a started client is
// dropped, as Cassandra drops it. A connection is closed only
// when its byte stream is out of step. A Handler error that is not a
// *wire.Error, and a Handler panic, is logged (sampled) and sent as a
// Server error without its text.
package transport
