package cqltest

import (
	"cmp"
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
// DataStax Python driver, against the server: negotiating (the driver
// 3.25 settles on v5), at v5 asked for, and at v4.
func TestPythonDriver(t *testing.T) {
	if out, err := exec.Command(python, "-c", "import cassandra").CombinedOutput(); err != nil {
		t.Fatalf("the Python driver is missing (make tools installs it: apt-get install -y python3-cassandra): %v\n%s", err, out)
	}
	for _, version := range []string{"", "5", "4"} {
		name := "negotiated"
		if version != "" {
			name = "v" + version
		}
		t.Run(name, func(t *testing.T) {
			srv := Start(t, Options{})
			host, port, _ := net.SplitHostPort(srv.Addr)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			args := []string{filepath.Join("python", "driver.py"), host, port}
			if version != "" {
				args = append(args, version)
			}
			out, err := exec.CommandContext(ctx, python, args...).CombinedOutput()
			if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "OK") {
				t.Fatalf("driver.py: %v\n%s", err, out)
			}
			want := cmp.Or(version, "5")
			if n := srv.Startups(t, "v"+want); n == 0 {
				t.Errorf("no connection started at v%s", want)
			}
		})
	}
}
