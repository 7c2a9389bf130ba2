package clustertest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sedimentdb/sediment/internal/clustertls/clustertlstest"
	"github.com/sedimentdb/sediment/internal/testserver"
)

// buildSediment builds the binary once per test run.
func buildSediment(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sediment")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/sedimentdb/sediment/cmd/sediment").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is a process's output, written by the process while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// natsEndpoint is a nats-server or a cluster of them: the URLs processes
// get, and the test's own connections.
type natsEndpoint interface {
	URL() string
	Connect(testing.TB) *nats.Conn
}

// node is one `sediment` process, of the ingest or the frontend role. Its
// data directory and addresses stay the same across restarts.
type node struct {
	id, dataDir, httpAddr string
	// rpcAddr is an ingest node's RPC address, cqlAddr a frontend's CQL
	// address.
	rpcAddr, cqlAddr string
	args             []string
	// env holds the secrets, which the command line must not carry.
	env  []string
	out  *syncBuffer
	cmd  *exec.Cmd
	done chan error
}

// clusterCA signs the certificates of every process the tests start, so
// that the ingest RPC runs with mutual TLS, as production configures it.
var clusterCA = struct {
	once sync.Once
	ca   *clustertlstest.CA
}{}

// common returns the flags every process of the cluster shares: the
// external NATS and MinIO, the cluster certificates, and short pauses and
// heartbeats for a quick test.
func common(t *testing.T, bin, target string, nd *node, n natsEndpoint, m *testserver.MinIOServer, cluster string) []string {
	t.Helper()
	nd.env = []string{"SEDIMENT_OBJECTSTORE_SECRET_ACCESS_KEY=" + m.SecretKey}
	clusterCA.once.Do(func() { clusterCA.ca = clustertlstest.NewCA(t, "clustertest") })
	// Outside the data directory, which tests delete to replace a node.
	tls := clusterCA.ca.WriteFiles(t, t.TempDir(), nd.id)
	return []string{
		bin,
		"-target=" + target,
		"-data.dir=" + nd.dataDir,
		"-http.listen-address=" + nd.httpAddr,
		"-manifest.nats-url=" + n.URL(),
		"-manifest.cluster-name=" + cluster,
		"-manifest.reconnect-wait=100ms",
		"-objectstore.backend=minio",
		"-objectstore.endpoint=" + m.Endpoint,
		"-objectstore.bucket=" + m.Bucket,
		"-objectstore.access-key-id=" + m.AccessKey,
		"-objectstore.insecure",
		"-objectstore.timeout=2s",
		"-objectstore.retry.max-backoff=200ms",
		fmt.Sprintf("-ingest.ranges=%d", ranges),
		"-node.heartbeat-interval=200ms",
		"-cluster.tls-ca-file=" + tls.CAFile,
		"-cluster.tls-cert-file=" + tls.CertFile,
		"-cluster.tls-key-file=" + tls.KeyFile,
	}
}

// prepare writes the node-id file and registers the cleanup that kills the
// process and shows its output if the test failed. Writing the node-id
// file before the first start is how an operator chooses the ID, and lets
// the test give an ingest node its ranges in the manifest before it starts.
func (nd *node) prepare(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(nd.dataDir, "node-id"), []byte(nd.id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if nd.cmd != nil {
			nd.kill()
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", nd.id, nd.out)
		}
	})
}

// newNode prepares an ingest node whose ID is id.
func newNode(t *testing.T, bin, id string, n natsEndpoint, m *testserver.MinIOServer, cluster string) *node {
	t.Helper()
	nd := &node{id: id, dataDir: t.TempDir(), httpAddr: freeAddr(t), rpcAddr: freeAddr(t), out: &syncBuffer{}}
	nd.prepare(t)
	nd.args = append(common(t, bin, "ingest", nd, n, m, cluster),
		"-ingest.rpc-address="+nd.rpcAddr,
		"-ingest.shards=2",
		fmt.Sprintf("-ingest.memtable-size=%d", memtableSize),
		"-ingest.memory-limit=262144",
		"-ingest.write-timeout=500ms",
		"-ingest.flush-age=1s",
		"-ingest.flush-min-backoff=50ms",
		"-ingest.flush-max-backoff=500ms",
	)
	return nd
}

// newFrontend prepares a frontend process whose ID is id, serving CQL on a
// port of its own. Its engine reaches the ingest nodes over RPC.
func newFrontend(t *testing.T, bin, id string, n natsEndpoint, m *testserver.MinIOServer, cluster string) *node {
	t.Helper()
	nd := &node{id: id, dataDir: t.TempDir(), httpAddr: freeAddr(t), cqlAddr: freeAddr(t), out: &syncBuffer{}}
	nd.prepare(t)
	nd.args = append(common(t, bin, "frontend", nd, n, m, cluster),
		"-cql.listen-address="+nd.cqlAddr,
		"-cache.memory-bytes=16777216",
	)
	return nd
}

// start runs the process and waits until /ready answers 200.
func (nd *node) start(t *testing.T) {
	t.Helper()
	nd.cmd = exec.Command(nd.args[0], nd.args[1:]...)
	nd.cmd.Stdout, nd.cmd.Stderr = nd.out, nd.out
	nd.cmd.Env = append(os.Environ(), nd.env...)
	if err := nd.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	nd.done = make(chan error, 1)
	go func(c *exec.Cmd, done chan<- error) { done <- c.Wait() }(nd.cmd, nd.done)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-nd.done:
			t.Fatalf("%s exited before ready: %v\n%s", nd.id, err, nd.out)
		default:
		}
		if nd.ready() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s not ready after 30s\n%s", nd.id, nd.out)
}

// ready reports whether /ready answers 200.
func (nd *node) ready() bool {
	resp, err := http.Get("http://" + nd.httpAddr + "/ready")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// kill ends the process with SIGKILL: no flush, no goodbye.
func (nd *node) kill() {
	nd.cmd.Process.Kill()
	<-nd.done
	nd.cmd = nil
}

// stop ends the process with SIGTERM and checks that it stopped cleanly,
// which means it flushed every memtable.
func (nd *node) stop(t *testing.T) {
	t.Helper()
	nd.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-nd.done:
		nd.cmd = nil
		if err != nil {
			t.Fatalf("%s: %v\n%s", nd.id, err, nd.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop\n%s", nd.id, nd.out)
	}
}

// metric returns the sum and the largest value of the series of the
// node's metric name, read from its /metrics.
func (nd *node) metric(t *testing.T, name string) (sum, largest float64) {
	t.Helper()
	sum, largest, found, err := nd.scrape(name)
	if err != nil {
		t.Fatalf("node %s: %v", nd.id, err)
	}
	if !found {
		t.Fatalf("node %s: /metrics has no %s", nd.id, name)
	}
	return sum, largest
}

// scrape reads the series of the node's metric name from its /metrics:
// their sum and largest value, and whether there was any. It may run on
// any goroutine.
func (nd *node) scrape(name string) (sum, largest float64, found bool, err error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + nd.httpAddr + "/metrics")
	if err != nil {
		return 0, 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, false, fmt.Errorf("/metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		// "name{labels} value" or "name value"
		series, value, ok := strings.Cut(line, " ")
		if !ok || (series != name && !strings.HasPrefix(series, name+"{")) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, 0, false, fmt.Errorf("/metrics line %q: %w", line, err)
		}
		sum, largest, found = sum+v, max(largest, v), true
	}
	return sum, largest, found, sc.Err()
}
