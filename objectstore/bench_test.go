package objectstore_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/objectstore"
)

const benchObjectSize = 64 << 20

func benchStore(b *testing.B, m *testserver.MinIOServer, backend string, partSize int64, concurrency int) objectstore.Store {
	cfg := objectstore.DefaultConfig()
	cfg.Backend = backend
	cfg.Endpoint = m.Endpoint
	cfg.Insecure = true
	cfg.PathStyle = true
	cfg.Region = "us-east-1"
	cfg.AccessKeyID = m.AccessKey
	cfg.SecretAccessKey = m.SecretKey
	cfg.Bucket = m.Bucket
	if partSize > 0 {
		cfg.PartSize = partSize
	}
	if concurrency > 0 {
		cfg.UploadConcurrency = concurrency
	}
	s, err := objectstore.New(b.Context(), cfg, prometheus.NewRegistry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchData(n int) []byte {
	data := make([]byte, n)
	rand.NewChaCha8([32]byte{1}).Read(data)
	return data
}

// streamPut uploads data through a Writer in 1 MiB writes, as a flush of an
// SSTable would.
func streamPut(b *testing.B, s objectstore.Store, key string, data []byte) {
	w, err := s.NewWriter(b.Context(), key)
	if err != nil {
		b.Fatal(err)
	}
	for p := data; len(p) > 0; {
		n := min(len(p), 1<<20)
		if _, err := w.Write(p[:n]); err != nil {
			b.Fatal(err)
		}
		p = p[n:]
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPut64MiB compares a streaming upload through each remote backend
// with a plain minio-go PutObject of the same bytes to the same server.
// Sides alternate over benchfig.Rounds rounds and each keeps its best, to
// damp the noise of a shared machine.
func BenchmarkPut64MiB(b *testing.B) {
	m := testserver.MinIO(b)
	data := benchData(benchObjectSize)
	client := m.Client(b)
	raw := func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			_, err := client.PutObject(b.Context(), m.Bucket, "raw", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	ours := func(backend string) func(b *testing.B) {
		s := benchStore(b, m, backend, 0, 0)
		return func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				streamPut(b, s, "ours-"+backend, data)
			}
		}
	}
	s3, mc := ours(objectstore.BackendS3), ours(objectstore.BackendMinIO)
	var best benchfig.Best
	for round := range benchfig.Rounds {
		best.Observe(
			benchfig.Measure(b, fmt.Sprintf("raw-minio-go/round=%d", round), raw),
			benchfig.Measure(b, fmt.Sprintf("s3/round=%d", round), s3),
			benchfig.Measure(b, fmt.Sprintf("minio/round=%d", round), mc),
		)
	}
	rawTime, s3Time, minioTime := best[0], best[1], best[2]
	// Throughput ratio ours/raw is the inverse ratio of times.
	benchfig.Report("objectstore.s3.put_mb_s.vs_raw", benchfig.Speedup(s3Time, rawTime), "x")
	benchfig.Report("objectstore.minio.put_mb_s.vs_raw", benchfig.Speedup(minioTime, rawTime), "x")
	benchfig.Report("objectstore.put_mb_s.vs_raw", benchfig.Speedup(minioTime, rawTime), "x")
}

// BenchmarkPutSweep sweeps the part size and upload concurrency of a 64 MiB
// streaming upload, to choose the defaults. -short keeps the ends of each
// sweep.
func BenchmarkPutSweep(b *testing.B) {
	m := testserver.MinIO(b)
	data := benchData(benchObjectSize)
	parts, concs := []int64{5, 8, 16, 32}, []int{1, 2, 4, 8}
	if testing.Short() {
		parts, concs = []int64{5, 32}, []int{1, 8}
	}
	for _, backend := range []string{objectstore.BackendMinIO, objectstore.BackendS3} {
		for _, part := range parts {
			for _, conc := range concs {
				s := benchStore(b, m, backend, part<<20, conc)
				b.Run(fmt.Sprintf("%s/part=%dMiB/concurrency=%d", backend, part, conc), func(b *testing.B) {
					b.SetBytes(int64(len(data)))
					for b.Loop() {
						streamPut(b, s, "sweep", data)
					}
				})
			}
		}
	}
}

// BenchmarkGet32KiBMiss reads random 32 KiB ranges of a 64 MiB object from
// MinIO, as an SSTable block read that misses every cache, and reports the
// latency percentiles.
func BenchmarkGet32KiBMiss(b *testing.B) {
	m := testserver.MinIO(b)
	s := benchStore(b, m, objectstore.BackendMinIO, 0, 0)
	data := benchData(benchObjectSize)
	streamPut(b, s, "obj", data)
	const block = 32 << 10
	for _, backend := range []string{objectstore.BackendMinIO, objectstore.BackendS3} {
		s := benchStore(b, m, backend, 0, 0)
		r, err := objectstore.NewReaderAt(b.Context(), s, "obj")
		if err != nil {
			b.Fatal(err)
		}
		// Warm up connections and the server's metadata caches: a cache
		// miss of ours is not a cold start of theirs.
		p := make([]byte, block)
		for range 100 {
			if _, err := r.ReadAt(b.Context(), p, rand.Int64N(benchObjectSize-block)); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(backend, func(b *testing.B) {
			b.SetBytes(block)
			for b.Loop() {
				if _, err := r.ReadAt(b.Context(), p, rand.Int64N(benchObjectSize-block)); err != nil {
					b.Fatal(err)
				}
			}
		})
		// Percentiles need many samples whatever -benchtime says.
		lat := make([]time.Duration, 1000)
		for i := range lat {
			off := rand.Int64N(benchObjectSize - block)
			start := time.Now()
			if _, err := r.ReadAt(b.Context(), p, off); err != nil {
				b.Fatal(err)
			}
			lat[i] = time.Since(start)
		}
		slices.Sort(lat)
		p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		prefix := "objectstore."
		if backend == objectstore.BackendS3 {
			prefix = "objectstore.s3."
		}
		benchfig.Report(prefix+"get32k_miss_p50_ms", ms(p50), "ms")
		benchfig.Report(prefix+"get32k_miss_p99_ms", ms(p99), "ms")
	}
}
