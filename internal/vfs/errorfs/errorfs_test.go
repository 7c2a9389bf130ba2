package errorfs_test

import (
	"errors"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/internal/vfs/errorfs"
)

func TestRuleAfterAndTimes(t *testing.T) {
	rule := &errorfs.Rule{Ops: errorfs.OpSync, Path: func(p string) bool { return strings.HasSuffix(p, ".log") }, After: 2, Times: 1}
	efs := errorfs.Wrap(vfs.NewMem(), rule)
	f, err := efs.Create("/a.log")
	if err != nil {
		t.Fatal(err)
	}
	g, err := efs.Create("/b.txt")
	if err != nil {
		t.Fatal(err)
	}
	var errs []bool
	for range 5 {
		if err := g.Sync(); err != nil {
			t.Fatalf("sync of a path the rule does not match failed: %v", err)
		}
		err := f.Sync()
		if err != nil && !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("unexpected error %v", err)
		}
		errs = append(errs, err != nil)
	}
	if want := []bool{false, false, true, false, false}; !equal(errs, want) {
		t.Fatalf("failures = %v, want %v", errs, want)
	}
	if rule.Calls() != 5 {
		t.Fatalf("Calls = %d, want 5", rule.Calls())
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatalf("write was not matched by the rule but failed: %v", err)
	}
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEveryOperationConsultsInjector(t *testing.T) {
	mem := vfs.NewMem()
	mem.MkdirAll("/d", 0o755)
	w, _ := mem.Create("/d/f")
	w.Write([]byte("data"))
	w.Close()

	var failing atomic.Uint32
	myErr := errors.New("boom")
	efs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if errorfs.Op(failing.Load())&op != 0 {
			return myErr
		}
		return nil
	}))
	f, err := efs.OpenAppend("/d/f")
	if err != nil {
		t.Fatal(err)
	}
	ops := []struct {
		op  errorfs.Op
		run func() error
	}{
		{errorfs.OpCreate, func() error { _, err := efs.Create("/d/x"); return err }},
		{errorfs.OpCreate, func() error { _, err := efs.CreateExclusive("/d/y"); return err }},
		{errorfs.OpOpen, func() error { _, err := efs.Open("/d/f"); return err }},
		{errorfs.OpOpen, func() error { _, err := efs.OpenAppend("/d/f"); return err }},
		{errorfs.OpLink, func() error { return efs.Link("/d/f", "/d/l") }},
		{errorfs.OpRename, func() error { return efs.Rename("/d/l", "/d/m") }},
		{errorfs.OpTruncate, func() error { return efs.Truncate("/d/m", 2) }},
		{errorfs.OpRemove, func() error { return efs.Remove("/d/m") }},
		{errorfs.OpRemove, func() error { return efs.RemoveAll("/d/x") }},
		{errorfs.OpMkdirAll, func() error { return efs.MkdirAll("/e", 0o755) }},
		{errorfs.OpReadDir, func() error { _, err := efs.ReadDir("/d"); return err }},
		{errorfs.OpStat, func() error { _, err := efs.Stat("/d/f"); return err }},
		{errorfs.OpSyncDir, func() error { return efs.SyncDir("/d") }},
		{errorfs.OpRead, func() error { _, err := f.ReadAt(make([]byte, 1), 0); return err }},
		{errorfs.OpRead, func() error { _, err := f.Read(make([]byte, 1)); return err }},
		{errorfs.OpWrite, func() error { _, err := f.Write([]byte("z")); return err }},
		{errorfs.OpSync, func() error { return f.Sync() }},
		{errorfs.OpStat, func() error { _, err := f.Stat(); return err }},
	}
	for _, o := range ops {
		failing.Store(uint32(o.op))
		if err := o.run(); !errors.Is(err, myErr) {
			t.Fatalf("%v with injection: err = %v", o.op, err)
		}
		failing.Store(0)
		if err := o.run(); err != nil {
			t.Fatalf("%v without injection: %v", o.op, err)
		}
	}
	failing.Store(uint32(errorfs.OpClose))
	if err := f.Close(); !errors.Is(err, myErr) {
		t.Fatalf("close: %v", err)
	}
	failing.Store(0)
	// The underlying file was closed anyway.
	if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	if s := (errorfs.OpSync | errorfs.OpWrite).String(); s != "write|sync" {
		t.Fatalf("Op.String = %q", s)
	}
}
