// Package commitlog is the write-ahead log of one ingest shard. A mutation
// batch is appended here, and acknowledged, before the shard applies it to its
// memtable; after a crash, replaying the log rebuilds what the memtable held.
//
// # Segments
//
// The log is a directory of segment files of about Options.SegmentSize bytes,
// named by a sequence number in 16 hex digits so that they sort in log order
// (0000000000000001.log, 0000000000000002.log, ...). Only the newest segment
// is ever written; a segment is synced before the next one is created, so
// every segment but the newest is complete. A segment starts with a header:
//
//	+---------+---------+----------+----------+--------------+----------+
//	| magic   | version | reserved | shard    | sequence     | CRC      |
//	| "SDCL"  | uint16  | uint16=0 | uint32   | uint64       | uint32   |
//	+---------+---------+----------+----------+--------------+----------+
//	  0         4         6          8          12             20     24
//
// followed by records. Each record is a frame:
//
//	+------------+----------+------------+------------------------+
//	| header CRC | length   | data CRC   | payload (length bytes) |
//	| uint32     | uint32   | uint32     |                        |
//	+------------+----------+------------+------------------------+
//	  0            4          8            12
//
// Integers are little-endian. CRCs are CRC-32C (Castagnoli). The segment
// header CRC covers bytes 0-20. The data CRC covers the payload; the header
// CRC covers the segment's sequence number (8 bytes, not stored in the frame)
// followed by length and data CRC, so a frame copied from another segment, or
// a length damaged on disk, is detected before the length is trusted.
//
// # Torn tails and corruption
//
// A crash in the middle of a write leaves a prefix of it on disk, so only the
// end of the newest segment can hold a partial ("torn") record. When reading
// the newest segment, a frame that fails its checks is a torn tail if nothing
// follows it: its header or payload runs past the end of the file, or it is
// followed by zeros only (file systems may expose zeroed blocks after a
// power loss). Open cuts a torn tail off by truncating the file. Any other
// bad frame, or any bad frame in an older segment, is corruption: an error
// matching ErrCorrupt that names the file and offset, unless
// Options.SkipCorrupt is set, in which case the rest of that segment is
// skipped and the loss is logged. A frame whose header CRC fails while
// non-zero bytes follow is always corruption: a torn write cannot produce a
// complete header with a wrong checksum. Conversely, damage to the very last
// record of the newest segment cannot be told from a torn write, and is cut
// off like one.
//
// # Acknowledgement and group commit
//
// One committer goroutine per log does all writing. Append encodes its frame
// into the pending batch and waits; the committer takes everything pending,
// writes it with one write and, in Batch mode, one fdatasync, then wakes the
// whole batch. Records that arrive meanwhile form the next batch, so under
// load one fsync covers many appends without any timer or batch-size tuning.
// If a write or fsync fails, every append in the batch fails and the log
// refuses further appends: after a failed fsync the kernel may have dropped
// the dirty pages, so nothing written since the last good fsync can be
// trusted until the log is reopened and replayed. In Periodic mode the
// committer acknowledges after the write and syncs every SyncInterval; see
// SyncMode for what each mode risks.
package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

const (
	segmentMagic   = "SDCL"
	segmentVersion = 1

	// segmentHeaderSize is the size of a segment header.
	segmentHeaderSize = 24
	// frameHeaderSize is the size of a record frame's header.
	frameHeaderSize = 12
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt marks a segment whose contents fail their checks.
var ErrCorrupt = errors.New("commitlog: corrupt segment")

// segmentHeader is the decoded header of a segment file.
type segmentHeader struct {
	shard uint32
	seq   uint64
}

func (h segmentHeader) encode() []byte {
	b := make([]byte, segmentHeaderSize)
	copy(b, segmentMagic)
	binary.LittleEndian.PutUint16(b[4:], segmentVersion)
	binary.LittleEndian.PutUint32(b[8:], h.shard)
	binary.LittleEndian.PutUint64(b[12:], h.seq)
	binary.LittleEndian.PutUint32(b[20:], crc32.Checksum(b[:20], castagnoli))
	return b
}

func decodeSegmentHeader(b []byte) (segmentHeader, error) {
	if len(b) < segmentHeaderSize {
		return segmentHeader{}, fmt.Errorf("short header (%d bytes)", len(b))
	}
	if string(b[:4]) != segmentMagic {
		return segmentHeader{}, fmt.Errorf("bad magic %q", b[:4])
	}
	if crc32.Checksum(b[:20], castagnoli) != binary.LittleEndian.Uint32(b[20:]) {
		return segmentHeader{}, errors.New("header checksum mismatch")
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != segmentVersion {
		return segmentHeader{}, fmt.Errorf("unsupported format version %d", v)
	}
	if r := binary.LittleEndian.Uint16(b[6:]); r != 0 {
		return segmentHeader{}, fmt.Errorf("reserved header field is %#x", r)
	}
	return segmentHeader{
		shard: binary.LittleEndian.Uint32(b[8:]),
		seq:   binary.LittleEndian.Uint64(b[12:]),
	}, nil
}

// frameCRC returns the header CRC of a frame in segment seq.
func frameCRC(seq uint64, hdr []byte) uint32 {
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], seq)
	return crc32.Update(crc32.Checksum(s[:], castagnoli), castagnoli, hdr[4:frameHeaderSize])
}

