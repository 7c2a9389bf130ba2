package objectstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
	"github.com/sedimentdb/sediment/objectstore/objtest"
)

func newFileStore(t *testing.T) objectstore.Store {
	s, err := objectstore.NewFile(vfs.Default, t.TempDir(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFileAcceptance(t *testing.T) {
	t.Parallel()
	objtest.AcceptanceTest(t, newFileStore, objtest.Options{PartSize: 1 << 20})
}

func TestFileThroughPrefixAcceptance(t *testing.T) {
	t.Parallel()
	objtest.AcceptanceTest(t, func(t *testing.T) objectstore.Store {
		s, err := objectstore.WithPrefix(newFileStore(t), "cluster-1")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, objtest.Options{PartSize: 1 << 20})
}

func TestNewFile(t *testing.T) {
	cfg := objectstore.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.Prefix = "c1"
	s, err := objectstore.New(t.Context(), cfg, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, "c1", "k")); err != nil {
		t.Fatalf("object not under the prefix: %v", err)
	}
}

// TestFileCorrupt checks that a damaged object file is an error, not data.
func TestFileCorrupt(t *testing.T) {
	dir := t.TempDir()
	s, err := objectstore.NewFile(vfs.Default, dir, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := s.Put(ctx, "a/ok", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"short":    []byte("abc"),
		"badmagic": bytes.Repeat([]byte{1}, 40),
	} {
		if err := os.WriteFile(filepath.Join(dir, "a", name), content, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Head(ctx, "a/"+name); !errors.Is(err, objectstore.ErrCorrupt) {
			t.Fatalf("Head of %s file: %v, want corrupt", name, err)
		}
		if _, err := s.Get(ctx, "a/"+name); !errors.Is(err, objectstore.ErrCorrupt) {
			t.Fatalf("Get of %s file: %v, want corrupt", name, err)
		}
	}
	err = s.List(ctx, "a/", func(objectstore.Attrs) error { return nil })
	if !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("List over a corrupt file: %v, want corrupt", err)
	}
}

// TestFileNoLeftovers checks that aborted, cancelled and failed uploads
// leave no temporary files behind.
func TestFileNoLeftovers(t *testing.T) {
	dir := t.TempDir()
	s, err := objectstore.NewFile(vfs.Default, dir, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	w1, _ := s.NewWriter(t.Context(), "x")
	w1.Write([]byte("abc"))
	w1.Abort()
	w2, _ := s.NewWriter(ctx, "y")
	w2.Write([]byte("abc"))
	cancel()
	if err := w2.Close(); err == nil {
		t.Fatal("Close after cancel succeeded")
	}
	s.Put(t.Context(), "z", []byte("1"))
	if _, err := s.PutIf(t.Context(), "z", []byte("2"), objectstore.IfAbsent()); !objectstore.IsPreconditionFailed(err) {
		t.Fatal(err)
	}
	left, err := os.ReadDir(filepath.Join(dir, ".sediment-tmp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestMemRemoteAcceptance(t *testing.T) {
	t.Parallel()
	objtest.AcceptanceTest(t, func(t *testing.T) objectstore.Store {
		cfg := objectstore.DefaultConfig()
		cfg.PartSize = 1 << 20 // the fake has no minimum part size
		cfg.ListPageSize = 2
		return objectstore.NewMemRemote(cfg)
	}, objtest.Options{PartSize: 1 << 20})
}

// TestFileWriterCancelledWhileOpening cancels the context while NewWriter
// registers its abort hook; under -race this proves the two do not race.
func TestFileWriterCancelledWhileOpening(t *testing.T) {
	s := newFileStore(t)
	for i := range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		w, err := s.NewWriter(ctx, fmt.Sprintf("k/%d", i))
		if err != nil {
			continue // cancelled before the writer existed
		}
		if _, err := w.Write([]byte("x")); err == nil {
			w.Close()
		}
		w.Abort()
	}
}
