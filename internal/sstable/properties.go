package sstable

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// NoDeletionTime is the local deletion time of data that never expires.
const NoDeletionTime = math.MaxInt64

// EntryStats are the statistics of one entry, reported by
// WriterOptions.Stats and aggregated into Properties.
type EntryStats struct {
	MinTimestamp, MaxTimestamp int64 // write timestamps (µs) in the entry
	// MinLocalDeletionTime is the earliest time a tombstone or expiring cell
	// of the entry was or will be deleted, or NoDeletionTime.
	MinLocalDeletionTime    int64
	Rows, Cells, Tombstones uint64
}

// Properties describe a table. They are stored in the properties block.
type Properties struct {
	FormatVersion   uint32
	Compression     Compression
	BlockSize       uint64 // target data block size
	BloomBitsPerKey uint64 // 0 without a filter

	FirstKey, LastKey []byte
	Entries           uint64
	Partitions        uint64 // distinct partition prefixes
	DataBlocks        uint64

	// Stored sizes, trailers included.
	DataSize, IndexSize, FilterSize uint64

	// Aggregates of WriterOptions.Stats. With no stats, MinTimestamp is
	// math.MaxInt64, MaxTimestamp math.MinInt64 and MinLocalDeletionTime
	// NoDeletionTime.
	MinTimestamp, MaxTimestamp int64
	MinLocalDeletionTime       int64
	Rows, Cells, Tombstones    uint64

	WriterID  string
	CreatedAt time.Time // zero if not given
}

func (p *Properties) add(s EntryStats) {
	p.MinTimestamp = min(p.MinTimestamp, s.MinTimestamp)
	p.MaxTimestamp = max(p.MaxTimestamp, s.MaxTimestamp)
	p.MinLocalDeletionTime = min(p.MinLocalDeletionTime, s.MinLocalDeletionTime)
	p.Rows += s.Rows
	p.Cells += s.Cells
	p.Tombstones += s.Tombstones
}

// Property tags. A tag's number and value encoding never change; new
// properties get new tags, and readers skip tags they do not know.
const (
	propFormatVersion = iota + 1
	propCompression
	propBlockSize
	propBloomBitsPerKey
	propFirstKey
	propLastKey
	propEntries
	propPartitions
	propDataBlocks
	propDataSize
	propIndexSize
	propFilterSize
	propMinTimestamp
	propMaxTimestamp
	propMinLocalDeletionTime
	propRows
	propCells
	propTombstones
	propWriterID
	propCreatedAt
)

// encode appends the properties block contents to dst.
func (p *Properties) encode(dst []byte) []byte {
	var tmp [binary.MaxVarintLen64]byte
	field := func(tag int, v []byte) {
		dst = binary.AppendUvarint(dst, uint64(tag))
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		dst = append(dst, v...)
	}
	uint := func(tag int, v uint64) { field(tag, tmp[:binary.PutUvarint(tmp[:], v)]) }
	sint := func(tag int, v int64) { field(tag, tmp[:binary.PutVarint(tmp[:], v)]) }

	uint(propFormatVersion, uint64(p.FormatVersion))
	uint(propCompression, uint64(p.Compression))
	uint(propBlockSize, p.BlockSize)
	uint(propBloomBitsPerKey, p.BloomBitsPerKey)
	field(propFirstKey, p.FirstKey)
	field(propLastKey, p.LastKey)
	uint(propEntries, p.Entries)
	uint(propPartitions, p.Partitions)
	uint(propDataBlocks, p.DataBlocks)
	uint(propDataSize, p.DataSize)
	uint(propIndexSize, p.IndexSize)
	uint(propFilterSize, p.FilterSize)
	sint(propMinTimestamp, p.MinTimestamp)
	sint(propMaxTimestamp, p.MaxTimestamp)
	sint(propMinLocalDeletionTime, p.MinLocalDeletionTime)
	uint(propRows, p.Rows)
	uint(propCells, p.Cells)
	uint(propTombstones, p.Tombstones)
	field(propWriterID, []byte(p.WriterID))
	if !p.CreatedAt.IsZero() {
		sint(propCreatedAt, p.CreatedAt.UnixNano())
	}
	return dst
}

// decodeProperties parses a properties block. Byte fields are copied so the
// result does not pin the block.
func decodeProperties(b []byte) (*Properties, error) {
	p := &Properties{
		MinTimestamp:         math.MaxInt64,
		MaxTimestamp:         math.MinInt64,
		MinLocalDeletionTime: NoDeletionTime,
	}
	bad := func(what string) (*Properties, error) {
		return nil, fmt.Errorf("%w: properties: %s", ErrCorrupt, what)
	}
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return bad("bad tag")
		}
		b = b[n:]
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return bad(fmt.Sprintf("bad length of tag %d", tag))
		}
		v := b[n : n+int(l)]
		b = b[n+int(l):]
		if err := p.set(tag, v); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// set decodes the value of one tagged field.
func (p *Properties) set(tag uint64, v []byte) error {
	switch tag {
	case propFirstKey:
		p.FirstKey = append([]byte(nil), v...)
		return nil
	case propLastKey:
		p.LastKey = append([]byte(nil), v...)
		return nil
	case propWriterID:
		p.WriterID = string(v)
		return nil
	}
	if s := p.signed(tag); s != nil {
		x, n := binary.Varint(v)
		if n != len(v) {
			return fmt.Errorf("%w: properties: bad value of tag %d", ErrCorrupt, tag)
		}
		*s = x
		return nil
	}
	x, n := binary.Uvarint(v)
	switch tag {
	case propFormatVersion:
		if n != len(v) || x > math.MaxUint32 {
			return fmt.Errorf("%w: properties: bad format version", ErrCorrupt)
		}
		p.FormatVersion = uint32(x)
	case propCompression:
		if n != len(v) || x > math.MaxUint8 || !Compression(x).valid() {
			return fmt.Errorf("%w: properties: bad compression", ErrCorrupt)
		}
		p.Compression = Compression(x)
	case propCreatedAt:
		t, n := binary.Varint(v)
		if n != len(v) {
			return fmt.Errorf("%w: properties: bad creation time", ErrCorrupt)
		}
		p.CreatedAt = time.Unix(0, t).UTC()
	default:
		u := p.unsigned(tag)
		if u == nil {
			return nil // a newer writer's property
		}
		if n != len(v) {
			return fmt.Errorf("%w: properties: bad value of tag %d", ErrCorrupt, tag)
		}
		*u = x
	}
	return nil
}

func (p *Properties) signed(tag uint64) *int64 {
	switch tag {
	case propMinTimestamp:
		return &p.MinTimestamp
	case propMaxTimestamp:
		return &p.MaxTimestamp
	case propMinLocalDeletionTime:
		return &p.MinLocalDeletionTime
	}
	return nil
}

func (p *Properties) unsigned(tag uint64) *uint64 {
	switch tag {
	case propBlockSize:
		return &p.BlockSize
	case propBloomBitsPerKey:
		return &p.BloomBitsPerKey
	case propEntries:
		return &p.Entries
	case propPartitions:
		return &p.Partitions
	case propDataBlocks:
		return &p.DataBlocks
	case propDataSize:
		return &p.DataSize
	case propIndexSize:
		return &p.IndexSize
	case propFilterSize:
		return &p.FilterSize
	case propRows:
		return &p.Rows
	case propCells:
		return &p.Cells
	case propTombstones:
		return &p.Tombstones
	}
	return nil
}
