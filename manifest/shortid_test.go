package manifest

import (
	"testing"

	"github.com/google/uuid"
)

func TestFreshIDAvoidsTakenShortIDs(t *testing.T) {
	a := uuid.MustParse("00000001-0000-4000-8000-000000000001")
	b := uuid.MustParse("00000001-ffff-4fff-bfff-ffffffffffff") // a's ShortID
	c := uuid.MustParse("00000002-0000-4000-8000-000000000001")
	taken := map[uint32]bool{ShortID(a): true}
	gen := []uuid.UUID{b, c}
	got := freshID(taken, a, func() uuid.UUID { id := gen[0]; gen = gen[1:]; return id })
	if got != c {
		t.Fatalf("got %v, want %v", got, c)
	}
	if got := freshID(taken, c, nil); got != c {
		t.Fatalf("a free ID changed to %v", got)
	}
}
