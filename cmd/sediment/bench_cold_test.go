package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/loadgen"
	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/manifest"
)

// coldWindow is how long after a frontend starts the cold reads are
// measured: the first 10 s, which is what a client sees after a restart.
const coldWindow = 10 * time.Second

// BenchmarkColdReads measures the first 10 s of reads of a frontend that
// just started, against a cluster whose data is all in SSTables in MinIO:
// an ingest and compactor process, and a frontend process of its own, as
// in a deployment. The frontend starts twice: on the data directory of the
// one it replaces (a restart: its disk cache survives, the default since
// the disk cache is on), and on an empty one (a new instance: every block
// comes from the bucket). Each prints ops/s and p99 as figures.
func BenchmarkColdReads(b *testing.B) {
	ms := testserver.MinIO(b)
	store := []string{
		"-objectstore.backend=minio", "-objectstore.endpoint=" + ms.Endpoint, "-objectstore.insecure", "-objectstore.path-style",
		"-objectstore.bucket=" + ms.Bucket, "-objectstore.access-key-id=" + ms.AccessKey,
	}
	// The secret goes by the environment, as secrets must.
	env := func(k string) string {
		if k == EnvName("objectstore.secret-access-key") {
			return ms.SecretKey
		}
		return ""
	}
	nodeDir := b.TempDir()
	node := startBenchProcess(b, nodeDir, env, append([]string{"-target=ingest,compactor", "-ingest.flush-age=1h"}, store...)...)
	// The node's embedded NATS admits the user whose password it keeps.
	natsFlags := []string{"-manifest.nats-url=" + node.natsURL, "-manifest.nats-user=" + manifest.EmbeddedUser,
		"-manifest.nats-password-file=" + manifest.EmbeddedPasswordFile(filepath.Join(nodeDir, "nats"))}
	feFlags := append(append([]string{"-target=frontend"}, natsFlags...), store...)
	feDir := b.TempDir()
	fe := startBenchProcess(b, feDir, env, feFlags...)

	base := loadgen.DefaultConfig()
	base.Hosts = []string{fe.cql}
	base.Partitions = 20_000
	base.Duration = 0
	fill := base
	fill.Distribution, fill.Count = loadgen.Sequential, base.Partitions
	if rep := benchRun(b, fill); rep.Errors > 0 {
		b.Fatalf("filling: %d errors: %s", rep.Errors, rep.FirstError)
	}
	// Every row into an SSTable in the bucket: reads then need its blocks.
	var out, errOut bytes.Buffer
	if code := adminMain(context.Background(), append([]string{"flush"}, natsFlags...), noEnv, &out, &errOut, false); code != 0 {
		b.Fatalf("admin flush: exit %d\n%s%s", code, &out, &errOut)
	}
	// The first frontend reads everything once, filling its disk cache.
	warm := base
	warm.Workload, warm.Distribution, warm.Count = loadgen.Read, loadgen.Sequential, base.Partitions
	benchRun(b, warm)
	fe.stop()

	read := base
	read.Workload, read.Distribution, read.Duration = loadgen.Read, loadgen.Uniform, coldWindow
	b.ResetTimer()
	for range b.N {
		for _, c := range []struct{ name, dir string }{{"restart", feDir}, {"new", b.TempDir()}} {
			p := startBenchProcess(b, c.dir, env, feFlags...)
			r := read
			r.Hosts = []string{p.cql}
			rep := benchRun(b, r)
			p.stop()
			benchfig.Report("cql.cold_read."+c.name+".ops_s", rep.OpsPerSec, "ops/s")
			benchfig.Report("cql.cold_read."+c.name+".p99_ms", rep.Latency.P99, "ms")
		}
	}
}

// benchProcess is a sediment process of a benchmark.
type benchProcess struct {
	cql, natsURL string
	stop         func()
}

// startBenchProcess runs sediment with flags on dataDir and free ports of
// 127.0.0.1 until stop or the end of b, and returns once /ready answers.
func startBenchProcess(b *testing.B, dataDir string, getenv func(string) string, flags ...string) benchProcess {
	b.Helper()
	port := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port
	}
	httpAddr, cqlAddr, natsPort := fmt.Sprintf("127.0.0.1:%d", port()), fmt.Sprintf("127.0.0.1:%d", port()), port()
	var cfg Config
	err := cfg.Load(append([]string{
		"-data.dir=" + dataDir, "-http.listen-address=" + httpAddr, "-cql.listen-address=" + cqlAddr,
		fmt.Sprintf("-manifest.embedded-port=%d", natsPort), "-ingest.rpc-address=127.0.0.1:0",
	}, flags...), getenv)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- newSediment(&cfg, slog.New(slog.DiscardHandler)).run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			b.Errorf("sediment stopped with %v", err)
		}
	}
	b.Cleanup(stop)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-done:
			b.Fatalf("sediment stopped before it was ready: %v", err)
		default:
		}
		resp, err := http.Get("http://" + httpAddr + "/ready")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return benchProcess{cql: cqlAddr, natsURL: fmt.Sprintf("nats://127.0.0.1:%d", natsPort), stop: stop}
		}
	}
	b.Fatal("sediment not ready after a minute")
	return benchProcess{}
}
