package cqltest

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// python is Debian's interpreter, where python3-cassandra installs the
// DataStax driver (make tools installs it).
const python = "/usr/bin/python3"

// TestPythonDriver runs python/driver.py, a first session through the
// DataStax Python driver, against the server.
func TestPythonDriver(t *testing.T) {
	if out, err := exec.Command(python, "-c", "import cassandra").CombinedOutput(); err != nil {
		t.Fatalf("the Python driver is missing (make tools installs it: apt-get install -y python3-cassandra): %v\n%s", err, out)
	}
	srv := Start(t, Options{})
	host, port, _ := net.SplitHostPort(srv.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, filepath.Join("python", "driver.py"), host, port).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "OK") {
		t.Fatalf("driver.py: %v\n%s", err, out)
	}
}
