// Package kv defines the ordered key-value iterator shared by the memtable and
// SSTable readers, and the merging iterator that combines them. Keys order by
// bytes.Compare; the data model gives them their meaning.
package kv

// Iterator walks entries in ascending key order and can change direction.
// Positioning methods report whether the iterator is at a valid entry; when
// they return false, Error tells whether iteration ended or failed.
// Key and Value stay valid only until the next positioning call.
// An iterator is not safe for concurrent use.
type Iterator interface {
	// SeekGE moves to the first entry whose key is >= key.
	SeekGE(key []byte) bool
	// SeekLT moves to the last entry whose key is < key.
	SeekLT(key []byte) bool
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	Key() []byte
	Value() []byte
	Error() error
	Close() error
}

// MergeFunc reconciles two values stored under one key, appending the result
// to dst. It must be associative and commutative (the data model's
// reconciliation is), so the order in which sources are merged never matters.
// An error means a value could not be decoded.
type MergeFunc func(dst, a, b []byte) ([]byte, error)
