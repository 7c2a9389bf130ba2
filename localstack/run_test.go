package localstack

import (
	"bufio"
	"bytes"
	"encoding/json"
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

// portVars are run.sh's port settings; the test gives each a free port.
var portVars = []string{
	"LOCALSTACK_MINIO_PORT", "LOCALSTACK_NATS_PORT", "LOCALSTACK_NATS_HTTP_PORT",
	"LOCALSTACK_CQL_PORT", "LOCALSTACK_FRONTEND_HTTP_PORT", "LOCALSTACK_INGEST_HTTP_PORT",
	"LOCALSTACK_COMPACTOR_HTTP_PORT", "LOCALSTACK_INGEST_RPC_PORT",
}

// stack is a running run.sh.
type stack struct {
	cmd      *exec.Cmd
	dataDir  string
	ports    []int
	stderr   lockedBuffer
	exited   chan error
	endpoint chan string
	// servers are the processes under the script, recorded while they run:
	// the script starts each in a process group of its own, so only their
	// pids reach them if the script fails to stop them.
	servers []int
	stopped bool
}

// startStack runs run.sh on free ports with its data in dataDir (a new
// directory if empty) and returns once it prints the CQL endpoint. A port
// taken by another process between the choice and the bind costs a new
// attempt.
func startStack(t *testing.T, bin, dataDir string, env ...string) (*stack, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s := &stack{dataDir: dataDir, ports: freePorts(t, len(portVars))}
		if s.dataDir == "" {
			s.dataDir = t.TempDir()
		}
		s.start(t, bin, env)
		select {
		case ep := <-s.endpoint:
			if want := "127.0.0.1:" + strconv.Itoa(s.ports[3]); ep != want {
				t.Fatalf("CQL endpoint %q, want %q", ep, want)
			}
			return s, ep
		case err := <-s.exited:
			s.stopped = true
			if attempt < 3 && strings.Contains(s.output(), "already in use") {
				t.Logf("attempt %d: a port was taken; trying others", attempt)
				continue
			}
			t.Fatalf("run.sh exited before printing the CQL endpoint: %v\n%s", err, s.output())
		case <-time.After(5 * time.Minute): // the first run builds sediment
			t.Fatal("no CQL endpoint from run.sh after 5 minutes")
		}
	}
}

func (s *stack) start(t *testing.T, bin string, env []string) {
	t.Helper()
	s.cmd = exec.Command("bash", "run.sh", "-d", s.dataDir)
	// The test never installs anything: a missing binary was reported before.
	s.cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "LOCALSTACK_INSTALL=0")
	s.cmd.Env = append(s.cmd.Env, env...)
	for i, v := range portVars {
		s.cmd.Env = append(s.cmd.Env, fmt.Sprintf("%s=%d", v, s.ports[i]))
	}
	// Its own process group, so that a failure can kill the script and
	// whatever it runs in the foreground (go build, curl).
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.cmd.Stderr = &s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.exited = make(chan error, 1)
	s.endpoint = make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if ep, ok := strings.CutPrefix(sc.Text(), "CQL endpoint: "); ok {
				s.endpoint <- ep
			}
		}
		io.Copy(io.Discard, stdout)
		s.exited <- s.cmd.Wait()
	}()
	t.Cleanup(func() {
		if !s.stopped {
			s.kill()
		}
		if t.Failed() {
			t.Logf("run.sh in %s:\n%s", s.dataDir, s.output())
		}
	})
}

// kill stops the script with SIGTERM, as an operator would, then kills
// whatever is left.
func (s *stack) kill() {
	s.servers = append(s.servers, descendants(s.cmd.Process.Pid)...)
	syscall.Kill(s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	for _, p := range s.servers {
		syscall.Kill(p, syscall.SIGKILL)
	}
	s.stopped = true
}

// control runs run.sh's subcommand args against the stack's data
// directory, as an operator does from another terminal.
func (s *stack) control(args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{"run.sh", "-d", s.dataDir}, args...)...)
	cmd.Env = s.cmd.Env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkAdmin runs the stack's own binary's `sediment admin`, configured
