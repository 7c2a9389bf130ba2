package testserver

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSInstall is the command that installs the nats-server binary these
// tests expect; `make test` runs it.
const NATSInstall = "go install github.com/nats-io/nats-server/v2@v2.15.2"

// NATSServer is a nats-server process on 127.0.0.1 with JetStream enabled.
type NATSServer struct {
	// Dir is JetStream's store directory; it survives Restart, so streams
	// and KV buckets outlive a stop or a kill.
	Dir string

	url  string
	proc *process
}

// NATS starts a nats-server with JetStream for t and waits until it
// accepts connections and JetStream answers. The test's cleanup stops the
// server. If the nats-server binary is missing, the test fails with the
// command that installs it.
func NATS(t testing.TB) *NATSServer {
	t.Helper()
	bin, err := findBinary("nats-server")
	if err != nil {
		t.Fatalf("%v; install it with:\n\t%s", err, NATSInstall)
	}
	n := &NATSServer{Dir: t.TempDir()}
	// The free port may be taken before nats-server binds it; try a few.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		require(t, err)
		n.url = "nats://127.0.0.1:" + strconv.Itoa(port)
		n.proc = &process{
			name: "nats-server",
			bin:  bin,
			args: []string{
				"--addr", "127.0.0.1",
				"--port", strconv.Itoa(port),
				"--jetstream",
				"--store_dir", n.Dir,
			},
		}
		require(t, n.proc.start())
		err = n.waitReady()
		if err == nil {
			break
		}
		n.proc.stop(syscall.SIGKILL, time.Second)
		if attempt == 2 {
			t.Fatal(err)
		}
	}
	t.Cleanup(n.Stop)
	return n
}

// waitReady waits for a client connection and a JetStream answer: the
// server enables JetStream, recovering its streams from Dir, before it
// listens for clients, but asking makes readiness not depend on that order.
func (n *NATSServer) waitReady() error {
	return n.proc.waitReady(time.Minute, func(ctx context.Context) error {
		nc, err := nats.Connect(n.url, nats.Timeout(time.Second), nats.NoReconnect())
		if err != nil {
			return err
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		_, err = js.AccountInfo(ctx)
		return err
	})
}

// URL is the server's client URL, nats://127.0.0.1:port. It is the same
// after Restart.
func (n *NATSServer) URL() string { return n.url }

// Connect returns a client connection that the test's cleanup closes. It
// keeps reconnecting while the server is down, so it outlives Kill and
// Restart.
func (n *NATSServer) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(n.url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("testserver: connect to %s: %v", n.url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Stop shuts the server down gracefully. Calling it again does nothing.
func (n *NATSServer) Stop() { n.proc.stop(syscall.SIGTERM, 10*time.Second) }

// Kill ends the server abruptly (SIGKILL), as a crash would.
func (n *NATSServer) Kill() { n.proc.stop(syscall.SIGKILL, time.Second) }

// Restart starts a stopped or killed server again on the same port with
// the same store directory, and waits until it is ready.
func (n *NATSServer) Restart(t testing.TB) {
	t.Helper()
	n.proc.stop(syscall.SIGTERM, 10*time.Second)
	require(t, n.proc.start())
	require(t, n.waitReady())
}

// Pause freezes the server (SIGSTOP): connections stay open but nothing is
// answered, as with a hung server or a network partition.
func (n *NATSServer) Pause(t testing.TB) { t.Helper(); require(t, n.proc.signal(syscall.SIGSTOP)) }

// Resume unfreezes a paused server (SIGCONT).
func (n *NATSServer) Resume(t testing.TB) { t.Helper(); require(t, n.proc.signal(syscall.SIGCONT)) }
