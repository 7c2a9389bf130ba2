package sstable

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"testing"
)

// TestFooterRejectsForgedHandles feeds footers with valid checksums but
// impossible handles, including ones whose sums overflow.
func TestFooterRejectsForgedHandles(t *testing.T) {
	const size = 1000
	limit := uint64(size - footerLen)
	for _, hs := range [][3]blockHandle{
		{{0, 10}, {10, 10}, {20, limit}},                    // past the end
		{{0, 10}, {10, math.MaxUint64 - 5}, {4, limit - 4}}, // overflowing filter
		{{math.MaxUint64, 1}, {0, 10}, {10, limit - 10}},    // overflowing index
		{{0, 10}, {11, 10}, {21, limit - 21}},               // gap
		{{900, 10}, {910, 10}, {920, 10}},                   // does not reach the footer
	} {
		f := footer{index: hs[0], filter: hs[1], props: hs[2], version: FormatVersion}
		b := f.encode()
		binary.LittleEndian.PutUint32(b[52:], crc32.Checksum(b[:52], crcTable))
		if _, err := decodeFooter(b, size); !errors.Is(err, ErrCorrupt) {
			t.Errorf("handles %v: got %v, want ErrCorrupt", hs, err)
		}
	}
	good := footer{index: blockHandle{900, 10}, filter: blockHandle{910, 10}, props: blockHandle{920, 16}, version: FormatVersion}
	if _, err := decodeFooter(good.encode(), size); err != nil {
		t.Fatalf("valid footer: %v", err)
	}
}
