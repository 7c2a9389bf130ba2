// Package objtest holds the acceptance suite that every objectstore.Store
// implementation must pass: the file, S3 and MinIO backends, and every
// wrapper or fake that tests use in their place.
package objtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/objectstore"
)

// Options adapts the suite to a store.
type Options struct {
	// PartSize is the size above which the store's Writer uses a multipart
	// upload; the suite writes objects a few parts long. Zero means 5 MiB.
	PartSize int64
}

// AcceptanceTest runs the suite. newStore must return an empty store each
// time it is called; every subtest calls it once.
func AcceptanceTest(t *testing.T, newStore func(t *testing.T) objectstore.Store, opts Options) {
	if opts.PartSize == 0 {
		opts.PartSize = 5 << 20
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s objectstore.Store, opts Options)
	}{
		{"RoundTrip", testRoundTrip},
		{"Writer", testWriter},
		{"WriterCancel", testWriterCancel},
		{"Range", testRange},
		{"ReaderAt", testReaderAt},
		{"NotFound", testNotFound},
		{"Delete", testDelete},
		{"List", testList},
		{"PutIfAbsent", testPutIfAbsent},
		{"PutIfMatch", testPutIfMatch},
		{"PutIfAbsentRace", testPutIfAbsentRace},
		{"CompareAndSwapRace", testCompareAndSwapRace},
		{"Prefix", testPrefix},
		{"InvalidKey", testInvalidKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t), opts) })
	}
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// randomBytes returns n bytes that differ between calls.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(n), byte(rand.Uint32())})
	r.Read(b)
	return b
}

func mustPut(t *testing.T, s objectstore.Store, key string, data []byte) string {
	t.Helper()
	etag, err := s.Put(ctxOf(t), key, data)
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	if etag == "" {
		t.Fatalf("Put(%q) returned an empty ETag", key)
	}
	return etag
}

func read(t *testing.T, rc io.ReadCloser, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return b
}

func mustGet(t *testing.T, s objectstore.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(ctxOf(t), key)
	return read(t, rc, err)
}

