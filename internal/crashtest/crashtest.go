// Package crashtest runs a test binary again as a child process that works
// and reports what it has acknowledged, and kills it with SIGKILL, so that
// crash tests can check that every acknowledged item survives.
//
// The child prints one line "ack <id>" per acknowledged item (Ack); a line
// cut short by the kill has no newline and does not count.
package crashtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Ack reports, from the child, that item id is acknowledged.
func Ack(id uint64) {
	fmt.Fprintf(os.Stdout, "ack %d\n", id)
}

// Run starts this test binary again running only the test named test, with
// env added to its environment, kills it about d after its first
// acknowledgement, and returns the ids it acknowledged.
func Run(t *testing.T, test string, env []string, d time.Duration) []uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan struct{})
	var ids []uint64
	readErr := make(chan error, 1)
	go func() { readErr <- readAcks(out, &ids, first) }()
	select {
	case <-first:
		time.Sleep(d)
	case <-time.After(30 * time.Second):
		t.Error("the child acknowledged nothing in 30s")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the child exited by itself")
	}
	return ids
}

// readAcks collects the ids of complete "ack" lines until r ends, closing
// first at the first one.
func readAcks(r io.Reader, ids *[]uint64, first chan<- struct{}) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		s, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "ack ")
		if !ok {
			continue // test framework output
		}
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("child printed %q", line)
		}
		if len(*ids) == 0 {
			close(first)
		}
		*ids = append(*ids, id)
	}
}
