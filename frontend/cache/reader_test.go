package cache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/tracing"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// object is an in-memory object store entry that counts its reads.
type object struct {
	data  []byte
	reads atomic.Int64
	err   error // returned by every read when set
}

func (o *object) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	o.reads.Add(1)
	if o.err != nil {
		return 0, o.err
	}
	if off >= int64(len(o.data)) {
		return 0, io.EOF
	}
	n := copy(p, o.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func TestReaderAtThroughTiers(t *testing.T) {
	src := &object{data: valueOf(Key{Object: "sst", Length: 100_000})}
	dir := t.TempDir()
	disk := openDisk(t, vfs.Default, dir, 1<<20)
	mem := NewMemory(1<<20, Options{})
	r := NewReaderAt(Stack(mem, disk), "sst", src)

	type read struct {
		off, n  int64
		wantN   int
		wantEOF bool
	}
	reads := []read{
		{0, 32 << 10, 32 << 10, false},
		{32 << 10, 32 << 10, 32 << 10, false},
		{96 << 10, 32 << 10, 100_000 - 96<<10, true}, // the tail
		{100_000, 10, 0, true},                       // past the end
		{99_990, 10, 10, false},                      // exactly to the end
	}
	check := func() {
		t.Helper()
		for _, rd := range reads {
			p := make([]byte, rd.n)
			n, err := r.ReadAt(t.Context(), p, rd.off)
			if n != rd.wantN || (err == io.EOF) != rd.wantEOF || err != nil && err != io.EOF {
				t.Fatalf("ReadAt(%d, %d) = %d, %v; want %d, eof %v", rd.n, rd.off, n, err, rd.wantN, rd.wantEOF)
			}
			if !bytes.Equal(p[:n], src.data[rd.off:rd.off+int64(n)]) {
				t.Fatalf("ReadAt(%d, %d): wrong bytes", rd.n, rd.off)
			}
		}
	}
	check()
	if got := src.reads.Load(); got != int64(len(reads)) {
		t.Fatalf("%d source reads, want %d", got, len(reads))
	}
	check()
	if got := src.reads.Load(); got != int64(len(reads)) {
		t.Fatalf("repeated reads reached the source: %d reads", got)
	}
	if s := mem.Stats(); s.Hits != uint64(len(reads)) {
		t.Fatalf("memory stats %+v", s)
	}

	// A restarted process (empty memory) reads the blocks from disk.
	mem2 := NewMemory(1<<20, Options{})
	r = NewReaderAt(Stack(mem2, openDisk(t, vfs.Default, dir, 1<<20)), "sst", src)
	check()
	if got := src.reads.Load(); got != int64(len(reads)) {
		t.Fatalf("reads after restart reached the source: %d reads", got)
	}
}

func TestReaderAtErrors(t *testing.T) {
	boom := errors.New("boom")
	src := &object{data: make([]byte, 100), err: boom}
	mem := NewMemory(1<<20, Options{})
	r := NewReaderAt(mem, "sst", src)
	p := make([]byte, 10)
	if _, err := r.ReadAt(t.Context(), p, 0); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	src.err = nil
	if n, err := r.ReadAt(t.Context(), p, 0); n != 10 || err != nil {
		t.Fatalf("after the error cleared: %d, %v (the error was cached?)", n, err)
	}
	if _, err := r.ReadAt(t.Context(), p, -1); err == nil {
		t.Fatal("negative offset accepted")
	}
	if n, err := r.ReadAt(t.Context(), nil, 5); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}

	// A source breaking the io.ReaderAt contract is not cached.
	short := NewReaderAt(mem, "short", readAtFunc(func(_ context.Context, p []byte, _ int64) (int, error) {
		return len(p) - 1, nil
	}))
	if _, err := short.ReadAt(t.Context(), p, 0); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want io.ErrUnexpectedEOF", err)
	}
	if mem.Stats().Entries != 1 {
		t.Fatalf("stats %+v", mem.Stats())
	}
}

type readAtFunc func(ctx context.Context, p []byte, off int64) (int, error)

func (f readAtFunc) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return f(ctx, p, off)
}

func TestStackOfNothingLoads(t *testing.T) {
	var src counting
	k := Key{Object: "o", Length: 5}
	for range 2 {
		v, err := Stack().Get(t.Context(), k, src.load(k))
		checkValue(t, k, v, err)
	}
	if src.loads.Load() != 2 {
		t.Fatalf("%d loads, want 2", src.loads.Load())
	}
}

// TestReaderAtTraced: a traced read records whether each range came from
// the tier or was fetched (a GET).
func TestReaderAtTraced(t *testing.T) {
	src := &object{data: bytes.Repeat([]byte{7}, 1000)}
	r := NewReaderAt(NewMemory(1<<20, Options{}), "sst", src)
	store := tracing.NewStore(time.Hour, nil)
	addr := netip.MustParseAddr("127.0.0.1")
	s := store.Start(addr, addr, "QUERY")
	ctx := tracing.With(context.Background(), s)
	buf := make([]byte, 100)
	for range 2 {
		if _, err := r.ReadAt(ctx, buf, 200); err != nil {
			t.Fatal(err)
		}
	}
	_, _, events, _, _ := s.Snapshot()
	var got []string
	for _, e := range events {
		got = append(got, e.Activity)
	}
	want := []string{"Block cache miss: GET from the bucket: sst bytes 200-300", "Block cache hit: sst bytes 200-300"}
	if !slices.Equal(got, want) || src.reads.Load() != 1 {
		t.Fatalf("events %q after %d reads of the source, want %q after 1", got, src.reads.Load(), want)
	}
}
