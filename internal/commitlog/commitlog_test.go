package commitlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/testwait"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/internal/vfs/errorfs"
)

// makeRecord returns a self-checking record: id, filler derived from id, and
// a SHA-256 of both, so a record that is partly present or altered is caught.
func makeRecord(id uint64, size int) []byte {
	size = max(size, 8)
	rec := make([]byte, size, size+sha256.Size)
	binary.LittleEndian.PutUint64(rec, id)
	r := rand.New(rand.NewPCG(id, 7))
	for i := 8; i < size; i++ {
		rec[i] = byte(r.Uint32())
	}
	sum := sha256.Sum256(rec)
	return append(rec, sum[:]...)
}

// checkRecord returns the id of a record made by makeRecord.
func checkRecord(rec []byte) (uint64, error) {
	if len(rec) < 8+sha256.Size {
		return 0, fmt.Errorf("record of %d bytes is too short", len(rec))
	}
	body := rec[:len(rec)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], rec[len(body):]) {
		return 0, errors.New("record checksum mismatch")
	}
	return binary.LittleEndian.Uint64(body), nil
}

type replayed struct {
	pos Position
	rec []byte
}

func replayAll(t *testing.T, l *Log) []replayed {
	t.Helper()
	var out []replayed
	if err := l.Replay(func(pos Position, rec []byte) error {
		out = append(out, replayed{pos, slices.Clone(rec)})
		return nil
	}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	return out
}

func mustOpen(t *testing.T, opts Options) *Log {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return l
}

func mustAppend(t *testing.T, l *Log, rec []byte) Position {
	t.Helper()
	pos, err := l.Append(context.Background(), rec)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return pos
}

func segmentFiles(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func readAll(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeAll(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// memWithSegments returns a MemFS whose directory /wal durably holds the
// given segment files, numbered from 1.
func memWithSegments(t *testing.T, segs ...[]byte) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMem()
	fs.MkdirAll("/wal", 0o755)
	fs.SyncDir("/")
	for i, data := range segs {
		writeAll(t, fs, "/wal/"+segmentName(uint64(i+1)), data)
	}
	fs.SyncDir("/wal")
	return fs
}

func TestRoundTrip(t *testing.T) {
	for _, mode := range []SyncMode{Batch, Periodic} {
		t.Run(mode.String(), func(t *testing.T) {
			fs := vfs.NewMem()
			opts := Options{FS: fs, Dir: "/wal/shard3", Shard: 3, Sync: mode, SyncInterval: time.Millisecond}
			l := mustOpen(t, opts)
			if got := replayAll(t, l); len(got) != 0 {
				t.Fatalf("replay of a new log: %d records", len(got))
			}
			var want [][]byte
			var last Position
			for i, size := range []int{0, 1, 100, 4096, 70000, 3} {
				rec := bytes.Repeat([]byte{byte(i + 1)}, size)
				pos := mustAppend(t, l, rec)
				if pos.Compare(last) <= 0 {
					t.Fatalf("position %v not after %v", pos, last)
				}
				last = pos
				want = append(want, rec)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(context.Background(), nil); !errors.Is(err, ErrClosed) {
				t.Fatalf("append after close: %v", err)
			}
			if err := l.Close(); !errors.Is(err, ErrClosed) {
				t.Fatalf("second close: %v", err)
			}

			// A crash right after Close loses nothing.
			l = mustOpen(t, Options{FS: fs.CrashClone(), Dir: opts.Dir, Shard: 3})
			got := replayAll(t, l)
			if len(got) != len(want) {
				t.Fatalf("replayed %d records, want %d", len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i].rec, want[i]) {
					t.Fatalf("record %d differs", i)
				}
			}
			l.Close()
		})
	}
}

func TestConcurrentAppendsReplayInPositionOrder(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{FS: fs, Dir: "/wal", SegmentSize: 4 << 10}
	l := mustOpen(t, opts)
	const writers, each = 8, 60
	var mu sync.Mutex
	byPos := map[Position]uint64{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := uint64(w*each + i)
				pos, err := l.Append(context.Background(), makeRecord(id, 20+int(id%200)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				byPos[pos] = id
				mu.Unlock()
			}
		})
	}
	testwait.Wait(t, "the writers' appends", &wg)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if s := l.Stats(); s.Appends != writers*each || s.Batches > s.Appends || s.Syncs < s.Batches || s.SyncTime <= 0 {
		t.Fatalf("stats %+v", s)
	}
	l = mustOpen(t, opts)
	defer l.Close()
	got := replayAll(t, l)
	if len(got) != writers*each {
		t.Fatalf("replayed %d records, want %d", len(got), writers*each)
	}
	for i, r := range got {
		id, err := checkRecord(r.rec)
		if err != nil {
			t.Fatal(err)
		}
		if byPos[r.pos] != id {
			t.Fatalf("record at %v has id %d, Append returned that position for %d", r.pos, id, byPos[r.pos])
		}
		if i > 0 && got[i-1].pos.Compare(r.pos) >= 0 {
			t.Fatalf("replay out of order at %v", r.pos)
		}
	}
	if n := len(segmentFiles(t, fs, "/wal")); n < 2 {
		t.Fatalf("%d segments; expected rollovers", n)
	}
}

func TestRolloverAndRelease(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{FS: fs, Dir: "/wal", SegmentSize: 1024}
	l := mustOpen(t, opts)
	var pos []Position
	for i := range 40 {
		pos = append(pos, mustAppend(t, l, makeRecord(uint64(i), 100)))
	}
	for i := 1; i < len(pos); i++ {
		if pos[i].Segment != pos[i-1].Segment && pos[i].Offset != segmentHeaderSize {
			t.Fatalf("first record of segment %d at offset %d", pos[i].Segment, pos[i].Offset)
		}
	}
	for _, name := range segmentFiles(t, fs, "/wal") {
		if fi, _ := fs.Stat("/wal/" + name); fi.Size() > opts.SegmentSize {
			t.Fatalf("%s is %d bytes, larger than the segment size", name, fi.Size())
		}
	}
	active := pos[len(pos)-1].Segment
	if active < 4 {
		t.Fatalf("only %d segments", active)
	}

	// Releasing up to the first record of segment 3 removes segments 1 and 2.
	k := slices.IndexFunc(pos, func(p Position) bool { return p.Segment == 3 })
	if err := l.Release(pos[k]); err != nil {
		t.Fatal(err)
	}
	if got := segmentFiles(t, fs, "/wal"); got[0] != segmentName(3) {
		t.Fatalf("after release: %v", got)
	}
	// Releasing to the middle of segment 3 keeps it.
	if err := l.Release(pos[k+1]); err != nil {
		t.Fatal(err)
	}
	if got := segmentFiles(t, fs, "/wal"); got[0] != segmentName(3) {
		t.Fatalf("after release: %v", got)
	}
	// Releasing everything keeps the active segment, and it is durable.
	if err := l.Release(Position{Segment: active + 10}); err != nil {
		t.Fatal(err)
	}
	if got := segmentFiles(t, fs.CrashClone(), "/wal"); !slices.Equal(got, []string{segmentName(active)}) {
		t.Fatalf("after releasing all: %v", got)
	}
	l.Close()

	l = mustOpen(t, opts)
	got := replayAll(t, l)
	first := slices.IndexFunc(pos, func(p Position) bool { return p.Segment == active })
	if len(got) != len(pos)-first {
		t.Fatalf("replayed %d records, want %d", len(got), len(pos)-first)
	}
	for i, r := range got {
		if id, err := checkRecord(r.rec); err != nil || id != uint64(first+i) || r.pos != pos[first+i] {
			t.Fatalf("record %d: id %d pos %v err %v", i, id, r.pos, err)
		}
	}
	// New records go to a new segment; Release of old segments works after
	// reopening too, and a released segment is not replayed.
	p := mustAppend(t, l, []byte("after reopen"))
	if p.Segment != active+1 {
		t.Fatalf("first append after reopen went to segment %d, want %d", p.Segment, active+1)
	}
	if err := l.Release(p); err != nil {
		t.Fatal(err)
	}
	if got := replayAll(t, l); len(got) != 0 {
		t.Fatalf("replay after release returned %d records", len(got))
	}
	l.Close()
}

func TestRecordTooLarge(t *testing.T) {
	l := mustOpen(t, Options{FS: vfs.NewMem(), Dir: "/wal", SegmentSize: 1024})
	defer l.Close()
	max := 1024 - segmentHeaderSize - frameHeaderSize
	if _, err := l.Append(context.Background(), make([]byte, max+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v", err)
	}
	mustAppend(t, l, make([]byte, 10))
	p := mustAppend(t, l, make([]byte, max)) // fills a segment of its own
	if p.Offset != segmentHeaderSize || p.Segment != 2 {
		t.Fatalf("largest record at %v", p)
	}
}

func TestOpenOptions(t *testing.T) {
	fs := vfs.NewMem()
	for _, opts := range []Options{
		{FS: fs},
		{FS: fs, Dir: "/x", SegmentSize: 100},
		{FS: fs, Dir: "/x", Sync: 7},
		{FS: fs, Dir: "/x", SyncInterval: -1},
	} {
		if l, err := Open(opts); err == nil {
			l.Close()
			t.Errorf("Open(%+v) succeeded", opts)
		}
	}
	l := mustOpen(t, Options{FS: fs, Dir: "/a/b/c", Shard: 1})
	mustAppend(t, l, []byte("x"))
	l.Close()
	// The new directories are durable.
	if got := segmentFiles(t, fs.CrashClone(), "/a/b/c"); len(got) != 1 {
		t.Fatalf("after crash: %v", got)
	}
	if _, err := Open(Options{FS: fs, Dir: "/a/b/c", Shard: 2}); err == nil || !strings.Contains(err.Error(), "shard 1") {
		t.Fatalf("opening another shard's log: %v", err)
	}
	// Other files in the directory are left alone.
	writeAll(t, fs, "/a/b/c/README", []byte("hi"))
	writeAll(t, fs, "/a/b/c/zz.log", []byte("hi"))
	l = mustOpen(t, Options{FS: fs, Dir: "/a/b/c", Shard: 1})
	if got := replayAll(t, l); len(got) != 1 {
		t.Fatalf("replayed %d", len(got))
	}
	l.Close()
}

func TestAppendContext(t *testing.T) {
	block := make(chan struct{})
	efs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpSync {
			<-block
		}
		return nil
	}))
	l := mustOpen(t, Options{FS: efs, Dir: "/wal"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Append(ctx, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("append with canceled context: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := l.Append(ctx, []byte("y")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append while sync blocks: %v", err)
	}
	close(block)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeLog appends n records to a new log and returns the bytes of its only
// segment and the records' positions.
func writeLog(t *testing.T, n, size int) (seg []byte, pos []Position, recs [][]byte) {
	fs := vfs.NewMem()
	l := mustOpen(t, Options{FS: fs, Dir: "/wal"})
	for i := range n {
		rec := makeRecord(uint64(i), size)
		pos = append(pos, mustAppend(t, l, rec))
		recs = append(recs, rec)
	}
	l.Close()
	return readAll(t, fs, "/wal/"+segmentName(1)), pos, recs
}

func TestTornTailEveryOffset(t *testing.T) {
	seg, pos, recs := writeLog(t, 3, 40)
	last := pos[len(pos)-1].Offset
	for cut := last; cut < int64(len(seg)); cut++ {
		fs := memWithSegments(t, seg[:cut])

		l := mustOpen(t, Options{FS: fs, Dir: "/wal"})
		got := replayAll(t, l)
		if len(got) != 2 || !bytes.Equal(got[0].rec, recs[0]) || !bytes.Equal(got[1].rec, recs[1]) {
			t.Fatalf("cut at %d: replayed %d records", cut, len(got))
		}
		// The tail is cut off durably, so once the segment is no longer
		// the newest it replays cleanly.
		if fi, _ := fs.CrashClone().Stat("/wal/" + segmentName(1)); fi.Size() != last {
			t.Fatalf("cut at %d: segment is %d bytes after open, want %d", cut, fi.Size(), last)
		}
		mustAppend(t, l, []byte("next"))
		l.Close()
		l = mustOpen(t, Options{FS: fs.CrashClone(), Dir: "/wal"})
		if got := replayAll(t, l); len(got) != 3 || string(got[2].rec) != "next" {
			t.Fatalf("cut at %d: second replay returned %d records", cut, len(got))
		}
		l.Close()
	}
}

func TestTornTailVariants(t *testing.T) {
	seg, pos, _ := writeLog(t, 3, 40)
	last := pos[2].Offset
	flip := func(b []byte, i int64) []byte { b = slices.Clone(b); b[i] ^= 0x10; return b }
	for _, tc := range []struct {
		name string
		data []byte
		want int // records replayed; -1: Open fails with ErrCorrupt
	}{
		{"zeros after last record", append(slices.Clone(seg), make([]byte, 5000)...), 3},
		{"zeros in place of last record", append(slices.Clone(seg[:last]), make([]byte, len(seg)-int(last))...), 2},
		{"last payload damaged", flip(seg, int64(len(seg)-1)), 2},
		{"last payload damaged, zeros after", append(flip(seg, int64(len(seg)-1)), make([]byte, 100)...), 2},
		{"garbage after last record", append(slices.Clone(seg), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13), -1},
		{"middle payload damaged", flip(seg, pos[1].Offset+frameHeaderSize+3), -1},
		{"middle length damaged", flip(seg, pos[1].Offset+4), -1},
		{"last length damaged", flip(seg, last+4), -1},
		{"last header CRC damaged", flip(seg, last), -1},
		{"zeroed middle header", slices.Concat(seg[:pos[1].Offset], make([]byte, frameHeaderSize), seg[pos[1].Offset+frameHeaderSize:]), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := memWithSegments(t, tc.data)
			l, err := Open(Options{FS: fs, Dir: "/wal"})
			if tc.want < 0 {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), segmentName(1)) {
					t.Fatalf("open: %v, want ErrCorrupt naming the segment", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := replayAll(t, l); len(got) != tc.want {
				t.Fatalf("replayed %d records, want %d", len(got), tc.want)
			}
		})
	}
}

func TestTornSegmentHeader(t *testing.T) {
	seg, _, recs := writeLog(t, 2, 40)
	for _, tail := range [][]byte{nil, segmentHeader{seq: 2}.encode()[:10], make([]byte, 300)} {
		fs := memWithSegments(t, seg, tail)
		l := mustOpen(t, Options{FS: fs, Dir: "/wal"})
		if got := replayAll(t, l); len(got) != len(recs) {
			t.Fatalf("tail %d bytes: replayed %d", len(tail), len(got))
		}
		if p := mustAppend(t, l, []byte("x")); p.Segment != 2 {
			t.Fatalf("append went to segment %d", p.Segment)
		}
		l.Close()
	}
	// A damaged header of an older segment is corruption.
	fs := memWithSegments(t, append([]byte("XXXX"), seg[4:]...), segmentHeader{seq: 2}.encode())
	if _, err := Open(Options{FS: fs, Dir: "/wal"}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open: %v", err)
	}
	// So is a header naming another sequence number.
	writeAll(t, fs, "/wal/"+segmentName(1), segmentHeader{seq: 9}.encode())
	if _, err := Open(Options{FS: fs, Dir: "/wal"}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open: %v", err)
	}
}

func TestCorruptionInOlderSegment(t *testing.T) {
	fs := vfs.NewMem()
	opts := Options{FS: fs, Dir: "/wal", SegmentSize: 1024}
	l := mustOpen(t, opts)
	var pos []Position
	for i := range 30 {
		pos = append(pos, mustAppend(t, l, makeRecord(uint64(i), 100)))
	}
	l.Close()
	// Damage the third record of segment 2.
	k := slices.IndexFunc(pos, func(p Position) bool { return p.Segment == 2 }) + 2
	name := "/wal/" + segmentName(2)
	data := readAll(t, fs, name)
	data[pos[k].Offset+frameHeaderSize+20] ^= 1
	writeAll(t, fs, name, data)

	l = mustOpen(t, opts)
	err := l.Replay(func(Position, []byte) error { return nil })
	want := fmt.Sprintf("%s at offset %d", name, pos[k].Offset)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
		t.Fatalf("replay: %v, want ErrCorrupt containing %q", err, want)
	}
	l.Close()

	// With SkipCorrupt the rest of segment 2 is skipped and logged.
	var logBuf bytes.Buffer
	opts.SkipCorrupt = true
	opts.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	l = mustOpen(t, opts)
	defer l.Close()
	var ids []uint64
	for _, r := range replayAll(t, l) {
		id, err := checkRecord(r.rec)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	nextSeg := slices.IndexFunc(pos, func(p Position) bool { return p.Segment == 3 })
	var want2 []uint64
	for i := range pos {
		if i < k || i >= nextSeg {
			want2 = append(want2, uint64(i))
		}
	}
	if !slices.Equal(ids, want2) {
		t.Fatalf("replayed %v, want %v", ids, want2)
	}
	if !strings.Contains(logBuf.String(), "skipping rest of corrupt segment") || !strings.Contains(logBuf.String(), name) {
		t.Fatalf("loss not logged: %s", logBuf.String())
	}
}

func TestCorruptionInNewestSegmentSkipped(t *testing.T) {
	seg, pos, _ := writeLog(t, 3, 40)
	seg[pos[1].Offset+frameHeaderSize] ^= 1
	fs := memWithSegments(t, seg)
	l := mustOpen(t, Options{FS: fs, Dir: "/wal", SkipCorrupt: true})
	if got := replayAll(t, l); len(got) != 1 {
		t.Fatalf("replayed %d", len(got))
	}
	mustAppend(t, l, []byte("x"))
	l.Close()
	// The corrupt segment was not truncated: without SkipCorrupt it is
	// still reported.
	l = mustOpen(t, Options{FS: fs, Dir: "/wal"})
	if err := l.Replay(func(Position, []byte) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("replay: %v", err)
	}
	l.Close()
}

func TestReplayCallbackError(t *testing.T) {
	seg, _, _ := writeLog(t, 3, 10)
	fs := memWithSegments(t, seg)
	l := mustOpen(t, Options{FS: fs, Dir: "/wal"})
	defer l.Close()
	stop := errors.New("stop")
	n := 0
	if err := l.Replay(func(Position, []byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("replay: %v after %d records", err, n)
	}
}

// TestFailedSyncAcknowledgesNothing checks that when an fsync fails, every
// append waiting on it fails, and so does every later append.
func TestFailedSyncAcknowledgesNothing(t *testing.T) {
	for _, op := range []errorfs.Op{errorfs.OpSync, errorfs.OpWrite} {
		t.Run(op.String(), func(t *testing.T) {
			mem := vfs.NewMem()
			var failing atomic.Bool
			efs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(o errorfs.Op, path string) error {
				if o == op && failing.Load() && strings.HasSuffix(path, ".log") {
					return errorfs.ErrInjected
				}
				return nil
			}))
			l := mustOpen(t, Options{FS: efs, Dir: "/wal"})
			acked := mustAppend(t, l, []byte("before"))
			failing.Store(true)
			var wg sync.WaitGroup
			var ok atomic.Int32
			for i := range 32 {
				wg.Go(func() {
					_, err := l.Append(context.Background(), makeRecord(uint64(i), 50))
					if err == nil {
						ok.Add(1)
					} else if !errors.Is(err, ErrFailed) || !errors.Is(err, errorfs.ErrInjected) {
						t.Errorf("append: %v", err)
					}
				})
			}
			testwait.Wait(t, "the appends to fail", &wg)
			if ok.Load() != 0 {
				t.Fatalf("%d appends acknowledged after a failed %v", ok.Load(), op)
			}
			// The log refuses appends even once the file system recovers.
			failing.Store(false)
			if _, err := l.Append(context.Background(), []byte("after")); !errors.Is(err, ErrFailed) {
				t.Fatalf("append after failure: %v", err)
			}
			if err := l.Close(); !errors.Is(err, ErrFailed) {
				t.Fatalf("close: %v", err)
			}
			// Reopening recovers; the acknowledged record is there.
			l = mustOpen(t, Options{FS: mem.CrashClone(), Dir: "/wal"})
			got := replayAll(t, l)
			if len(got) == 0 || got[0].pos != acked || string(got[0].rec) != "before" {
				t.Fatalf("after reopen: %v", got)
			}
			mustAppend(t, l, []byte("again"))
			l.Close()
		})
	}
}

func TestFailedRolloverFailsLog(t *testing.T) {
	rule := &errorfs.Rule{Ops: errorfs.OpCreate, Path: func(p string) bool { return strings.HasSuffix(p, segmentName(2)) }}
	l := mustOpen(t, Options{FS: errorfs.Wrap(vfs.NewMem(), rule), Dir: "/wal", SegmentSize: 1024})
	defer l.Close()
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		_, err = l.Append(context.Background(), make([]byte, 200))
	}
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("append across a failed rollover: %v", err)
	}
}

