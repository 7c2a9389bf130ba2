package manifest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/objectstore"
)

func TestCompactionRequests(t *testing.T) {
	ctx := ctxT(t)
	e := newEnv(t)
	js := e.connect()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m, err := Open(ctx, js, e.store, "c", Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	a, b := uuid.New(), uuid.New()

	// Before any request there is no bucket, and reading makes none.
	if rs, err := m.CompactionRequests(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("requests of a fresh cluster: %v, %v", rs, err)
	}
	if _, err := m.CompactionRequest(ctx, a); !errors.Is(err, ErrNotFound) {
		t.Fatalf("request of a fresh cluster: %v, want ErrNotFound", err)
	}
	if err := m.FinishCompactionRequest(ctx, a, uuid.New()); err != nil {
		t.Fatal(err)
	}
	if _, err := js.KeyValue(ctx, "c_requests"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("reading made the bucket: %v", err)
	}
	if _, err := m.RequestCompaction(ctx, uuid.Nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("request without a table: %v, want ErrInvalid", err)
	}

	ra, err := m.RequestCompaction(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Table != a || ra.ID == uuid.Nil || !ra.RequestedAt.Equal(now) || ra.Done() {
		t.Fatalf("request %+v", ra)
	}
	rb, err := m.RequestCompaction(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.CompactionRequest(ctx, a)
	if err != nil || got != ra {
		t.Fatalf("read back %+v, %v; want %+v", got, err, ra)
	}
	rs, err := m.CompactionRequests(ctx)
	if err != nil || len(rs) != 2 || !containsReq(rs, ra) || !containsReq(rs, rb) {
		t.Fatalf("requests %+v, %v", rs, err)
	}

	// Finishing another request ID changes nothing; the right one is
	// marked done once, keeping its first DoneAt.
	if err := m.FinishCompactionRequest(ctx, a, rb.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.CompactionRequest(ctx, a); got.Done() {
		t.Fatalf("request finished under another ID: %+v", got)
	}
	now = now.Add(time.Minute)
	if err := m.FinishCompactionRequest(ctx, a, ra.ID); err != nil {
		t.Fatal(err)
	}
	done := now
	now = now.Add(time.Minute)
	if err := m.FinishCompactionRequest(ctx, a, ra.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.CompactionRequest(ctx, a); !got.Done() || !got.DoneAt.Equal(done) || got.ID != ra.ID {
		t.Fatalf("finished request %+v, want done at %s", got, done)
	}

	// A new request replaces the done one; deleting under the old ID is
	// then a no-op, under the new one it removes it.
	ra2, err := m.RequestCompaction(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if ra2.ID == ra.ID || ra2.Done() {
		t.Fatalf("new request %+v after %+v", ra2, ra)
	}
	if err := m.DeleteCompactionRequest(ctx, a, ra.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := m.CompactionRequest(ctx, a); err != nil || got != ra2 {
		t.Fatalf("after deleting the old ID: %+v, %v", got, err)
	}
	if err := m.DeleteCompactionRequest(ctx, a, ra2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CompactionRequest(ctx, a); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted request: %v, want ErrNotFound", err)
	}
	if rs, err := m.CompactionRequests(ctx); err != nil || len(rs) != 1 || rs[0] != rb {
		t.Fatalf("requests after the delete: %+v, %v", rs, err)
	}

	// Requests are not archived.
	err = e.store.List(ctx, "manifest/", func(at objectstore.Attrs) error {
		if strings.Contains(at.Key, "requests") {
			t.Errorf("request archived as %s", at.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A request under another table's key is corrupt.
	kv, err := js.KeyValue(ctx, "c_requests")
	if err != nil {
		t.Fatal(err)
	}
	raw := `{"version":1,"data":{"id":"` + uuid.NewString() + `","table":"` + b.String() + `","requested_at":"2026-01-01T00:00:00Z"}}`
	if _, err := kv.Put(ctx, compactionRequestKey(a), []byte(raw)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CompactionRequests(ctx); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("misplaced request listed: %v, want ErrCorrupt", err)
	}
	if _, err := m.CompactionRequest(ctx, a); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("misplaced request read: %v, want ErrCorrupt", err)
	}
	if _, err := kv.Put(ctx, compactionRequestKey(a), []byte(`{"version":1,"data":{"id":1}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CompactionRequest(ctx, a); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("undecodable request: %v, want ErrCorrupt", err)
	}
}

func containsReq(rs []CompactionRequest, r CompactionRequest) bool { return slices.Contains(rs, r) }
