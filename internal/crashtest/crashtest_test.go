package crashtest

import (
	"slices"
	"strings"
	"testing"
)

func TestReadAcksIgnoresOtherLinesAndATornTail(t *testing.T) {
	first := make(chan struct{})
	var ids []uint64
	in := "=== RUN   TestX\nack 1\nack 2\nPASS\nack 3"
	if err := readAcks(strings.NewReader(in), &ids, first); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []uint64{1, 2}) {
		t.Fatalf("ids = %v, want [1 2]", ids)
	}
	select {
	case <-first:
	default:
		t.Fatal("first was not closed")
	}
}

func TestReadAcksRejectsGarbage(t *testing.T) {
	var ids []uint64
	if err := readAcks(strings.NewReader("ack x\n"), &ids, make(chan struct{})); err == nil {
		t.Fatal("accepted a malformed ack")
	}
}