// TestGroupCommit checks that appends arriving during an fsync are committed
// together by the next one.
func TestGroupCommit(t *testing.T) {
	efs, blocked, release := blockFirstSync(nil)
	l := mustOpen(t, Options{FS: efs, Dir: "/wal"})
	var wg sync.WaitGroup
	wg.Go(func() { mustAppend(t, l, []byte("first")) })
	testwait.Recv(t, "the first sync", blocked)
	const n = 63
	for i := range n {
		wg.Go(func() { mustAppend(t, l, makeRecord(uint64(i), 100)) })
	}
	testwait.For(t, "the appends to queue behind the first sync", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.cur.n == n
	})
	close(release)
	testwait.Wait(t, "the appends to be acknowledged", &wg)
	if s := l.Stats(); s.Appends != n+1 || s.Batches != 2 || s.Syncs != 2 {
		t.Fatalf("stats %+v, want %d appends in 2 batches with 2 syncs", s, n+1)
	}
	l.Close()
}

func TestPeriodicSyncs(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, Options{FS: fs, Dir: "/wal", Sync: Periodic, SyncInterval: 5 * time.Millisecond})
	defer l.Close()
	for i := range 10 {
		mustAppend(t, l, makeRecord(uint64(i), 30))
	}
	// Acknowledged records become durable within a few intervals.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := mustOpen(t, Options{FS: fs.CrashClone(), Dir: "/wal"})
		n := len(replayAll(t, c))
		c.Close()
		if n == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 10 records durable", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPeriodicFailedSync(t *testing.T) {
	rule := &errorfs.Rule{Ops: errorfs.OpSync, Path: func(p string) bool { return strings.HasSuffix(p, ".log") }}
	l := mustOpen(t, Options{FS: errorfs.Wrap(vfs.NewMem(), rule), Dir: "/wal", Sync: Periodic, SyncInterval: time.Millisecond})
	mustAppend(t, l, []byte("x")) // acknowledged after the write
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := l.Append(context.Background(), []byte("y"))
		if errors.Is(err, ErrFailed) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("append: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.Close(); !errors.Is(err, ErrFailed) {
		t.Fatalf("close: %v", err)
	}
}

