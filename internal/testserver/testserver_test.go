package testserver

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestFindBinaryMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GOPATH", t.TempDir())
	_, err := findBinary("minio")
	if err == nil || !strings.Contains(err.Error(), "GOPATH") {
		t.Fatalf("findBinary of a missing binary: %v", err)
	}
}

func TestMinIOLifecycle(t *testing.T) {
	m := MinIO(t)
	c := m.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if ok, err := c.BucketExists(ctx, m.Bucket); err != nil || !ok {
		t.Fatalf("bucket %s: exists %v, %v", m.Bucket, ok, err)
	}
	m.Kill()
	if _, err := c.BucketExists(ctx, m.Bucket); err == nil {
		t.Fatal("killed server answered")
	}
	m.Restart(t)
	if ok, err := c.BucketExists(ctx, m.Bucket); err != nil || !ok {
		t.Fatalf("after restart, bucket %s: exists %v, %v", m.Bucket, ok, err)
	}
	m.Pause(t)
	pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer pcancel()
	if _, err := c.BucketExists(pctx, m.Bucket); err == nil {
		t.Fatal("paused server answered")
	}
	m.Resume(t)
	if ok, err := c.BucketExists(ctx, m.Bucket); err != nil || !ok {
		t.Fatalf("after resume: exists %v, %v", ok, err)
	}
	m.Stop()
	m.Stop() // idempotent
}
