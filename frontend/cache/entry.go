package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
)

// The layout of a disk cache file is documented in doc.go.
const (
	entryMagic     = "sdc1"
	entryHeaderLen = 16 // magic, key length, value length
	entryKeyFixed  = 16 // offset and length before the object name
	entryTrailer   = 4  // CRC32C
	minEntryLen    = entryHeaderLen + entryKeyFixed + entryTrailer
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entryLen returns the size of the file that holds key and a value of n bytes.
func entryLen(key Key, n int) int64 {
	return int64(minEntryLen + len(key.Object) + n)
}

// appendEntryHead appends everything of key's file that comes before the
// value: the header and the key.
func appendEntryHead(dst []byte, key Key, valueLen int) []byte {
	dst = append(dst, entryMagic...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(entryKeyFixed+len(key.Object)))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(valueLen))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(key.Offset))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(key.Length))
	return append(dst, key.Object...)
}

// encodeEntry returns the file contents holding key and value.
func encodeEntry(key Key, value []byte) []byte {
	b := make([]byte, 0, entryLen(key, len(value)))
	b = appendEntryHead(b, key, len(value))
	b = append(b, value...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeEntry verifies the contents of a disk cache file and returns the key
// and value it holds. The value aliases b. Any damage yields ErrCorrupt.
func decodeEntry(b []byte) (Key, []byte, error) {
	if len(b) < minEntryLen {
		return Key{}, nil, fmt.Errorf("%w: %d bytes is too short", ErrCorrupt, len(b))
	}
	if string(b[:4]) != entryMagic {
		return Key{}, nil, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:4])
	}
	body := len(b) - entryHeaderLen - entryTrailer
	keyLen := uint64(binary.LittleEndian.Uint32(b[4:]))
	valueLen := binary.LittleEndian.Uint64(b[8:])
	if keyLen < entryKeyFixed || keyLen > uint64(body) || valueLen != uint64(body)-keyLen {
		return Key{}, nil, fmt.Errorf("%w: lengths %d+%d do not fit %d bytes", ErrCorrupt, keyLen, valueLen, len(b))
	}
	sum := binary.LittleEndian.Uint32(b[len(b)-entryTrailer:])
	if got := crc32.Checksum(b[:len(b)-entryTrailer], castagnoli); got != sum {
		return Key{}, nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, sum)
	}
	k := b[entryHeaderLen : entryHeaderLen+keyLen]
	key := Key{
		Offset: int64(binary.LittleEndian.Uint64(k)),
		Length: int64(binary.LittleEndian.Uint64(k[8:])),
		Object: string(k[entryKeyFixed:]),
	}
	return key, b[entryHeaderLen+keyLen : len(b)-entryTrailer], nil
}

// digest names a key's file: the first 16 bytes of the SHA-256 of its
// encoding. The file repeats the key, so a collision reads as a miss.
type digest [16]byte

func digestOf(key Key) digest {
	var buf [64]byte
	b := binary.LittleEndian.AppendUint64(buf[:0], uint64(key.Offset))
	b = binary.LittleEndian.AppendUint64(b, uint64(key.Length))
	b = append(b, key.Object...)
	sum := sha256.Sum256(b)
	return digest(sum[:16])
}

// name returns the file's name: 32 lowercase hex digits.
func (d digest) name() string { return hex.EncodeToString(d[:]) }

// parseDigest parses a file name made by digest.name.
func parseDigest(name string) (digest, bool) {
	var d digest
	if len(name) != 2*len(d) {
		return d, false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return d, false // hex.Decode would also accept upper case
		}
	}
	_, err := hex.Decode(d[:], []byte(name))
	return d, err == nil
}