// TestCrashCloneKeepsAcknowledged takes crash clones of the file system at
// random moments while writers append, and checks that every record
// acknowledged before a clone was taken is in it, intact.
func TestCrashCloneKeepsAcknowledged(t *testing.T) {
	rounds := 6
	if testing.Short() {
		rounds = 3
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	fs := vfs.NewMem()
	opts := Options{FS: fs, Dir: "/wal", SegmentSize: 8 << 10}
	var nextID atomic.Uint64
	type snapshot struct {
		fs    *vfs.MemFS
		acked []uint64
	}
	var snaps []snapshot
	for round := range rounds {
		l := mustOpen(t, opts)
		var mu sync.Mutex
		var acked []uint64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 6 {
			wr := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					id := nextID.Add(1)
					if _, err := l.Append(context.Background(), makeRecord(id, 10+wr.IntN(300))); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
			})
		}
		for range 3 {
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
			mu.Lock()
			snap := snapshot{acked: slices.Clone(acked)}
			mu.Unlock()
			snap.fs = fs.CrashClone() // after the snapshot: all of it was synced
			snaps = append(snaps, snap)
		}
		close(stop)
		testwait.Wait(t, "the writers to stop", &wg)
		l.Close()
		if round%2 == 1 {
			// Continue from a crash instead of a clean close.
			fs = snaps[len(snaps)-1].fs.CrashClone()
			opts.FS = fs
		}
	}
	for i, s := range snaps {
		l := mustOpen(t, Options{FS: s.fs, Dir: "/wal", SegmentSize: 8 << 10})
		seen := map[uint64]bool{}
		for _, r := range replayAll(t, l) {
			id, err := checkRecord(r.rec)
			if err != nil {
				t.Fatalf("snapshot %d: %v at %v", i, err, r.pos)
			}
			if seen[id] {
				t.Fatalf("snapshot %d: record %d replayed twice", i, id)
			}
			seen[id] = true
		}
		l.Close()
		for _, id := range s.acked {
			if !seen[id] {
				t.Fatalf("snapshot %d: acknowledged record %d lost", i, id)
			}
		}
		if len(s.acked) == 0 {
			t.Logf("snapshot %d taken before any acknowledgement", i)
		}
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

func TestReleaseRetriesFailedRemoval(t *testing.T) {
	mem := vfs.NewMem()
	rule := &errorfs.Rule{Ops: errorfs.OpRemove, Path: func(p string) bool { return strings.HasSuffix(p, segmentName(2)) }, Times: 1}
	l := mustOpen(t, Options{FS: errorfs.Wrap(mem, rule), Dir: "/wal", SegmentSize: 1024})
	defer l.Close()
	var last Position
	for i := range 20 {
		last = mustAppend(t, l, makeRecord(uint64(i), 100))
	}
	if err := l.Release(last); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("release: %v", err)
	}
	if got := segmentFiles(t, mem, "/wal"); got[0] != segmentName(2) {
		t.Fatalf("after failed release: %v", got)
	}
	if err := l.Release(last); err != nil {
		t.Fatal(err)
	}
	if got := segmentFiles(t, mem, "/wal"); !slices.Equal(got, []string{segmentName(last.Segment)}) {
		t.Fatalf("after release: %v", got)
	}
}

