package rpc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/internal/vfs"
)

// The child of TestKillServer serves a node whose commitlog is in
// $killDirEnv on $killAddrEnv, holding every write of table 7 forever.
const (
	killDirEnv  = "SEDIMENT_RPC_KILL_DIR"
	killAddrEnv = "SEDIMENT_RPC_KILL_ADDR"
)

// TestKillServer kills the server process with SIGKILL while a request is
// in flight: the request fails with ErrConnLost; once a new process serves
// the same node on the same address, the client reconnects by itself and
// reads every write acknowledged before the kill.
func TestKillServer(t *testing.T) {
	if dir := os.Getenv(killDirEnv); dir != "" {
		killChild(t, dir, os.Getenv(killAddrEnv))
		return
	}
	dir := t.TempDir()
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close()

	child, lines := startKillChild(t, dir, addr)
	c := dial(t, addr, rpc.Options{Conns: 1})
	ctx := context.Background()
	const acked = 50
	for i := range acked {
		if err := c.Apply(ctx, rowMutation(1, pk(i), 0, 1, "v")); err != nil {
			t.Fatal(err)
		}
	}
	held := make(chan error, 1)
	go func() { held <- c.Apply(ctx, rowMutation(7, "held", 0, 1, "v")) }()
	if l := <-lines; l != "held" {
		t.Fatalf("child said %q, want held", l)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	if err := <-held; !errors.Is(err, rpc.ErrConnLost) || !storage.Retriable(err) {
		t.Fatalf("request in flight when the server was killed: %v", err)
	}

	startKillChild(t, dir, addr)
	var p *rpc.Page
	var err error
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		// The port is open once the child listens; until then, dials fail.
		if p, err = c.Scan(ctx, rpc.ScanRequest{Table: 1}); !errors.Is(err, storage.ErrUnavailable) || time.Since(start) > 30*time.Second {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != acked {
		t.Fatalf("%d rows after the restart, want %d", len(p.Entries), acked)
	}
}

// startKillChild starts the test binary as the child and returns it with
// the lines it prints, once it listens.
func startKillChild(t *testing.T, dir, addr string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillServer$", "-test.v")
	cmd.Env = append(os.Environ(), killDirEnv+"="+dir, killAddrEnv+"="+addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if l, ok := strings.CutPrefix(s.Text(), "child: "); ok {
				lines <- l
			}
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "listening" {
			t.Fatalf("child said %q, want listening", l)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the child did not start")
	}
	return cmd, lines
}

// killChild serves until it is killed.
func killChild(t *testing.T, dir, addr string) {
	n := openNode(t, vfs.Default, filepath.Join(dir, "log"), 1)
	g := newGate(ingest.RPCHandler(n), 7)
	var ln net.Listener
	var err error
	// The previous child's port may take a moment to be free.
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if ln, err = net.Listen("tcp", addr); err == nil || time.Since(start) > 10*time.Second {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range g.arrived {
			fmt.Println("child: held")
		}
	}()
	fmt.Println("child: listening")
	t.Fatal(rpc.Serve(ln, g))
}
