package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/internal/vfs"
)

func TestNodeIDPersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	id, err := loadNodeID(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseNodeID([]byte(id)); err != nil || len(id) != 16 {
		t.Fatalf("new id %q: %v", id, err)
	}
	again, err := loadNodeID(vfs.Default, dir)
	if err != nil || again != id {
		t.Fatalf("second load = %q, %v; want %q", again, err, id)
	}
	other, err := loadNodeID(vfs.Default, t.TempDir())
	if err != nil || other == id {
		t.Fatalf("another data dir got %q, %v", other, err)
	}
}

func TestNodeIDChosenByOperator(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, nodeIDFile), []byte("ingest-3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if id, err := loadNodeID(vfs.Default, dir); err != nil || id != "ingest-3" {
		t.Fatalf("load = %q, %v", id, err)
	}
	if err := os.WriteFile(filepath.Join(dir, nodeIDFile), []byte("bad id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadNodeID(vfs.Default, dir); err == nil || !strings.Contains(err.Error(), nodeIDFile) {
		t.Fatalf("load of a bad id: %v", err)
	}
}

func TestParseNodeID(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"a", "a"},
		{"Node_1.eu-west\n", "Node_1.eu-west"},
		{"", ""},
		{"\n", ""},
		{"x\n\n", ""},
		{"a/b", ""},
		{"é", ""},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{strings.Repeat("a", 65), ""},
	} {
		got, err := parseNodeID([]byte(tc.in))
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("parseNodeID(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseNodeID(f *testing.F) {
	f.Add([]byte("0123456789abcdef\n"))
	f.Add([]byte("a b"))
	f.Add([]byte{0xff, '\n'})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := parseNodeID(b)
		if err != nil {
			return
		}
		// An accepted ID reads back the same after it is written.
		if again, err := parseNodeID([]byte(id + "\n")); err != nil || again != id {
			t.Fatalf("%q: written back reads %q, %v", id, again, err)
		}
	})
}