// only by SEDIMENT_* variables as an operator's shell would be, against
// the running processes: every role is a member, the table is listed,
// and a key's owner is the ingest node.
func (s *stack) checkAdmin(t *testing.T) {
	t.Helper()
	env := append(os.Environ(),
		fmt.Sprintf("SEDIMENT_MANIFEST_NATS_URL=nats://127.0.0.1:%d", s.ports[1]),
		"SEDIMENT_OBJECTSTORE_BACKEND=minio",
		fmt.Sprintf("SEDIMENT_OBJECTSTORE_ENDPOINT=127.0.0.1:%d", s.ports[0]),
		"SEDIMENT_OBJECTSTORE_INSECURE=true", "SEDIMENT_OBJECTSTORE_PATH_STYLE=true",
		"SEDIMENT_OBJECTSTORE_BUCKET=sediment", "SEDIMENT_OBJECTSTORE_ACCESS_KEY_ID=sediment",
		"SEDIMENT_OBJECTSTORE_SECRET_ACCESS_KEY=sediment-secret",
	)
	admin := func(v any, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(s.dataDir, "bin", "sediment"), append([]string{"admin"}, append(args, "-json")...)...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sediment admin %v: %v\n%s", args, err, stderr.String())
		}
		if err := json.Unmarshal(out, v); err != nil {
			t.Fatalf("sediment admin %v: %v\n%s", args, err, out)
		}
	}
	var st struct {
		Members []struct {
			ID      string   `json:"id"`
			Roles   []string `json:"roles"`
			Healthy bool     `json:"healthy"`
		} `json:"members"`
	}
	admin(&st, "status")
	roles := map[string]string{}
	for _, m := range st.Members {
		if !m.Healthy || len(m.Roles) != 1 {
			t.Errorf("member %+v", m)
		}
		for _, r := range m.Roles {
			roles[r] = m.ID
		}
	}
	for _, r := range []string{"ingest", "compactor", "frontend"} {
		if roles[r] == "" {
			t.Errorf("no %s member among %+v", r, st.Members)
		}
	}
	var tables struct {
		Tables []struct{ Keyspace, Table string } `json:"tables"`
	}
	admin(&tables, "tables")
	if !slices.ContainsFunc(tables.Tables, func(x struct{ Keyspace, Table string }) bool { return x.Keyspace == "local" && x.Table == "events" }) {
		t.Errorf("tables %+v lack local.events", tables.Tables)
	}
	var ep struct {
		Owner   string `json:"owner"`
		Healthy bool   `json:"healthy"`
	}
	admin(&ep, "getendpoints", "local.events", "a")
	if ep.Owner != roles["ingest"] || !ep.Healthy {
		t.Errorf("getendpoints local.events a: %+v, want the ingest node %s", ep, roles["ingest"])
	}
}

// output is the script's stderr and the tail of each process's log.
func (s *stack) output() string {
	var b strings.Builder
	b.WriteString(s.stderr.String())
	for _, name := range []string{"minio", "nats", "ingest", "compactor", "frontend"} {
		if log, err := os.ReadFile(filepath.Join(s.dataDir, "logs", "latest", name+".log")); err == nil {
			fmt.Fprintf(&b, "--- %s.log (tail):\n%s\n", name, tail(string(log), 3000))
		}
	}
	return b.String()
}