// appendFrame appends the frame of payload, whose CRC is dataCRC, to dst.
func appendFrame(dst []byte, seq uint64, dataCRC uint32, payload []byte) []byte {
	var hdr [frameHeaderSize]byte
	binary.LittleEndian.PutUint32(hdr[4:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hdr[8:], dataCRC)
	binary.LittleEndian.PutUint32(hdr[0:], frameCRC(seq, hdr[:]))
	return append(append(dst, hdr[:]...), payload...)
}

// frameStatus says why a frame could not be decoded.
type frameStatus int

const (
	frameOK        frameStatus = iota
	frameShort                 // the header or payload runs past the end of the data
	frameZero                  // the header is all zeros
	frameBadHeader             // the header CRC does not match
	frameBadData               // the header is sound, the payload CRC does not match
)

func (s frameStatus) String() string {
	switch s {
	case frameOK:
		return "ok"
	case frameShort:
		return "record runs past the end of the file"
	case frameZero:
		return "zeroed record header"
	case frameBadHeader:
		return "record header checksum mismatch"
	case frameBadData:
		return "record payload checksum mismatch"
	}
	return fmt.Sprintf("frameStatus(%d)", int(s))
}

// readFrame decodes the frame at the start of b, which belongs to segment seq.
// It returns the payload (aliasing b) and the frame's size; size is also set
// for frameBadData, whose length is trustworthy.
func readFrame(b []byte, seq uint64) (payload []byte, size int, st frameStatus) {
	if len(b) < frameHeaderSize {
		return nil, 0, frameShort
	}
	hdr := b[:frameHeaderSize]
	if allZero(hdr) {
		return nil, 0, frameZero
	}
	if frameCRC(seq, hdr) != binary.LittleEndian.Uint32(hdr) {
		return nil, 0, frameBadHeader
	}
	n := uint64(binary.LittleEndian.Uint32(hdr[4:]))
	if n > uint64(len(b)-frameHeaderSize) {
		return nil, 0, frameShort
	}
	size = frameHeaderSize + int(n)
	payload = b[frameHeaderSize:size]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(hdr[8:]) {
		return nil, size, frameBadData
	}
	return payload, size, frameOK
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// badFrame describes the first frame of a segment that failed its checks.
type badFrame struct {
	off    int64
	status frameStatus
	// torn reports that nothing follows the bad frame, so in the newest
	// segment it is the remains of an interrupted write.
	torn bool
}

// scanRecords calls fn with the offset and payload of each record in data, a
// whole segment file of segment seq whose header has been checked. It stops
// at the first frame that fails its checks and describes it; end is the
// offset just past the last good record. An error from fn stops the scan and
// is returned.
func scanRecords(data []byte, seq uint64, fn func(off int64, rec []byte) error) (end int64, bad *badFrame, err error) {
	off := segmentHeaderSize
	for off < len(data) {
		payload, size, st := readFrame(data[off:], seq)
		if st != frameOK {
			bf := &badFrame{off: int64(off), status: st}
			switch st {
			case frameShort:
				bf.torn = true
			case frameZero:
				bf.torn = allZero(data[off:])
			case frameBadData:
				bf.torn = allZero(data[off+size:])
			}
			return int64(off), bf, nil
		}
		if err := fn(int64(off), payload); err != nil {
			return int64(off), nil, err
		}
		off += size
	}
	return int64(off), nil, nil
}
