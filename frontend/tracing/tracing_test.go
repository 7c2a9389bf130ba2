package tracing

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

// TestStoreTTL: a session shows without a duration while it runs, with one
// once finished, and is dropped once its TTL has passed since it finished.
func TestStoreTTL(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := NewStore(time.Hour, func() time.Time { return now })
	addr := netip.MustParseAddr("127.0.0.1")
	s := st.Start(addr, addr, "QUERY")
	ctx := With(context.Background(), s)
	From(ctx).Eventf("parse", "Parsing %s", "SELECT 1")
	if got := st.Sessions(); len(got) != 1 || got[0] != s {
		t.Fatalf("running: sessions %v", got)
	}
	if _, _, events, _, done := s.Snapshot(); done || len(events) != 1 || events[0].Activity != "Parsing SELECT 1" || events[0].Thread != "parse" {
		t.Fatalf("running: done %v, events %+v", done, events)
	}
	now = now.Add(90 * time.Minute) // past the TTL counted from the start
	st.Finish(s)
	if _, _, _, d, done := s.Snapshot(); !done || d != 90*time.Minute {
		t.Fatalf("finished: done %v, duration %v", done, d)
	}
	now = now.Add(59 * time.Minute)
	if got := st.Sessions(); len(got) != 1 {
		t.Fatalf("within the TTL of the finish: %d sessions", len(got))
	}
	now = now.Add(time.Minute)
	if got := st.Sessions(); len(got) != 0 {
		t.Fatalf("past the TTL: %d sessions", len(got))
	}
}

// TestUntraced: a request without a session has no trace to record into.
func TestUntraced(t *testing.T) {
	if From(context.Background()) != nil {
		t.Fatal("an untraced context has a session")
	}
}
