// Package testserver starts real servers as child processes for tests:
// MinIO and nats-server (with JetStream). Each server listens on a free
// 127.0.0.1 port with its data in a temporary directory, is ready when its
// constructor returns, and is stopped by the test's cleanup.
//
// A missing binary fails the test with the command that installs it: tests
// that need a real server must not pass silently without one.
package testserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// findBinary looks for name in PATH, then in $(go env GOPATH)/bin.
func findBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		out, err := exec.Command("go", "env", "GOPATH").Output()
		if err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for dir := range strings.SplitSeq(gopath, string(os.PathListSeparator)) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "bin", name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("testserver: %s not found in PATH or $(go env GOPATH)/bin", name)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// process is a server binary run as a child process, restartable with the
// same arguments.
type process struct {
	name string
	bin  string
	args []string
	env  []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	paused bool
	log    syncBuffer
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("testserver: %s is already running", p.name)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout = &p.log
	cmd.Stderr = &p.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testserver: start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	p.cmd, p.exited, p.paused = cmd, exited, false
	return nil
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop signals the process and waits for it to exit, killing it if it
// has not exited after grace.
func (p *process) stop(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, exited, paused := p.cmd, p.exited, p.paused
	p.cmd, p.paused = nil, false
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	if paused {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(grace):
		cmd.Process.Kill()
		<-exited
	}
}

// signal sends sig to the running process.
func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("testserver: %s is not running", p.name)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	if sig == syscall.SIGSTOP {
		// The signal only stops each thread when the kernel next gets to
		// it: until then a running thread may still answer a request.
		return waitStopped(p.cmd.Process.Pid, 5*time.Second)
	}
	return nil
}

// waitStopped waits until every thread of process pid is stopped, as
// /proc/<pid>/task/*/stat tells.
func waitStopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if allStopped(pid) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testserver: process %d did not stop within %v", pid, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

func allStopped(pid int) bool {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(stats) == 0 {
		return false
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			return false
		}
		// The state follows the parenthesised command name, which may
		// itself contain spaces or parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return true
}

// waitReady polls ready until it returns nil, the process exits or the
// timeout passes.
func (p *process) waitReady(timeout time.Duration, ready func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if !p.running() {
			return fmt.Errorf("testserver: %s exited while starting; its output:\n%s", p.name, p.log.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		last = ready(ctx)
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("testserver: %s not ready after %v (%v); its output:\n%s", p.name, timeout, last, p.log.String())
}

// syncBuffer collects a process's output for failure messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Keep the tail: a long test must not hold all of a server's logs.
	if b.buf.Len() > 1<<20 {
		tail := bytes.Clone(b.buf.Bytes()[b.buf.Len()-64<<10:])
		b.buf.Reset()
		b.buf.Write(tail)
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// require fails t if err is not nil.
func require(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
