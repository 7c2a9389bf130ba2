package commitlog

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata")

// TestFormatGolden pins the on-disk format: a segment of shard 5, sequence 7,
// holding three records, as a hex dump. A change to the format must change
// the version and this file together.
func TestFormatGolden(t *testing.T) {
	seg := segmentHeader{shard: 5, seq: 7}.encode()
	for _, rec := range []string{"", "a", "sediment"} {
		seg = appendFrame(seg, 7, crc32.Checksum([]byte(rec), castagnoli), []byte(rec))
	}
	got := hex.Dump(seg)
	path := filepath.Join("testdata", "segment.golden")
	if *rewrite {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("segment bytes changed:\n%s\nwant:\n%s", got, want)
	}

	h, err := decodeSegmentHeader(seg)
	if err != nil || h != (segmentHeader{shard: 5, seq: 7}) {
		t.Fatalf("header = %+v, %v", h, err)
	}
	var recs []string
	end, bad, err := scanRecords(seg, 7, func(_ int64, rec []byte) error {
		recs = append(recs, string(rec))
		return nil
	})
	if err != nil || bad != nil || end != int64(len(seg)) || strings.Join(recs, ",") != ",a,sediment" {
		t.Fatalf("scan = %q end %d bad %+v err %v", recs, end, bad, err)
	}
	// The frames are bound to their segment's sequence number.
	if _, bad, _ := scanRecords(seg, 8, func(int64, []byte) error { return nil }); bad == nil || bad.status != frameBadHeader {
		t.Fatalf("frames of segment 7 read as segment 8: %+v", bad)
	}
}

func TestSegmentHeaderErrors(t *testing.T) {
	good := segmentHeader{shard: 1, seq: 2}.encode()
	// resealed returns good with byte i set to v and a valid checksum.
	resealed := func(i int, v byte) []byte {
		b := append([]byte(nil), good...)
		b[i] = v
		binary.LittleEndian.PutUint32(b[20:], crc32.Checksum(b[:20], castagnoli))
		return b
	}
	for name, b := range map[string][]byte{
		"short":    good[:10],
		"magic":    append([]byte("XDCL"), good[4:]...),
		"checksum": append(append([]byte(nil), good[:23]...), good[23]^1),
		"version":  resealed(4, 2),
		"reserved": resealed(6, 1),
	} {
		if _, err := decodeSegmentHeader(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestTruncatedOlderSegmentIsCorrupt(t *testing.T) {
	seg, _, _ := writeLog(t, 3, 40)
	fs := memWithSegments(t, seg[:len(seg)-3], segmentHeader{seq: 2}.encode())
	l := mustOpen(t, Options{FS: fs, Dir: "/wal"})
	defer l.Close()
	err := l.Replay(func(Position, []byte) error { return nil })
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), segmentName(1)) {
		t.Fatalf("replay: %v", err)
	}
}
