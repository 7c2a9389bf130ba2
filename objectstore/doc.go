// Package objectstore is Sediment's narrow interface to object storage, and
// its backends: file (a local directory, the all-in-one default), s3
// (aws-sdk-go-v2: AWS and custom endpoints) and minio (minio-go: MinIO and
// other S3-compatible stores). New builds the one a Config names.
//
// # Semantics every backend keeps
//
//   - Keys are slash-separated paths of non-empty segments, at most 1024
//     bytes; no segment is "." or "..".
//   - An object becomes visible whole, or not at all: a Writer shows nothing
//     until Close succeeds, and a failed, aborted or cancelled upload leaves
//     nothing behind.
//   - PutIf(IfAbsent) creates, and PutIf(IfMatch(etag)) replaces, only if the
//     condition holds when the write happens; otherwise IsPreconditionFailed.
//   - List visits keys in lexical byte order; Delete of a missing key
//     succeeds; IsNotFound classifies a missing key for every backend.
//
// The acceptance suite in objtest checks all of this for every backend and
// every wrapper.
//
// # Requests, retries and timeouts (s3, minio)
//
// Each call makes one logical operation out of attempts. Each attempt is
// counted in sediment_objectstore_requests_total{backend,operation}, since
// the bill is made of them, and timed. Throttling (429, 503 SlowDown), 5xx
// answers and connection failures are retried with exponential backoff and
// jitter; other 4xx answers are final. The SDKs' own retries are off, so
// that retries never multiply. Config.Timeout bounds each operation,
// retries included; for a read it runs until the body is closed, so a
// server that stops answering cannot hang a reader.
//
// A Writer buffers one part (Config.PartSize). An object that fits is sent
// with a single PUT on Close; a larger one becomes a multipart upload with up
// to Config.UploadConcurrency parts in flight, each retried on its own, so
// memory stays within (concurrency+1) parts. Every body carries a CRC32C
// checksum instead of a signed SHA-256.
//
// # File backend layout
//
// Each object is a file at dir/<key>, written to dir/.sediment-tmp, synced,
// renamed (or hard-linked, for PutIf(IfAbsent)) into place and its directory
// synced. The file holds the object's bytes followed by a trailer:
//
//	+--------------------+-----------------------+
//	| object bytes ...   | MD5 (16) | magic (8)  |
//	+--------------------+-----------------------+
//
// The magic is "sdmntob1" (the last byte is the format version). The ETag
// is the hex MD5, the same as S3 gives a single-part upload. A file without
// a valid trailer is reported as ErrCorrupt, never served as data. A key
// cannot be both an object and a directory of other keys ("a" and "a/b").
// PutIf(IfMatch) is atomic among the callers of one Store: give each
// directory a single Store (creation with IfAbsent is atomic even across
// processes, by hard link).
package objectstore
