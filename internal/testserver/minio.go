package testserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// MinIOInstall is the command that installs the MinIO server these tests
// expect; `make test` runs it.
const MinIOInstall = "go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"

// MinIOServer is a MinIO server on 127.0.0.1 with a bucket created for the
// test.
type MinIOServer struct {
	// Endpoint is host:port, for plain HTTP.
	Endpoint  string
	AccessKey string
	SecretKey string
	// Bucket exists when MinIO returns; NewBucket makes more.
	Bucket string
	// Dir holds the server's data; it survives Restart.
	Dir string

	proc    *process
	buckets atomic.Int64
}

// MinIO starts a MinIO server for t, waits until it is ready and creates a
// bucket. The test's cleanup stops the server. If the minio binary is
// missing, the test fails with the command that installs it.
func MinIO(t testing.TB) *MinIOServer {
	t.Helper()
	bin, err := findBinary("minio")
	if err != nil {
		t.Fatalf("%v; install it with:\n\t%s", err, MinIOInstall)
	}
	m := &MinIOServer{
		AccessKey: "sediment-test",
		SecretKey: "sediment-test-secret",
		Dir:       t.TempDir(),
	}
	// The free port may be taken before MinIO binds it; try a few.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		require(t, err)
		m.Endpoint = "127.0.0.1:" + strconv.Itoa(port)
		m.proc = &process{
			name: "minio",
			bin:  bin,
			args: []string{"server", m.Dir, "--address", m.Endpoint, "--quiet"},
			env: []string{
				"MINIO_ROOT_USER=" + m.AccessKey,
				"MINIO_ROOT_PASSWORD=" + m.SecretKey,
				"MINIO_BROWSER=off",
				"MINIO_UPDATE=off",
			},
		}
		require(t, m.proc.start())
		err = m.waitReady()
		if err == nil {
			break
		}
		m.proc.stop(syscall.SIGKILL, time.Second)
		if attempt == 2 {
			t.Fatal(err)
		}
	}
	t.Cleanup(m.Stop)
	m.Bucket = m.NewBucket(t)
	return m
}

func (m *MinIOServer) waitReady() error {
	url := "http://" + m.Endpoint + "/minio/health/ready"
	return m.proc.waitReady(time.Minute, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	})
}

// Client returns a minio-go client for the server.
func (m *MinIOServer) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(m.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(m.AccessKey, m.SecretKey, ""),
		Region: "us-east-1",
	})
	require(t, err)
	return c
}

// NewBucket creates an empty bucket with a name unique to the server.
func (m *MinIOServer) NewBucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test-%d", m.buckets.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := m.Client(t).MakeBucket(ctx, name, minio.MakeBucketOptions{Region: "us-east-1"})
	if err != nil {
		t.Fatalf("testserver: create bucket %s: %v", name, err)
	}
	return name
}

// Stop shuts the server down gracefully. Calling it again does nothing.
func (m *MinIOServer) Stop() { m.proc.stop(syscall.SIGTERM, 10*time.Second) }

// Kill ends the server abruptly, as a crash would.
func (m *MinIOServer) Kill() { m.proc.stop(syscall.SIGKILL, time.Second) }

// Restart starts a stopped or killed server again on the same port with
// the same data, and waits until it is ready.
func (m *MinIOServer) Restart(t testing.TB) {
	t.Helper()
	m.proc.stop(syscall.SIGTERM, 10*time.Second)
	require(t, m.proc.start())
	require(t, m.waitReady())
}

// Pause freezes the server (SIGSTOP): connections stay open but nothing is
// answered, as with a hung server or a network partition.
func (m *MinIOServer) Pause(t testing.TB) { t.Helper(); require(t, m.proc.signal(syscall.SIGSTOP)) }

// Resume unfreezes a paused server (SIGCONT).
func (m *MinIOServer) Resume(t testing.TB) { t.Helper(); require(t, m.proc.signal(syscall.SIGCONT)) }
