package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/storage"
)

// ErrCorrupt marks a commitlog record that does not decode.
var ErrCorrupt = errors.New("ingest: corrupt mutation record")

// The first byte of a commitlog record says what it holds, in which
// version of the format.
const (
	recordMutations = 1 // mutations
	recordTruncate  = 2 // the truncation of a table
)

// appendTruncate appends the record of the truncation of table.
func appendTruncate(dst []byte, table storage.TableID) []byte {
	return binary.AppendUvarint(append(dst, recordTruncate), uint64(table))
}

// decodeTruncate decodes a truncation record.
func decodeTruncate(rec []byte) (storage.TableID, error) {
	if len(rec) == 0 || rec[0] != recordTruncate {
		return 0, fmt.Errorf("%w: not a truncation", ErrCorrupt)
	}
	t, n := binary.Uvarint(rec[1:])
	if n <= 0 || t > 1<<32-1 || 1+n != len(rec) {
		return 0, fmt.Errorf("%w: bad truncation", ErrCorrupt)
	}
	return storage.TableID(t), nil
}

// validate checks what the shard relies on: every key is a storage key whose
// kind matches its value's, and every value decodes. A value that could not
// be merged must never reach the log, where replay would meet it forever.
func validate(m *storage.Mutation) error {
	if len(m.Entries) == 0 {
		return fmt.Errorf("%w: no entries", storage.ErrInvalidMutation)
	}
	for i, e := range m.Entries {
		kk, err := keys.EntryKind(e.Key)
		if err != nil {
			return fmt.Errorf("%w: entry %d: %w", storage.ErrInvalidMutation, i, err)
		}
		if _, err := keys.PartitionPrefixLen(e.Key); err != nil {
			return fmt.Errorf("%w: entry %d: %w", storage.ErrInvalidMutation, i, err)
		}
		vk, err := model.KindOf(e.Value)
		if err != nil {
			return fmt.Errorf("%w: entry %d: %w", storage.ErrInvalidMutation, i, err)
		}
		if (kk == keys.KindHeader) != (vk == model.KindHeader) {
			return fmt.Errorf("%w: entry %d: key kind %d, value kind %d", storage.ErrInvalidMutation, i, kk, vk)
		}
		if _, err := model.ValueStats(e.Value); err != nil {
			return fmt.Errorf("%w: entry %d: %w", storage.ErrInvalidMutation, i, err)
		}
	}
	return nil
}

// appendMutation appends the encoding of m to dst.
func appendMutation(dst []byte, m *storage.Mutation) []byte {
	dst = binary.AppendUvarint(dst, uint64(m.Table))
	dst = binary.AppendUvarint(dst, uint64(len(m.Entries)))
	for _, e := range m.Entries {
		dst = binary.AppendUvarint(dst, uint64(len(e.Key)))
		dst = append(dst, e.Key...)
		dst = binary.AppendUvarint(dst, uint64(len(e.Value)))
		dst = append(dst, e.Value...)
	}
	return dst
}

// decodeRecord calls fn for every mutation of a record, in order. The
// mutation and its entries alias rec and are valid only during the call.
func decodeRecord(rec []byte, fn func(m *storage.Mutation) error) error {
	if len(rec) == 0 {
		return fmt.Errorf("%w: empty", ErrCorrupt)
	}
	if rec[0] != recordMutations {
		return fmt.Errorf("%w: record type %d", ErrCorrupt, rec[0])
	}
	if len(rec) == 1 {
		return fmt.Errorf("%w: no mutations", ErrCorrupt)
	}
	return decodeMutations(rec[1:], fn)
}

// decodeMutations calls fn for each mutation encoded in b, in order.
func decodeMutations(b []byte, fn func(m *storage.Mutation) error) error {
	rec := b
	var m storage.Mutation
	for len(b) > 0 {
		table, n := binary.Uvarint(b)
		if n <= 0 || table > 1<<32-1 {
			return fmt.Errorf("%w: bad table at byte %d", ErrCorrupt, len(rec)-len(b))
		}
		b = b[n:]
		count, n := binary.Uvarint(b)
		// Each entry takes at least two bytes, which bounds the allocation.
		if n <= 0 || count == 0 || count > uint64(len(b)-n)/2 {
			return fmt.Errorf("%w: bad entry count at byte %d", ErrCorrupt, len(rec)-len(b))
		}
		b = b[n:]
		m.Table = storage.TableID(table)
		m.Entries = m.Entries[:0]
		for range count {
			var key, val []byte
			var ok bool
			if key, b, ok = cutBytes(b); !ok || len(key) == 0 {
				return fmt.Errorf("%w: bad key at byte %d", ErrCorrupt, len(rec)-len(b))
			}
			if val, b, ok = cutBytes(b); !ok || len(val) == 0 {
				return fmt.Errorf("%w: bad value at byte %d", ErrCorrupt, len(rec)-len(b))
			}
			m.Entries = append(m.Entries, storage.Entry{Key: key, Value: val})
		}
		if err := fn(&m); err != nil {
			return err
		}
	}
	return nil
}

// cutBytes splits a uvarint-length-prefixed byte string off b.
func cutBytes(b []byte) (s, rest []byte, ok bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, b, false
	}
	return b[n : n+int(l) : n+int(l)], b[n+int(l):], true
}
