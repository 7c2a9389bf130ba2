package vfs

import (
	"io"
	"testing"
)

func readAll(t *testing.T, fs FS, name string) string {
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
	return string(b)
}

func TestWriteFileAtomicSurvivesACrash(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("."); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(fs, "d", "f", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(fs, "d", "f", []byte("two")); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone()
	if got := readAll(t, crashed, "d/f"); got != "two" {
		t.Fatalf("after a crash d/f holds %q, want %q", got, "two")
	}
	names, err := crashed.ReadDir("d")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 {
		t.Fatalf("after a crash d holds %v, want only f", names)
	}
}
