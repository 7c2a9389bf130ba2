// Package wire encodes and decodes the CQL native protocol, versions 3,
// 4 and 5 (apache/cassandra doc/native_protocol_v4.spec and _v5.spec):
// frames, every request and response message, the [option] encoding of
// types, the lz4 and snappy body compression of v3 and v4, and the
// checksummed segments of v5 (segment.go).
//
// # Frames
//
// Every message is one frame (integers big-endian):
//
//	+---------+---------+-----------------+---------+-----------------+--------+
//	| version | flags   | stream (int16)  | opcode  | length (uint32) | body   |
//	| (u8)    | (u8)    |                 | (u8)    |                 |        |
//	+---------+---------+-----------------+---------+-----------------+--------+
//	  0x03 to   0x01      a request's ID,   what the  bytes of body     length
//	  0x05;     compressed, echoed in its   body is                     bytes
//	  | 0x80 in 0x02 tracing, answer; -1 for
//	  responses 0x04 payload, events
//	            0x08 warnings
//
// Versions 1 and 2 had an 8-byte header with a one-byte stream; ReadFrame
// still reads it, so that such clients can be told which versions are
// supported in a frame they read (UnsupportedVersionError).
//
// A body may start with an envelope the flags announce, in this order:
// the tracing ID ([uuid], responses), warnings ([string list], responses)
// and a custom payload ([bytes map]); then comes the message. With
// compression the whole body is compressed: lz4 as a 4-byte big-endian
// uncompressed length then one LZ4 block, snappy as one Snappy block.
// STARTUP and its answer are never compressed.
//
// # Version 5
//
// v5 calls these frames envelopes and, once STARTUP is answered, carries
// them in segments with CRC24-checked headers and CRC32-checked payloads,
// lz4-compressed when the client asked for lz4 (see segment.go); the
// envelope's compression flag means nothing there. Its messages differ
// from v4's in: query and batch flags are an [int], adding a keyspace
// (0x80, [string]) and now_in_seconds (0x100, [int]) after the timestamp;
// PREPARE has [int] flags and an optional keyspace; EXECUTE names the
// result metadata ID its client knows after the prepared ID; PREPARED
// carries a result metadata ID (MetadataID), and rows whose columns are
// not the ones the client named say so with METADATA_CHANGED (0x0008)
// and the new ID after the paging state; Read_failure and Write_failure
// carry a reason map of replica addresses to failure codes in place of a
// count, a CAS Write_timeout its contentions, and there are CDC and
// CAS_WRITE_UNKNOWN errors; duration has its own type ID.
//
// # Messages
//
//	opcode  request          body
//	0x01    STARTUP          [string map] options (CQL_VERSION, COMPRESSION)
//	0x05    OPTIONS          empty
//	0x07    QUERY            [long string] query, query parameters
//	0x09    PREPARE          [long string] query
//	0x0A    EXECUTE          [short bytes] id, query parameters
//	0x0B    REGISTER         [string list] event types
//	0x0D    BATCH            type, statements, consistency, flags...
//	0x0F    AUTH_RESPONSE    [bytes] SASL token
//
//	opcode  response         body
//	0x00    ERROR            [int] code, [string] message, code's fields
//	0x02    READY            empty
//	0x03    AUTHENTICATE     [string] authenticator class
//	0x06    SUPPORTED        [string multimap] options
//	0x08    RESULT           [int] kind: Void, Rows, Set_keyspace,
//	                         Prepared, Schema_change; then its body
//	0x0C    EVENT            [string] type, then the change
//	0x0E    AUTH_CHALLENGE   [bytes] SASL token
//	0x10    AUTH_SUCCESS     [bytes] SASL token
//
// Query parameters are [consistency] [byte] flags ([int] in v5), then what the flags
// announce: values (0x01, each preceded by a [string] name with 0x40),
// skip metadata (0x02), page size (0x04), paging state (0x08), serial
// consistency (0x10) and default timestamp (0x20). A [value] is [bytes]
// whose length -1 is null and, from v4, -2 unset.
//
// Version 3 differs from 4 in what it lacks: unset values, the partition
// key indexes of prepared metadata, the types date, time, smallint and
// tinyint (sent to v3 clients as custom types named by their Cassandra
// class, as Cassandra does), warnings and custom payloads, and the
// Read_failure, Function_failure and Write_failure errors. duration has
// an ID only from v5, so v3 and v4 clients get it as the custom type
// org.apache.cassandra.db.marshal.DurationType.
//
// # Errors
//
// Decoders never trust a length: every count is checked against the bytes
// left before anything is allocated, and every failure is a Protocol
// *Error worded as Cassandra words it, so a server can send it as it is.
// An *Error is also how any layer tells the frontend which ERROR to send.
package wire
