package commitlog

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/sedimentdb/sediment/internal/vfs"
)

// fuzzSegment returns a valid segment seq holding recs.
func fuzzSegment(seq uint64, recs ...string) []byte {
	b := segmentHeader{seq: seq}.encode()
	for _, r := range recs {
		b = appendFrame(b, seq, crc32.Checksum([]byte(r), castagnoli), []byte(r))
	}
	return b
}

func FuzzScanRecords(f *testing.F) {
	valid := fuzzSegment(1, "a", "", "hello world", string(make([]byte, 300)))
	f.Add(valid)
	f.Add(valid[:len(valid)-5])
	f.Add(valid[:segmentHeaderSize+3])
	f.Add(append(slices.Clone(valid), make([]byte, 40)...))
	damaged := slices.Clone(valid)
	damaged[segmentHeaderSize+frameHeaderSize] ^= 0xff
	f.Add(damaged)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := decodeSegmentHeader(data); err != nil {
			return
		}
		const seq = 1
		var rebuilt []byte
		end, bad, err := scanRecords(data, seq, func(off int64, rec []byte) error {
			if want := segmentHeaderSize + int64(len(rebuilt)); off != want {
				t.Fatalf("record at offset %d, want %d", off, want)
			}
			rebuilt = appendFrame(rebuilt, seq, crc32.Checksum(rec, castagnoli), rec)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if end < segmentHeaderSize || end > int64(len(data)) {
			t.Fatalf("end %d outside [%d, %d]", end, segmentHeaderSize, len(data))
		}
		// The good records re-encode to exactly the bytes they came from.
		if !bytes.Equal(rebuilt, data[segmentHeaderSize:end]) {
			t.Fatal("records do not re-encode to the scanned bytes")
		}
		switch {
		case bad == nil && end != int64(len(data)):
			t.Fatalf("clean scan stopped at %d of %d", end, len(data))
		case bad != nil && (bad.off != end || bad.status == frameOK):
			t.Fatalf("bad frame %+v with end %d", bad, end)
		case bad != nil && bad.status == frameBadHeader && !allZero(data[end:]) && bad.torn:
			t.Fatal("a complete header with a bad checksum was taken for a torn tail")
		}
	})
}

// FuzzOpenReplay gives Open arbitrary segment files. It must never panic,
// and once Open has accepted (and possibly repaired) the log, the log must
// replay the same records on every later open.
func FuzzOpenReplay(f *testing.F) {
	s1 := fuzzSegment(1, "one", "two")
	s2 := fuzzSegment(2, "three", "four", "five")
	f.Add(s1, s2, false)
	f.Add(s1, s2[:len(s2)-2], false)
	f.Add(s1[:len(s1)-1], s2, true)
	f.Add(s1, []byte{}, false)
	f.Add(s1, append(slices.Clone(s2), 0, 0, 0, 0), false)
	f.Add(s1, fuzzSegment(3), true)
	f.Fuzz(func(t *testing.T, seg1, seg2 []byte, skip bool) {
		fs := vfs.NewMem()
		fs.MkdirAll("/wal", 0o755)
		for i, data := range [][]byte{seg1, seg2} {
			w, _ := fs.Create("/wal/" + segmentName(uint64(i+1)))
			w.Write(data)
			w.Close()
		}
		opts := Options{FS: fs, Dir: "/wal", SkipCorrupt: skip}
		l, err := Open(opts)
		if err != nil {
			return
		}
		replay := func(l *Log) ([]string, error) {
			var recs []string
			err := l.Replay(func(_ Position, rec []byte) error {
				recs = append(recs, string(rec))
				return nil
			})
			return recs, err
		}
		first, err := replay(l)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("replay: %v", err)
		}
		if _, aerr := l.Append(context.Background(), []byte("new")); aerr != nil {
			t.Fatalf("append: %v", aerr)
		}
		if cerr := l.Close(); cerr != nil {
			t.Fatal(cerr)
		}
		l, oerr := Open(opts)
		if oerr != nil {
			t.Fatalf("reopen after a successful open: %v", oerr)
		}
		defer l.Close()
		second, err2 := replay(l)
		if err != nil {
			if !errors.Is(err2, ErrCorrupt) {
				t.Fatalf("corruption reported once, then %v", err2)
			}
			return
		}
		if err2 != nil || !slices.Equal(second, append(first, "new")) {
			t.Fatalf("second replay %q (%v), first %q", second, err2, first)
		}
	})
}
