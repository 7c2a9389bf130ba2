package localstack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// makefileVar returns the value the repository's Makefile assigns to name.
func makefileVar(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*:=\s*(\S+)\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("Makefile: no %s", name)
	}
	return string(m[1])
}

// gobin is where go install puts binaries.
func gobin(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] != "" {
		return lines[0]
	}
	return filepath.Join(filepath.SplitList(lines[len(lines)-1])[0], "bin")
}

// requireBinary fails the test, naming the install command, unless name is
// in PATH or bin.
func requireBinary(t *testing.T, name, bin, install string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	if fi, err := os.Stat(filepath.Join(bin, name)); err == nil && !fi.IsDir() {
		return
	}
	t.Fatalf("%s not found in PATH or %s; `make tools` installs it, or:\n\t%s", name, bin, install)
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	// Hold every listener until all are chosen, so that no port repeats.
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// descendants returns the processes below pid, from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		f := strings.Fields(string(rest))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	f := strings.Fields(string(rest))
	return len(f) > 0 && f[0] != "Z"
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// lockedBuffer collects a child's output for failure messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRunScript runs run.sh as an operator would, writes and reads through
// a real driver, stops it with SIGTERM and checks that nothing is left.
func TestRunScript(t *testing.T) {
	bin := gobin(t)
	requireBinary(t, "minio", bin, "go install github.com/minio/minio@"+makefileVar(t, "MINIO_VERSION"))
	requireBinary(t, "nats-server", bin, "go install github.com/nats-io/nats-server/v2@"+makefileVar(t, "NATS_VERSION"))

	dataDir := t.TempDir()
	vars := []string{
		"LOCALSTACK_MINIO_PORT", "LOCALSTACK_NATS_PORT", "LOCALSTACK_NATS_HTTP_PORT",
		"LOCALSTACK_CQL_PORT", "LOCALSTACK_FRONTEND_HTTP_PORT", "LOCALSTACK_INGEST_HTTP_PORT",
		"LOCALSTACK_COMPACTOR_HTTP_PORT", "LOCALSTACK_INGEST_RPC_PORT",
	}
	ports := freePorts(t, len(vars))
	cmd := exec.Command("bash", "run.sh", "-d", dataDir)
	// The test never installs anything: a missing binary was reported above.
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "LOCALSTACK_INSTALL=0")
	for i, v := range vars {
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", v, ports[i]))
	}
	// Its own process group, so that a failure can kill whatever is left.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	endpoint := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if ep, ok := strings.CutPrefix(sc.Text(), "CQL endpoint: "); ok {
				endpoint <- ep
			}
		}
		io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()

	// The servers, recorded while they run: the script starts each in a
	// process group of its own, so only their pids reach them on failure.
	var servers []int
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		servers = append(servers, descendants(cmd.Process.Pid)...)
		syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for _, p := range servers {
			syscall.Kill(p, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("run.sh stderr:\n%s", stderr.String())
			for _, name := range []string{"minio", "nats", "ingest", "compactor", "frontend"} {
				if b, err := os.ReadFile(filepath.Join(dataDir, "logs", name+".log")); err == nil {
					t.Logf("%s.log (tail):\n%s", name, tail(string(b), 3000))
				}
			}
		}
	})

	var ep string
	select {
	case ep = <-endpoint:
	case err := <-exited:
		t.Fatalf("run.sh exited before printing the CQL endpoint: %v", err)
	case <-time.After(5 * time.Minute): // the first run builds sediment
		t.Fatal("no CQL endpoint from run.sh after 5 minutes")
	}
	if want := "127.0.0.1:" + strconv.Itoa(ports[3]); ep != want {
		t.Fatalf("CQL endpoint %q, want %q", ep, want)
	}

	servers = descendants(cmd.Process.Pid)
	var names []string
	for _, p := range servers {
		names = append(names, comm(p))
	}
	slices.Sort(names)
	if want := []string{"minio", "nats-server", "sediment", "sediment", "sediment"}; !slices.Equal(names, want) {
		t.Fatalf("processes under run.sh: %q, want %q", names, want)
	}

	writeAndRead(t, ep)

	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
			t.Errorf("run.sh after SIGTERM: %v, want exit status %d", err, 128+int(syscall.SIGTERM))
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("run.sh still running 2 minutes after SIGTERM")
	}
	stopped = true
	for _, p := range servers {
		if alive(p) {
			t.Errorf("%s (pid %d) still running after run.sh stopped", comm(p), p)
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
	for i, port := range ports {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			t.Errorf("%s=%d: still listening after run.sh stopped", vars[i], port)
		}
	}
	// The stop is in reverse order of the start.
	var order []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "localstack: stopping "); ok {
			order = append(order, strings.Fields(rest)[0])
		}
	}
	if want := []string{"frontend", "compactor", "ingest", "nats", "minio"}; !slices.Equal(order, want) {
		t.Errorf("stop order %q, want %q", order, want)
	}
}

// writeAndRead creates a table through the frontend at ep, writes rows and
// reads them back exactly.
func writeAndRead(t *testing.T, ep string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(ep)
	c := gocql.NewCluster(host)
	c.Port, _ = strconv.Atoi(port)
	c.Consistency = gocql.One
	c.Timeout = 20 * time.Second
	c.ConnectTimeout = 10 * time.Second
	c.NumConns = 1
	s, err := c.CreateSession()
	if err != nil {
		t.Fatalf("gocql session to %s: %v", ep, err)
	}
	defer s.Close()
	for _, q := range []string{
		`CREATE KEYSPACE local WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TABLE local.events (id text, seq int, body text, n bigint, PRIMARY KEY (id, seq))`,
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	type row struct {
		seq  int
		body string
		n    int64
	}
	var want []row
	for i := range 20 {
		r := row{seq: i, body: fmt.Sprintf("event %d ✓", i), n: int64(i) * 1_000_000_007}
		want = append(want, r)
		if err := s.Query(`INSERT INTO local.events (id, seq, body, n) VALUES (?, ?, ?, ?)`, "a", r.seq, r.body, r.n).Exec(); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if err := s.Query(`INSERT INTO local.events (id, seq, body, n) VALUES (?, ?, ?, ?)`, "b", 0, "other", 1).Exec(); err != nil {
		t.Fatalf("insert b: %v", err)
	}
	var got []row
	it := s.Query(`SELECT seq, body, n FROM local.events WHERE id = ?`, "a").Iter()
	var r row
	for it.Scan(&r.seq, &r.body, &r.n) {
		got = append(got, r)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("select: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read back %v, want %v", got, want)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
