package rpc

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/kv"
)

// DigestSize is the length of a Digest.
const DigestSize = sha256.Size

// Digest names the exact stored content of one partition: the SHA-256 of
// its merged entries. A frontend reads a partition, decides a condition on
// it, and sends its write with the digest of what it read (ApplyIf); the
// node applies the write only if the partition's digest is unchanged, so a
// condition decided far from the node holds when the write lands.
//
// A cryptographic hash, not a fast one: two different contents with one
// digest would let a write through on a condition decided over other data,
// and values are user data.
type Digest [DigestSize]byte

// PartitionDigest hashes the entries of the partition with the given
// prefix (keys.AppendPartitionPrefix) that it yields, in key order, each
// as its key and its value, both length-prefixed (uvarint). it may hold
// other keys too; only those of the partition count.
//
// Both sides of ApplyIf compute it over the partition merged with
// model.Merge, the frontend over the owners' memtable pages and the SSTables
// of its View, the node over its memtables and the SSTables of its
// manifest. Merge is deterministic byte for byte, associative and
// commutative, so equal data gives equal bytes however it is split between
// memtables and SSTables: a flush between the read and the write does not
// change the digest.
func PartitionDigest(it kv.Iterator, prefix []byte) (Digest, error) {
	end := keys.AppendPartitionEnd(nil, prefix)
	h := sha256.New()
	var lens [2 * binary.MaxVarintLen64]byte
	for ok := it.SeekGE(prefix); ok && bytes.Compare(it.Key(), end) < 0; ok = it.Next() {
		k, v := it.Key(), it.Value()
		n := binary.PutUvarint(lens[:], uint64(len(k)))
		h.Write(lens[:n])
		h.Write(k)
		n = binary.PutUvarint(lens[:], uint64(len(v)))
		h.Write(lens[:n])
		h.Write(v)
	}
	var d Digest
	if err := it.Error(); err != nil {
		return d, err
	}
	h.Sum(d[:0])
	return d, nil
}