// checkObject checks that key holds exactly want, through Get and Head.
func checkObject(t *testing.T, s objectstore.Store, key string, want []byte, etag string) {
	t.Helper()
	if got := mustGet(t, s, key); !bytes.Equal(got, want) {
		t.Fatalf("Get(%q): got %d bytes, want %d (equal prefix %d)", key, len(got), len(want), commonPrefix(got, want))
	}
	a, err := s.Head(ctxOf(t), key)
	if err != nil {
		t.Fatalf("Head(%q): %v", key, err)
	}
	if a.Key != key || a.Size != int64(len(want)) {
		t.Fatalf("Head(%q) = key %q size %d, want size %d", key, a.Key, a.Size, len(want))
	}
	if etag != "" && a.ETag != etag {
		t.Fatalf("Head(%q).ETag = %q, want %q from the put", key, a.ETag, etag)
	}
	if d := time.Since(a.ModTime); d < -time.Hour || d > time.Hour {
		t.Fatalf("Head(%q).ModTime = %v, not near now", key, a.ModTime)
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func checkNotFound(t *testing.T, s objectstore.Store, key string) {
	t.Helper()
	if a, err := s.Head(ctxOf(t), key); !objectstore.IsNotFound(err) {
		t.Fatalf("Head(%q) = %+v, %v; want not found", key, a, err)
	}
}

// writeInPieces streams data through a Writer in uneven writes.
func writeInPieces(w objectstore.Writer, data []byte) error {
	for len(data) > 0 {
		n := min(len(data), 1+rand.IntN(1<<20))
		if _, err := w.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func testRoundTrip(t *testing.T, s objectstore.Store, opts Options) {
	for _, n := range []int{0, 1, 1000, int(opts.PartSize) + 1} {
		key := fmt.Sprintf("put/%d", n)
		data := randomBytes(n)
		etag := mustPut(t, s, key, data)
		checkObject(t, s, key, data, etag)
	}
	// A put replaces the object and its ETag.
	first, _ := s.Head(ctxOf(t), "put/1000")
	data := randomBytes(1000)
	etag := mustPut(t, s, "put/1000", data)
	checkObject(t, s, "put/1000", data, etag)
	if etag == first.ETag {
		t.Fatalf("replacing an object with other bytes kept ETag %q", etag)
	}
}

func testWriter(t *testing.T, s objectstore.Store, opts Options) {
	// Empty, tiny, exactly one part (a single PUT), and three parts.
	sizes := []int{0, 1, int(opts.PartSize), 2*int(opts.PartSize) + 12345}
	for _, n := range sizes {
		key := fmt.Sprintf("stream/%d", n)
		data := randomBytes(n)
		w, err := s.NewWriter(ctxOf(t), key)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeInPieces(w, data); err != nil {
			t.Fatalf("size %d: write: %v", n, err)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("size %d: close: %v", n, err)
		}
		checkObject(t, s, key, data, "")
		if err := w.Abort(); err != nil {
			t.Fatalf("Abort after Close: %v", err)
		}
		checkObject(t, s, key, data, "")
		if _, err := w.Write([]byte("x")); err == nil {
			t.Fatal("Write after Close succeeded")
		}
	}

	// The old object stays until the new one is complete.
	old := randomBytes(100)
	mustPut(t, s, "stream/replace", old)
	data := randomBytes(int(opts.PartSize) + 1)
	w, err := s.NewWriter(ctxOf(t), "stream/replace")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeInPieces(w, data); err != nil {
		t.Fatal(err)
	}
	checkObject(t, s, "stream/replace", old, "")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkObject(t, s, "stream/replace", data, "")

	// Abort leaves nothing, whether or not a part was sent.
	for _, n := range []int{10, int(opts.PartSize) + 1} {
		w, err := s.NewWriter(ctxOf(t), "stream/aborted")
		if err != nil {
			t.Fatal(err)
		}
		if err := writeInPieces(w, randomBytes(n)); err != nil {
			t.Fatal(err)
		}
		if err := w.Abort(); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		if err := w.Close(); err == nil {
			t.Fatal("Close after Abort succeeded")
		}
		checkNotFound(t, s, "stream/aborted")
	}
}

func testWriterCancel(t *testing.T, s objectstore.Store, opts Options) {
	for _, n := range []int{10, 2*int(opts.PartSize) + 1} {
		ctx, cancel := context.WithCancel(ctxOf(t))
		w, err := s.NewWriter(ctx, "cancel/obj")
		if err != nil {
			t.Fatal(err)
		}
		if err := writeInPieces(w, randomBytes(n)); err != nil {
			t.Fatal(err)
		}
		cancel()
		// Writes after the cancel may or may not fail, Close must.
		w.Write([]byte("more"))
		if err := w.Close(); err == nil {
			t.Fatalf("size %d: Close after cancel succeeded", n)
		}
		checkNotFound(t, s, "cancel/obj")
	}

	// A context cancelled before the first write.
	ctx, cancel := context.WithCancel(ctxOf(t))
	cancel()
	if w, err := s.NewWriter(ctx, "cancel/early"); err == nil {
		w.Write([]byte("x"))
		if err := w.Close(); err == nil {
			t.Fatal("Close with a cancelled context succeeded")
		}
	}
	checkNotFound(t, s, "cancel/early")
}

func testRange(t *testing.T, s objectstore.Store, opts Options) {
	data := randomBytes(1000)
	mustPut(t, s, "range/obj", data)
	ctx := ctxOf(t)
	cases := []struct {
		off, length int64
		want        []byte
	}{
		{0, 10, data[:10]},
		{0, -1, data},
		{0, 1000, data},
		{0, 5000, data},
		{990, 10, data[990:]},
		{990, 100, data[990:]},
		{999, 1, data[999:]},
		{500, -1, data[500:]},
		{123, 456, data[123 : 123+456]},
		{10, 0, nil},
	}
	for _, c := range cases {
		rc, err := s.GetRange(ctx, "range/obj", c.off, c.length)
		if got := read(t, rc, err); !bytes.Equal(got, c.want) {
			t.Fatalf("GetRange(%d, %d): got %d bytes, want %d", c.off, c.length, len(got), len(c.want))
		}
	}
	for _, off := range []int64{1000, 1001, 1 << 40} {
		if rc, err := s.GetRange(ctx, "range/obj", off, 10); !objectstore.IsInvalidRange(err) {
			if err == nil {
				rc.Close()
			}
			t.Fatalf("GetRange(%d, 10) past the end: err %v, want invalid range", off, err)
		}
	}
	mustPut(t, s, "range/empty", nil)
	if rc, err := s.GetRange(ctx, "range/empty", 0, 10); !objectstore.IsInvalidRange(err) {
		if err == nil {
			rc.Close()
		}
		t.Fatalf("GetRange of an empty object: err %v, want invalid range", err)
	}
}

func testReaderAt(t *testing.T, s objectstore.Store, opts Options) {
	data := randomBytes(1000)
	mustPut(t, s, "readerat/obj", data)
	ctx := ctxOf(t)
	r, err := objectstore.NewReaderAt(ctx, s, "readerat/obj")
	if err != nil {
		t.Fatal(err)
	}
	if r.Size() != 1000 {
		t.Fatalf("Size = %d", r.Size())
	}
	cases := []struct {
		off, n  int
		wantN   int
		wantEOF bool
	}{
		{0, 100, 100, false},
		{900, 100, 100, false},
		{950, 100, 50, true},
		{1000, 10, 0, true},
		{2000, 10, 0, true},
		{0, 0, 0, false},
	}
	for _, c := range cases {
		p := make([]byte, c.n)
		n, err := r.ReadAt(ctx, p, int64(c.off))
		if n != c.wantN || (err == io.EOF) != c.wantEOF || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d, eof %v", c.n, c.off, n, err, c.wantN, c.wantEOF)
		}
		if !bytes.Equal(p[:n], data[min(c.off, 1000):min(c.off, 1000)+n]) {
			t.Fatalf("ReadAt(%d bytes at %d) returned wrong bytes", c.n, c.off)
		}
	}
	if _, err := objectstore.NewReaderAt(ctx, s, "readerat/missing"); !objectstore.IsNotFound(err) {
		t.Fatalf("NewReaderAt of a missing key: %v", err)
	}
}

func testNotFound(t *testing.T, s objectstore.Store, opts Options) {
	ctx := ctxOf(t)
	mustPut(t, s, "nf/dir/obj", []byte("x"))
	for _, key := range []string{"nf/missing", "nf/dir", "nf/dir/obj/below", "nf/di"} {
		checkNotFound(t, s, key)
		if _, err := s.Get(ctx, key); !objectstore.IsNotFound(err) {
			t.Fatalf("Get(%q): %v, want not found", key, err)
		}
		if _, err := s.GetRange(ctx, key, 0, 1); !objectstore.IsNotFound(err) {
			t.Fatalf("GetRange(%q): %v, want not found", key, err)
		}
	}
	if err := s.Delete(ctx, "nf/missing"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
}

func testDelete(t *testing.T, s objectstore.Store, opts Options) {
	ctx := ctxOf(t)
	mustPut(t, s, "del/a", []byte("a"))
	mustPut(t, s, "del/b", []byte("b"))
	for range 2 {
		if err := s.Delete(ctx, "del/a"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		checkNotFound(t, s, "del/a")
	}
	checkObject(t, s, "del/b", []byte("b"), "")
	// A deleted key can be created again, also conditionally.
	if _, err := s.PutIf(ctx, "del/a", []byte("again"), objectstore.IfAbsent()); err != nil {
		t.Fatalf("PutIf(IfAbsent) after Delete: %v", err)
	}
	checkObject(t, s, "del/a", []byte("again"), "")
}

func listKeys(t *testing.T, s objectstore.Store, prefix string) []string {
	t.Helper()
	var keys []string
	err := s.List(ctxOf(t), prefix, func(a objectstore.Attrs) error {
		keys = append(keys, a.Key)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return keys
}

func testList(t *testing.T, s objectstore.Store, opts Options) {
	keys := []string{"l/a", "l/b.c", "l/b/1", "l/b/2", "l/b/3/x", "l/c", "l/c0", "m", "k/z"}
	etags := map[string]string{}
	for i, k := range keys {
		etags[k] = mustPut(t, s, k, randomBytes(i))
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"k/z", "l/a", "l/b.c", "l/b/1", "l/b/2", "l/b/3/x", "l/c", "l/c0", "m"}},
		{"l/", []string{"l/a", "l/b.c", "l/b/1", "l/b/2", "l/b/3/x", "l/c", "l/c0"}},
		{"l/b", []string{"l/b.c", "l/b/1", "l/b/2", "l/b/3/x"}},
		{"l/b/", []string{"l/b/1", "l/b/2", "l/b/3/x"}},
		{"l/c", []string{"l/c", "l/c0"}},
		{"l/c0", []string{"l/c0"}},
		{"l/d", nil},
		{"zz", nil},
		{"l/b/3/x/y", nil},
	}
	for _, c := range cases {
		if got := listKeys(t, s, c.prefix); !slices.Equal(got, c.want) {
			t.Fatalf("List(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
	// Attributes agree with Head.
	err := s.List(ctxOf(t), "", func(a objectstore.Attrs) error {
		i := slices.Index(keys, a.Key)
		if a.Size != int64(i) || a.ETag != etags[a.Key] {
			return fmt.Errorf("List gave %+v, want size %d ETag %s", a, i, etags[a.Key])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// An error from fn stops the listing and is returned.
	stop := errors.New("stop")
	var seen int
	err = s.List(ctxOf(t), "", func(objectstore.Attrs) error {
		seen++
		if seen == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 3 {
		t.Fatalf("List with fn failing at the 3rd key: err %v after %d keys", err, seen)
	}
}

func testPutIfAbsent(t *testing.T, s objectstore.Store, opts Options) {
	ctx := ctxOf(t)
	etag, err := s.PutIf(ctx, "cond/a", []byte("first"), objectstore.IfAbsent())
	if err != nil {
		t.Fatalf("PutIf(IfAbsent) of a new key: %v", err)
	}
	checkObject(t, s, "cond/a", []byte("first"), etag)
	if _, err := s.PutIf(ctx, "cond/a", []byte("second"), objectstore.IfAbsent()); !objectstore.IsPreconditionFailed(err) {
		t.Fatalf("PutIf(IfAbsent) of an existing key: %v, want precondition failed", err)
	}
	checkObject(t, s, "cond/a", []byte("first"), etag)
}

func testPutIfMatch(t *testing.T, s objectstore.Store, opts Options) {
	ctx := ctxOf(t)
	etag := mustPut(t, s, "cond/m", []byte("v1"))
	other := mustPut(t, s, "cond/other", []byte("other"))
	for _, bad := range []string{other, "0123456789abcdef0123456789abcdef"} {
		if _, err := s.PutIf(ctx, "cond/m", []byte("x"), objectstore.IfMatch(bad)); !objectstore.IsPreconditionFailed(err) {
			t.Fatalf("PutIf(IfMatch(wrong)): %v, want precondition failed", err)
		}
	}
	checkObject(t, s, "cond/m", []byte("v1"), etag)
	etag2, err := s.PutIf(ctx, "cond/m", []byte("v2"), objectstore.IfMatch(etag))
	if err != nil {
		t.Fatalf("PutIf(IfMatch(current)): %v", err)
	}
	checkObject(t, s, "cond/m", []byte("v2"), etag2)
	if _, err := s.PutIf(ctx, "cond/m", []byte("v3"), objectstore.IfMatch(etag)); !objectstore.IsPreconditionFailed(err) {
		t.Fatalf("PutIf(IfMatch(stale)): %v, want precondition failed", err)
	}
	if _, err := s.PutIf(ctx, "cond/missing", []byte("x"), objectstore.IfMatch(etag)); !objectstore.IsPreconditionFailed(err) {
		t.Fatalf("PutIf(IfMatch) of a missing key: %v, want precondition failed", err)
	}
	checkNotFound(t, s, "cond/missing")
}

func testPutIfAbsentRace(t *testing.T, s objectstore.Store, opts Options) {
	const n = 16
	ctx := ctxOf(t)
	var wg sync.WaitGroup
	errs := make([]error, n)
	etags := make([]string, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			etags[i], errs[i] = s.PutIf(ctx, "race/key", []byte("writer "+strconv.Itoa(i)), objectstore.IfAbsent())
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("writers %d and %d both created the key", winner, i)
			}
			winner = i
		case !objectstore.IsPreconditionFailed(err):
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer created the key")
	}
	checkObject(t, s, "race/key", []byte("writer "+strconv.Itoa(winner)), etags[winner])
}

// testCompareAndSwapRace increments a counter from several goroutines with
// read, then PutIf(IfMatch): no increment may be lost.
func testCompareAndSwapRace(t *testing.T, s objectstore.Store, opts Options) {
	const writers, increments = 4, 3
	ctx := ctxOf(t)
	mustPut(t, s, "cas/counter", []byte("0"))
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for done := 0; done < increments; {
				a, err := s.Head(ctx, "cas/counter")
				if err != nil {
					errs <- err
					return
				}
				rc, err := s.Get(ctx, "cas/counter")
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					errs <- err
					return
				}
				v, err := strconv.Atoi(string(b))
				if err != nil {
					errs <- err
					return
				}
				// The read may be newer than the Head; then the put fails
				// and is retried, which is still correct.
				_, err = s.PutIf(ctx, "cas/counter", []byte(strconv.Itoa(v+1)), objectstore.IfMatch(a.ETag))
				switch {
				case err == nil:
					done++
				case !objectstore.IsPreconditionFailed(err):
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, want := string(mustGet(t, s, "cas/counter")), strconv.Itoa(writers*increments); got != want {
		t.Fatalf("counter = %s, want %s: an update was lost", got, want)
	}
}

func testPrefix(t *testing.T, s objectstore.Store, opts Options) {
	a, err := objectstore.WithPrefix(s, "tenant-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := objectstore.WithPrefix(s, "tenant-b/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxOf(t)
	mustPut(t, a, "k/1", []byte("a1"))
	mustPut(t, b, "k/1", []byte("b1"))
	w, err := a.NewWriter(ctx, "k/2")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("a2"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkObject(t, a, "k/1", []byte("a1"), "")
	checkObject(t, b, "k/1", []byte("b1"), "")
	checkObject(t, s, "tenant-a/k/2", []byte("a2"), "")
	if got := listKeys(t, a, ""); !slices.Equal(got, []string{"k/1", "k/2"}) {
		t.Fatalf("List through prefix a = %q", got)
	}
	if got := listKeys(t, b, "k/"); !slices.Equal(got, []string{"k/1"}) {
		t.Fatalf("List through prefix b = %q", got)
	}
	if got := listKeys(t, s, ""); !slices.Equal(got, []string{"tenant-a/k/1", "tenant-a/k/2", "tenant-b/k/1"}) {
		t.Fatalf("List of the shared store = %q", got)
	}
	if _, err := a.PutIf(ctx, "k/1", []byte("x"), objectstore.IfAbsent()); !objectstore.IsPreconditionFailed(err) {
		t.Fatalf("PutIf through prefix: %v", err)
	}
	rc, err := a.GetRange(ctx, "k/1", 1, 1)
	if got := read(t, rc, err); string(got) != "1" {
		t.Fatalf("GetRange through prefix = %q", got)
	}
	if err := a.Delete(ctx, "k/1"); err != nil {
		t.Fatal(err)
	}
	checkNotFound(t, a, "k/1")
	checkObject(t, b, "k/1", []byte("b1"), "")
	if _, err := objectstore.WithPrefix(s, "/bad"); err == nil {
		t.Fatal("WithPrefix accepted a prefix starting with a slash")
	}
}

func testInvalidKey(t *testing.T, s objectstore.Store, opts Options) {
	ctx := ctxOf(t)
	for _, key := range []string{"", "/a", "a/", "a//b", "a/../b", "./a", "a\x00b", string(make([]byte, 1025))} {
		if _, err := s.Put(ctx, key, []byte("x")); !errors.Is(err, objectstore.ErrInvalidKey) {
			t.Fatalf("Put(%q): %v, want invalid key", key, err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, objectstore.ErrInvalidKey) {
			t.Fatalf("Get(%q): %v, want invalid key", key, err)
		}
	}
}