// TestRunScript runs run.sh as an operator would, writes and reads through
// a real driver and stops it with SIGTERM; then runs it again on the same
// data, reads the rows back and stops it as Ctrl-C in a terminal does. Each
// stop must leave no process and no listener.
func TestRunScript(t *testing.T) {
	bin := gobin(t)
	requireBinary(t, "minio", bin, "go install github.com/minio/minio@"+makefileVar(t, "MINIO_VERSION"))
	requireBinary(t, "nats-server", bin, "go install github.com/nats-io/nats-server/v2@"+makefileVar(t, "NATS_VERSION"))

	s, ep := startStack(t, bin, "")
	s.checkServers(t)
	want := write(t, ep)
	if got := read(t, ep); !slices.Equal(got, want) {
		t.Fatalf("read back %v, want %v", got, want)
	}

	s.checkAdmin(t)

	// A drill: the ingest node dies; the stack goes on without it, and
	// a command brings it back with its data (replayed from its log).
	out, err := s.control("kill", "ingest")
	if err != nil {
		t.Fatalf("run.sh kill ingest: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.stderr.String(), "localstack: ingest exited (status 137); the others go on") {
		if time.Now().After(deadline) {
			t.Fatalf("run.sh did not report the killed ingest node:\n%s", s.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case err := <-s.exited:
		t.Fatalf("run.sh exited when one process died: %v", err)
	default:
	}
	out, err = s.control("status")
	if err != nil || !regexp.MustCompile(`(?m)^ingest +\d+ +no +no$`).MatchString(out) || !regexp.MustCompile(`(?m)^frontend +\d+ +yes +yes$`).MatchString(out) {
		t.Fatalf("status with ingest down (%v):\n%s", err, out)
	}
	if out, err := s.control("restart", "ingest"); err != nil || !strings.Contains(out, "ingest restarted") {
		t.Fatalf("run.sh restart ingest: %v\n%s", err, out)
	}
	if got := read(t, ep); !slices.Equal(got, want) {
		t.Fatalf("after the ingest node's restart, read back %v, want %v", got, want)
	}
	s.checkServers(t)
	runLogs, err := filepath.EvalSymlinks(filepath.Join(s.dataDir, "logs", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(s.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.checkStopped(t, 128+int(syscall.SIGTERM))
	// The killed process's log is kept: the restart appends to it.
	ingestLog, err := os.ReadFile(filepath.Join(runLogs, "ingest.log"))
	if err != nil || strings.Count(string(ingestLog), "=== localstack: ingest started at") != 2 {
		t.Fatalf("ingest log of the first run (%v):\n%s", err, tail(string(ingestLog), 3000))
	}

	// The second run reuses the binary the first one built.
	s, ep = startStack(t, bin, s.dataDir, "SEDIMENT_BIN="+filepath.Join(s.dataDir, "bin", "sediment"))
	s.checkServers(t)
	if got := read(t, ep); !slices.Equal(got, want) {
		t.Fatalf("after a restart, read back %v, want %v", got, want)
	}
	// The second run logs apart from the first.
	if again, err := filepath.EvalSymlinks(filepath.Join(s.dataDir, "logs", "latest")); err != nil || again == runLogs {
		t.Errorf("second run logs in %s (%v), as the first did", again, err)
	}
	if _, err := os.Stat(filepath.Join(runLogs, "frontend.log")); err != nil {
		t.Errorf("the first run's logs are gone: %v", err)
	}
	// Ctrl-C signals the terminal's foreground process group: the script's.
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	s.checkStopped(t, 128+int(syscall.SIGINT))
}

// checkServers checks that the script runs the five servers, and records
// them.
func (s *stack) checkServers(t *testing.T) {
	t.Helper()
	s.servers = nil
	var names []string
	for _, p := range descendants(s.cmd.Process.Pid) {
		// A child that exited while /proc was read is no server.
		if c := comm(p); c != "" || alive(p) {
			s.servers = append(s.servers, p)
			names = append(names, c)
		}
	}
	slices.Sort(names)
	if want := []string{"minio", "nats-server", "sediment", "sediment", "sediment"}; !slices.Equal(names, want) {
		t.Fatalf("processes under run.sh: %q, want %q", names, want)
	}
}

// checkStopped waits for the signalled script to exit with code, then
// checks that it stopped every server, in reverse order, and freed every
// port.
func (s *stack) checkStopped(t *testing.T, code int) {
	t.Helper()
	select {
	case err := <-s.exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != code {
			t.Errorf("run.sh after the signal: %v, want exit status %d", err, code)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("run.sh still running 2 minutes after the signal")
	}
	s.stopped = true
	for _, p := range s.servers {
		if alive(p) {
			t.Errorf("%s (pid %d) still running after run.sh stopped", comm(p), p)
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
	for i, port := range s.ports {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			t.Errorf("%s=%d: still listening after run.sh stopped", portVars[i], port)
		}
	}
	var order []string
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "localstack: stopping "); ok {
			order = append(order, strings.Fields(rest)[0])
		}
	}
	if want := []string{"frontend", "compactor", "ingest", "nats", "minio"}; !slices.Equal(order, want) {
		t.Errorf("stop order %q, want %q", order, want)
	}
}

type event struct {
	seq  int
	body string
	n    int64
}

func session(t *testing.T, ep string) *gocql.Session {
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
	return s
}

// write creates a table through the frontend at ep and writes rows of two
// partitions; it returns those of partition "a".
func write(t *testing.T, ep string) []event {
	t.Helper()
	s := session(t, ep)
	defer s.Close()
	for _, q := range []string{
		`CREATE KEYSPACE local WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
		`CREATE TABLE local.events (id text, seq int, body text, n bigint, PRIMARY KEY (id, seq))`,
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var want []event
	for i := range 20 {
		e := event{seq: i, body: fmt.Sprintf("event %d ✓", i), n: int64(i) * 1_000_000_007}
		want = append(want, e)
		if err := s.Query(`INSERT INTO local.events (id, seq, body, n) VALUES (?, ?, ?, ?)`, "a", e.seq, e.body, e.n).Exec(); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if err := s.Query(`INSERT INTO local.events (id, seq, body, n) VALUES (?, ?, ?, ?)`, "b", 0, "other", 1).Exec(); err != nil {
		t.Fatalf("insert b: %v", err)
	}
	return want
}

// read returns partition "a" of the table write made.
func read(t *testing.T, ep string) []event {
	t.Helper()
	s := session(t, ep)
	defer s.Close()
	var got []event
	it := s.Query(`SELECT seq, body, n FROM local.events WHERE id = ?`, "a").Iter()
	var e event
	for it.Scan(&e.seq, &e.body, &e.n) {
		got = append(got, e)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("select: %v", err)
	}
	return got
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
