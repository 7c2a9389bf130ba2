package objectstore_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/objectstore"
	"github.com/sedimentdb/sediment/objectstore/objtest"
)

// remoteConfig returns a configuration for backend against m, in a new
// bucket.
func remoteConfig(t *testing.T, m *testserver.MinIOServer, backend string) objectstore.Config {
	cfg := objectstore.DefaultConfig()
	cfg.Backend = backend
	cfg.Endpoint = m.Endpoint
	cfg.Insecure = true
	cfg.PathStyle = true
	cfg.Region = "us-east-1"
	cfg.AccessKeyID = m.AccessKey
	cfg.SecretAccessKey = m.SecretKey
	cfg.Bucket = m.NewBucket(t)
	cfg.PartSize = 5 << 20
	cfg.ListPageSize = 2 // exercise pagination
	cfg.Timeout = 30 * time.Second
	cfg.Retry.MinBackoff = 10 * time.Millisecond
	cfg.Retry.MaxBackoff = 200 * time.Millisecond
	return cfg
}

func newRemote(t *testing.T, cfg objectstore.Config, reg prometheus.Registerer) objectstore.Store {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s, err := objectstore.New(t.Context(), cfg, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMinIO runs everything that needs a real server against one MinIO;
// the tests that stop or freeze it run last.
func TestMinIO(t *testing.T) {
	t.Parallel()
	m := testserver.MinIO(t)
	t.Run("Acceptance", func(t *testing.T) { testRemoteAcceptance(t, m) })
	t.Run("Metrics", func(t *testing.T) { testMetricsCountEveryRequest(t, m) })
	t.Run("Retries", func(t *testing.T) { testRetries(t, m) })
	t.Run("HungServer", func(t *testing.T) { testHungServerTimesOut(t, m) })
	t.Run("RestartMidUpload", func(t *testing.T) { testRestartMidUpload(t, m) })
}

func testRemoteAcceptance(t *testing.T, m *testserver.MinIOServer) {
	for _, backend := range []string{objectstore.BackendS3, objectstore.BackendMinIO} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			objtest.AcceptanceTest(t, func(t *testing.T) objectstore.Store {
				return newRemote(t, remoteConfig(t, m, backend), nil)
			}, objtest.Options{PartSize: 5 << 20})
		})
	}
}
