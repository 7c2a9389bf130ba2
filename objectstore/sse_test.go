package objectstore_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"io"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/objectstore"
)

// TestServerSideEncryption stores objects, in one request and in a
// multipart upload, with SSE-S3 and with SSE-KMS through both remote
// backends, against a MinIO with a KMS key (which MinIO needs for either),
// and checks that MinIO says each is encrypted as asked and reads back.
func TestServerSideEncryption(t *testing.T) {
	secret := make([]byte, 32)
	rand.Read(secret)
	const keyName = "sediment-test-key"
	// Read by the MinIO process the test starts: the test's environment
	// is passed on.
	t.Setenv("MINIO_KMS_SECRET_KEY", keyName+":"+base64.StdEncoding.EncodeToString(secret))
	m := testserver.MinIO(t)
	raw, err := minio.New(m.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	small := []byte("a small object")
	large := make([]byte, 6<<20) // past the 5 MiB part size: a multipart upload
	rand.Read(large)
	for _, backend := range []string{objectstore.BackendS3, objectstore.BackendMinIO} {
		for _, tc := range []struct{ sse, keyID, want string }{
			{objectstore.SSES3, "", "AES256"},
			{objectstore.SSEKMS, keyName, "aws:kms"},
		} {
			t.Run(backend+"/"+tc.sse, func(t *testing.T) {
				cfg := remoteConfig(t, m, backend)
				cfg.SSE, cfg.SSEKMSKeyID = tc.sse, tc.keyID
				s := newRemote(t, cfg, nil)
				ctx := t.Context()
				if _, err := s.Put(ctx, "small", small); err != nil {
					t.Fatalf("put: %v", err)
				}
				w, err := s.NewWriter(ctx, "large")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Write(large); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatalf("multipart upload: %v", err)
				}
				for key, data := range map[string][]byte{"small": small, "large": large} {
					info, err := raw.StatObject(ctx, cfg.Bucket, key, minio.StatObjectOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if got := info.Metadata.Get("X-Amz-Server-Side-Encryption"); got != tc.want {
						t.Errorf("%s: server-side encryption %q, want %q", key, got, tc.want)
					}
					rc, err := s.Get(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					back, err := io.ReadAll(rc)
					rc.Close()
					if err != nil || !bytes.Equal(back, data) {
						t.Errorf("%s reads back %d bytes, %v", key, len(back), err)
					}
				}
			})
		}
	}
	// Without SSE the objects are as the bucket's default leaves them.
	cfg := remoteConfig(t, m, objectstore.BackendMinIO)
	s := newRemote(t, cfg, nil)
	if _, err := s.Put(t.Context(), "plain", small); err != nil {
		t.Fatal(err)
	}
	info, err := raw.StatObject(t.Context(), cfg.Bucket, "plain", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Metadata.Get("X-Amz-Server-Side-Encryption"); got != "" {
		t.Errorf("unencrypted object: %q", got)
	}
}

func TestSSEValidate(t *testing.T) {
	for _, tc := range []struct {
		backend, sse, key string
		ok                bool
	}{
		{objectstore.BackendS3, objectstore.SSEKMS, "arn:aws:kms:eu-west-1:1:key/k", true},
		{objectstore.BackendMinIO, objectstore.SSES3, "", true},
		{objectstore.BackendS3, "aes", "", false},
		{objectstore.BackendS3, objectstore.SSES3, "k", false},
		{objectstore.BackendFile, objectstore.SSES3, "", false},
	} {
		cfg := objectstore.DefaultConfig()
		cfg.Backend, cfg.Bucket, cfg.Endpoint, cfg.Dir = tc.backend, "b", "127.0.0.1:9000", "d"
		cfg.SSE, cfg.SSEKMSKeyID = tc.sse, tc.key
		if err := cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s sse=%s key=%q: %v, want ok %v", tc.backend, tc.sse, tc.key, err, tc.ok)
		}
	}
}
