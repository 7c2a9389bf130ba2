package status

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// chromiumInstall is what a machine without Chromium needs (make tools runs
// it).
const chromiumInstall = "apt-get install -y chromium"

// TestChromium renders the page in headless Chromium and checks that the
// DOM it builds shows the same figures as the HTML the handler wrote.
func TestChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: run `%s` (or make tools): %v", chromiumInstall, err)
	}
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: Handler(f.src), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox",
		"--no-first-run", "--user-data-dir="+t.TempDir(),
		"--dump-dom", "http://"+ln.Addr().String()+"/status")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	dom := stdout.String()
	if !strings.Contains(dom, "<h1>Sediment status</h1>") {
		t.Fatalf("chromium's DOM is not the status page:\n%s\nstderr:\n%s", dom, stderr.String())
	}
	f.check(t, dom)
}
