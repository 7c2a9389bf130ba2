// Package attacktest runs the attacks of issue 15 against the real
// sediment binary, all-in-one, under a memory bound: each must leave the
// server alive, its peak RSS within the bound, the attacker answered with
// the right CQL error, and a fresh gocql session served within a second.
package attacktest

import (
	"bufio"
	"bytes"
	"errors"
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

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/sedimentdb/sediment/frontend/wire"
)

const (
	// memoryLimit is the server's GOMEMLIMIT: the Go runtime collects
	// harder near it, but it is no hard bound.
	memoryLimit = 256 << 20
	// rssBound is the peak resident size every attack must stay under.
	rssBound = 512 << 20
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds sediment once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "attacktest")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "sediment")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/sedimentdb/sediment/cmd/sediment").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

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

// server is one all-in-one sediment process.
type server struct {
	cqlAddr, httpAddr, dataDir string
	cmd                        *exec.Cmd
	out                        *syncBuffer
	done                       chan error
}

// start runs sediment with extra flags and waits for /ready.
func start(t *testing.T, extra ...string) *server {
	t.Helper()
	s := &server{cqlAddr: freeAddr(t), httpAddr: freeAddr(t), dataDir: t.TempDir(), out: &syncBuffer{}, done: make(chan error, 1)}
	_, natsPort, _ := net.SplitHostPort(freeAddr(t))
	args := append([]string{
		"-data.dir=" + s.dataDir,
		"-cql.listen-address=" + s.cqlAddr,
		"-http.listen-address=" + s.httpAddr,
		"-manifest.embedded-port=" + natsPort,
		"-ingest.rpc-address=127.0.0.1:0",
	}, extra...)
	// The descriptor limit of the measurements.
	s.cmd = exec.Command("sh", append([]string{"-c", `ulimit -n 4096 && exec "$0" "$@"`, binary(t)}, args...)...)
	s.cmd.Env = append(os.Environ(), "GOMEMLIMIT="+strconv.Itoa(memoryLimit))
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if s.alive() {
			s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			out := s.out.String()
			if len(out) > 20000 {
				out = out[len(out)-20000:]
			}
			t.Logf("server output (tail):\n%s", out)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !s.ready() {
		if !s.alive() {
			t.Fatalf("sediment exited before ready")
		}
		if time.Now().After(deadline) {
			t.Fatalf("sediment not ready after 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

func (s *server) alive() bool {
	select {
	case err := <-s.done:
		s.done <- err
		return false
	default:
		return true
	}
}

func (s *server) ready() bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + s.httpAddr + "/ready")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// peakRSS is the process's high-water resident size (VmHWM): the kernel
// keeps it, so no sampling can miss a spike.
func (s *server) peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("server gone: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// session opens a gocql session, in keyspace ks unless it is empty.
func (s *server) session(t *testing.T, ks string) (*gocql.Session, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(s.cqlAddr)
	c := gocql.NewCluster(host)
	c.Port, _ = strconv.Atoi(port)
	c.Keyspace = ks
	c.Timeout = 5 * time.Second
	c.ConnectTimeout = 5 * time.Second
	c.DisableInitialHostLookup = true
	c.NumConns = 1
	return c.CreateSession()
}

func (s *server) mustSession(t *testing.T, ks string) *gocql.Session {
	t.Helper()
	sess, err := s.session(t, ks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	return sess
}

// healthy checks what every attack must leave behind: the process alive,
// its peak RSS within rssBound, and a fresh session served within a
// second.
func (s *server) healthy(t *testing.T, ks string) {
	t.Helper()
	if !s.alive() {
		t.Fatalf("server died: %v", <-s.done)
	}
	rss := s.peakRSS(t)
	t.Logf("peak RSS %d MiB (bound %d MiB)", rss>>20, rssBound>>20)
	if rss > rssBound {
		t.Errorf("peak RSS %d MiB over the bound of %d MiB", rss>>20, rssBound>>20)
	}
	began := time.Now()
	sess, err := s.session(t, ks)
	if err != nil {
		t.Fatalf("fresh session: %v", err)
	}
	defer sess.Close()
	var n int
	if err := sess.Query("SELECT count(*) FROM system.local").Scan(&n); err != nil {
		t.Fatalf("fresh session query: %v", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("fresh session served after %v, more than a second", d)
	}
}

// rawConn is a hand-driven CQL v4 connection for clients no driver
// would be.
type rawConn struct {
	nc net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &rawConn{nc: nc, br: bufio.NewReader(nc)}
	c.send(t, 0, &wire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}})
	if m := c.read(t); m.Opcode() != wire.OpReady {
		t.Fatalf("STARTUP answered with %v", m)
	}
	return c
}

func (c *rawConn) frame(t *testing.T, stream int16, m wire.Message) []byte {
	t.Helper()
	b, err := wire.AppendFrame(nil, wire.Header{Version: wire.V4, Stream: stream}, nil, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (c *rawConn) send(t *testing.T, stream int16, m wire.Message) {
	t.Helper()
	if _, err := c.nc.Write(c.frame(t, stream, m)); err != nil {
		t.Fatal(err)
	}
}

func (c *rawConn) read(t *testing.T) wire.Message {
	t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(60 * time.Second))
	f, err := wire.ReadFrame(c.br, 256<<20)
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := wire.SplitBody(f.Header, f.Body)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wire.DecodeResponse(f.Header.Opcode, f.Header.Version, body)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// query runs q and returns its answer.
func (c *rawConn) query(t *testing.T, q string) wire.Message {
	t.Helper()
	c.send(t, 1, &wire.Query{Query: q, Params: wire.QueryParams{Consistency: wire.One}})
	return c.read(t)
}

func schema(t *testing.T, s *server) {
	t.Helper()
	sess := s.mustSession(t, "")
	for _, q := range []string{
		"CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE IF NOT EXISTS ks.blob (p int PRIMARY KEY, v blob)",
		"CREATE TABLE IF NOT EXISTS ks.t (p int, c1 int, c2 int, v int, PRIMARY KEY (p, c1, c2))",
	} {
		if err := sess.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestNeverReadingClient pipelines SELECTs of a 1 MiB row on connections
// that never read their answers: the server must stop reading them
// rather than queue their answers without bound.
func TestNeverReadingClient(t *testing.T) {
	s := start(t)
	schema(t, s)
	sess := s.mustSession(t, "ks")
	if err := sess.Query("INSERT INTO blob (p, v) VALUES (1, ?)", bytes.Repeat([]byte{7}, 1<<20)).Exec(); err != nil {
		t.Fatal(err)
	}
	const conns, requests = 2, 2000
	var attackers []*rawConn
	for range conns {
		c := dial(t, s.cqlAddr)
		attackers = append(attackers, c)
		frame := c.frame(t, 1, &wire.Query{Query: "SELECT v FROM ks.blob WHERE p = 1", Params: wire.QueryParams{Consistency: wire.One}})
		go func() {
			// The server pushes back by not reading: this writer then
			// blocks, which is the point.
			for i := 0; i < requests; i++ {
				if _, err := c.nc.Write(frame); err != nil {
					return
				}
			}
		}()
	}
	// Give the server time to execute what it read and queue answers.
	time.Sleep(10 * time.Second)
	s.healthy(t, "ks")
	// A client that reads again gets every answer it was sent so far.
	c := attackers[0]
	for range 10 {
		if m := c.read(t); m.Opcode() != wire.OpResult {
			t.Fatalf("answer %v", m)
		}
	}
}

// code is the CQL error code of err, or 0.
func code(err error) int {
	var re gocql.RequestError
	if errors.As(err, &re) {
		return re.Code()
	}
	return 0
}

// errorOf returns the ERROR the raw connection got, or fails.
func errorOf(t *testing.T, m wire.Message) *wire.Error {
	t.Helper()
	e, ok := m.(*wire.Error)
	if !ok {
		t.Fatalf("answer %T, want an error", m)
	}
	return e
}

// TestHostileStatements sends the statements of the issue that took the
// server down or cost it gigabytes: each is refused at once, with the
// error Cassandra gives.
func TestHostileStatements(t *testing.T) {
	s := start(t)
	schema(t, s)
	sess := s.mustSession(t, "ks")
	in := func(n int) string {
		var b strings.Builder
		b.WriteString("(")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(strconv.Itoa(i))
		}
		b.WriteString(")")
		return b.String()
	}
	for _, tc := range []struct {
		name, stmt string
		code       int
	}{
		// 10^8 clustering keys from a statement of 98 KB.
		{"cartesian product", "SELECT * FROM t WHERE p = 1 AND c1 IN " + in(10000) + " AND c2 IN " + in(10000), 0x2200},
		{"100k partition keys", "SELECT * FROM t WHERE p IN " + in(100000), 0x2200},
		{"1M partition keys", "SELECT * FROM t WHERE p IN " + in(1000000), 0x2200},
		{"1M partition keys deleted", "DELETE FROM t WHERE p IN " + in(1000000), 0x2200},
	} {
		err := sess.Query(tc.stmt).Exec()
		if code(err) != tc.code {
			t.Errorf("%s: %v, want code %#x", tc.name, err, tc.code)
		}
		s.healthy(t, "ks")
	}

	// 8 MB nested 4,000,000 deep is refused for its size before it is
	// parsed; under the size bound, nested 400,000 deep, it is a syntax
	// error after a few hundred tokens.
	c := dial(t, s.cqlAddr)
	nested := func(depth int) string {
		return "SELECT * FROM ks.t WHERE p = " + strings.Repeat("(", depth) + "1" + strings.Repeat(")", depth)
	}
	if e := errorOf(t, c.query(t, nested(4000000))); e.Code != wire.CodeInvalid || !strings.HasPrefix(e.Message, "Query text of 8000030 bytes exceeds the maximum") {
		t.Errorf("nested 4M deep: %v %q, want Invalid for its size", e.Code, e.Message)
	}
	if e := errorOf(t, c.query(t, nested(400000))); e.Code != wire.CodeSyntax || !strings.Contains(e.Message, "nested too deeply") {
		t.Errorf("nested 400k deep: %v %.200q, want a syntax error", e.Code, e.Message)
	}
	s.healthy(t, "ks")

	// An error that echoes a huge input is cut to fit a [string] and
	// stays Invalid.
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	e := errorOf(t, c.query(t, "INSERT INTO ks.blob JSON '{\"p\": 1, \"v\": "+deep+"}'"))
	if e.Code != wire.CodeInvalid {
		t.Errorf("huge JSON: %v %.200q, want Invalid", e.Code, e.Message)
	}
	s.healthy(t, "ks")
}

// TestDescriptorExhaustion holds 4,500 connections against a server
// limited to 4,096 file descriptors: the node keeps descriptors for
// itself, so it stays ready while they are held, serves a fresh session
// once they are released, and stops cleanly on SIGTERM.
func TestDescriptorExhaustion(t *testing.T) {
	s := start(t, "-node.heartbeat-interval=500ms", "-cql.max-connections-per-address=0")
	var held []net.Conn
	defer func() {
		for _, nc := range held {
			nc.Close()
		}
	}()
	for range 4500 {
		nc, err := net.Dial("tcp", s.cqlAddr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, nc)
	}
	// Several heartbeat intervals with every descriptor a client may
	// have taken: /ready must stay true all along.
	for range 10 {
		if !s.ready() {
			t.Fatal("not ready while clients hold connections")
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, nc := range held {
		nc.Close()
	}
	held = nil
	s.healthy(t, "")
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			t.Fatalf("stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no stop within 30s of SIGTERM")
	}
}