// TestEnqueue checks that enqueue returns without waiting for the fsync,
// that records enqueued during one share the next batch, that the caller
// may reuse its buffer at once, and that batches end in log order.
func TestEnqueue(t *testing.T) {
	efs, blocked, release := blockFirstSync(nil)
	l := mustOpen(t, Options{FS: efs, Dir: "/wal"})
	buf := []byte("first")
	pos0, first, err := l.enqueue(buf)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, "the first sync", blocked)
	var commits []*batch
	var want [][]byte
	prev := pos0
	for i := range 10 {
		rec := makeRecord(uint64(i), 40)
		buf = append(buf[:0], rec...)
		pos, c, err := l.enqueue(buf)
		if err != nil {
			t.Fatal(err)
		}
		clear(buf) // the log must have copied it
		if pos.Compare(prev) <= 0 {
			t.Fatalf("position %v after %v", pos, prev)
		}
		prev = pos
		commits = append(commits, c)
		want = append(want, rec)
	}
	for _, c := range commits {
		if c != commits[0] || c == first {
			t.Fatal("records enqueued during one fsync do not share the next commit")
		}
	}
	select {
	case <-first.done:
		t.Fatal("commit done before its fsync returned")
	default:
	}
	close(release)
	if err := waitErr(t, commits[0]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.done:
	default:
		t.Fatal("a later commit ended before an earlier one")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, Options{FS: efs, Dir: "/wal"})
	defer l.Close()
	got := replayAll(t, l)
	if len(got) != 11 || string(got[0].rec) != "first" {
		t.Fatalf("replayed %d records", len(got))
	}
	for i, r := range got[1:] {
		if !bytes.Equal(r.rec, want[i]) {
			t.Fatalf("record %d differs", i+1)
		}
	}
}

