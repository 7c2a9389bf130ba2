package cqltest

import (
	"context"
	"go/build"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeModules is where make tools installs the DataStax Node.js driver
// (npm's cassandra-driver): $(go env GOPATH)/bin/.sediment-tools/node,
// unless NODE_PATH names another place.
func nodeModules() string {
	if p := os.Getenv("NODE_PATH"); p != "" {
		return p
	}
	gopath := filepath.SplitList(build.Default.GOPATH)[0]
	return filepath.Join(gopath, "bin", ".sediment-tools", "node", "node_modules")
}

// TestNodeDriver runs node/driver.js, a first session through the DataStax
// Node.js driver, against the server.
func TestNodeDriver(t *testing.T) {
	modules := nodeModules()
	if _, err := os.Stat(filepath.Join(modules, "cassandra-driver")); err != nil {
		t.Fatalf("the Node.js driver is missing from %s (make tools installs it with npm): %v", modules, err)
	}
	srv := Start(t, Options{})
	host, port, _ := net.SplitHostPort(srv.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("node", "driver.js"), host, port)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "OK") {
		t.Fatalf("driver.js: %v\n%s", err, out)
	}
	if n := srv.Startups(t, "v4"); n == 0 {
		t.Error("no connection started at v4")
	}
}
