package rpc

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sedimentdb/sediment/internal/storage"
)

// TestErrorClassesTravel checks that each storage class a node's log can
// fail a write with keeps its identity across the hop.
func TestErrorClassesTravel(t *testing.T) {
	for _, class := range []error{storage.ErrUnavailable, storage.ErrTimeout, storage.ErrFenced, storage.ErrOverloaded} {
		err := fmt.Errorf("ingest: shard 1: %w: log did not confirm", class)
		remote := &Error{Code: codeOf(err), Message: err.Error()}
		if !errors.Is(remote, class) {
			t.Fatalf("%v arrives as code %d, which does not match %v", err, remote.Code, class)
		}
	}
}
