package status

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// chromiumInstall is what a machine without Chromium needs (make tools runs
// it).
const chromiumInstall = "apt-get install -y chromium"

// consoleRE matches a message of the page's console in Chromium's log
// (--enable-logging=stderr --log-level=0): console.log and console.error
// calls, uncaught exceptions, and Content-Security-Policy refusals.
var consoleRE = regexp.MustCompile(`:CONSOLE[:(].*`)

// chromium runs headless Chromium on url with args and returns its stdout
// and the page's console messages.
func chromium(t *testing.T, url string, args ...string) (string, []string) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: run `%s` (or make tools): %v", chromiumInstall, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args = append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--log-level=0"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return stdout.String(), consoleRE.FindAllString(stderr.String(), -1)
}

// serve serves h on loopback and records the paths asked for.
func serve(t *testing.T, h http.Handler) (url string, paths func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		h.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

// TestChromium renders the page in headless Chromium: the DOM it builds
// shows the same figures as the HTML the handler wrote; a screenshot of
// it is taken (kept in $SEDIMENT_SCREENSHOTS if set, for a person to look
// at); and the browser's console stays empty, with nothing fetched but the
// page itself.
func TestChromium(t *testing.T) {
	f := newFixture(t)
	base, paths := serve(t, Handler(f.src))

	dom, console := chromium(t, base+"/status", "--dump-dom")
	if !strings.Contains(dom, "<h1>Sediment status</h1>") {
		t.Fatalf("chromium's DOM is not the status page:\n%s", dom)
	}
	f.check(t, dom)
	if n := strings.Count(dom, "<svg"); n != 8 {
		t.Errorf("the DOM holds %d charts, want 8", n)
	}
	// Two samples make one interval: a point per line.
	if !strings.Contains(dom, "<circle") {
		t.Error("no chart draws a value")
	}

	shot := filepath.Join(t.TempDir(), "status.png")
	_, console2 := chromium(t, base+"/status", "--screenshot="+shot, "--window-size=1200,2600", "--hide-scrollbars")
	for _, m := range append(console, console2...) {
		t.Errorf("browser console: %s", m)
	}
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	// A blank 1200×2600 page compresses to a few KiB; charts and tables
	// do not.
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 40<<10 {
		t.Errorf("screenshot: %d bytes, not a PNG of the page", len(png))
	}
	if dir := os.Getenv("SEDIMENT_SCREENSHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "status.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range paths() {
		if p != "/status" {
			t.Errorf("the browser asked for %s: the page must be whole as served", p)
		}
	}
}

// TestChromiumConsoleCheck: the console check catches a page that logs,
// and a script the page's policy refuses.
func TestChromiumConsoleCheck(t *testing.T) {
	base, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refused" {
			w.Header().Set("Content-Security-Policy", "default-src 'none'")
		}
		w.Write([]byte(`<html><body><script>console.error("logged")</script></body></html>`))
	}))
	for path, want := range map[string]string{"/logs": `"logged"`, "/refused": "Content Security Policy"} {
		_, console := chromium(t, base+path, "--dump-dom")
		if !strings.Contains(strings.Join(console, "\n"), want) {
			t.Errorf("%s: console %q, want a message with %s", path, console, want)
		}
	}
}