// TestEnqueueFailureFailsLaterBatches checks that a failed fsync fails its
// batch and every batch enqueued behind it, and that enqueue then refuses.
func TestEnqueueFailureFailsLaterBatches(t *testing.T) {
	efs, blocked, release := blockFirstSync(errorfs.ErrInjected)
	l := mustOpen(t, Options{FS: efs, Dir: "/wal"})
	defer l.Close()
	_, first, err := l.enqueue([]byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, "the first sync", blocked)
	_, second, err := l.enqueue([]byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	for _, c := range []*batch{first, second} {
		if err := waitErr(t, c); !errors.Is(err, ErrFailed) {
			t.Fatalf("commit: %v, want ErrFailed", err)
		}
	}
	if _, _, err := l.enqueue([]byte("c")); !errors.Is(err, ErrFailed) {
		t.Fatalf("enqueue after failure: %v", err)
	}
}

// waitErr waits for b to be committed and returns how it went.
func waitErr(t *testing.T, b *batch) error {
	t.Helper()
	testwait.Recv(t, "the batch's commit", b.done)
	return b.err
}

// blockFirstSync returns a file system whose first sync of a segment
// closes blocked, waits for release to be closed, then fails with err
// (succeeds if err is nil).
func blockFirstSync(err error) (fs vfs.FS, blocked, release chan struct{}) {
	blocked, release = make(chan struct{}), make(chan struct{})
	var syncs atomic.Int32
	fs = errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if op == errorfs.OpSync && strings.HasSuffix(path, ".log") && syncs.Add(1) == 1 {
			close(blocked)
			<-release
			return err
		}
		return nil
	}))
	return fs, blocked, release
}
