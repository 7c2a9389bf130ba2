package exec

import (
	"encoding/binary"

	"github.com/sedimentdb/sediment/internal/keys"
)

// pagingState is where a SELECT's page ended. Its encoding, opaque to
// clients, which send it back as they got it:
//
//	+---------+-----------------+-----------------+----------------+
//	| version | key (uvarint    | remaining LIMIT | rows of the    |
//	| u8 = 1  | length + bytes) | uvarint (0: no  | key's partition|
//	|         |                 | limit)          | uvarint        |
//	+---------+-----------------+-----------------+----------------+
//
// The key is the storage key of the page's last row, or its partition's end
// key when that row was the partition's static row alone; the next page
// starts after it. A state is checked on the way in: a malformed one, or
// one whose key belongs to no partition of the query, is an Invalid error.
type pagingState struct {
	key       []byte
	remaining int
	partRows  int
}

const pagingVersion = 1

func encodePagingState(s *pagingState) []byte {
	b := []byte{pagingVersion}
	b = binary.AppendUvarint(b, uint64(len(s.key)))
	b = append(b, s.key...)
	b = binary.AppendUvarint(b, uint64(s.remaining))
	return binary.AppendUvarint(b, uint64(s.partRows))
}

// decodePagingState decodes a client's paging state; nil for none.
func decodePagingState(b []byte) (*pagingState, error) {
	if len(b) == 0 {
		return nil, nil
	}
	bad := invalidf("Invalid paging state")
	if b[0] != pagingVersion {
		return nil, bad
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, bad
	}
	s := &pagingState{key: b[k : k+int(n)]}
	b = b[k+int(n):]
	var nums [2]uint64
	for i := range nums {
		v, k := binary.Uvarint(b)
		if k <= 0 || v > 1<<31 {
			return nil, bad
		}
		nums[i], b = v, b[k:]
	}
	if len(b) != 0 {
		return nil, bad
	}
	if l, err := keys.PartitionPrefixLen(s.key); err != nil || l >= len(s.key) {
		return nil, bad
	}
	s.remaining, s.partRows = int(nums[0]), int(nums[1])
	return s, nil
}
