package testserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// NATSCluster is n nats-server processes on 127.0.0.1, routed to each other
// as one cluster with JetStream, each with its own store directory: a
// stream of three replicas on it survives the loss of one server.
type NATSCluster struct {
	Servers []*NATSServer
}

// NATSClusterOf starts n clustered nats-servers for t and waits until each
// answers JetStream requests (which needs a meta leader, so a quorum of
// them). The test's cleanup stops them.
func NATSClusterOf(t testing.TB, n int) *NATSCluster {
	t.Helper()
	bin, err := findBinary("nats-server")
	if err != nil {
		t.Fatalf("%v; install it with:\n\t%s", err, NATSInstall)
	}
	clientPorts, routePorts := make([]int, n), make([]int, n)
	for i := range n {
		clientPorts[i], err = freePort()
		require(t, err)
		routePorts[i], err = freePort()
		require(t, err)
	}
	var routes []string
	for _, p := range routePorts {
		routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(p))
	}
	c := &NATSCluster{}
	for i := range n {
		s := &NATSServer{Dir: t.TempDir(), url: "nats://127.0.0.1:" + strconv.Itoa(clientPorts[i])}
		// Every JetStream write is synced before it counts towards a
		// quorum: with the default (a sync every two minutes) a killed
		// server loses acknowledged entries of its Raft log, and when it
		// rejoins, acknowledged writes can be lost (seen as 8 lost writes in
		// TestReplicatedLog). nats-server takes sync_interval only from a
		// configuration file.
		conf := filepath.Join(s.Dir, "nats.conf")
		require(t, os.WriteFile(conf, []byte("jetstream {\n  sync_interval: always\n}\n"), 0o600))
		s.proc = &process{
			name: fmt.Sprintf("nats-server-%d", i+1),
			bin:  bin,
			args: []string{
				"--name", fmt.Sprintf("n%d", i+1),
				"--addr", "127.0.0.1",
				"--port", strconv.Itoa(clientPorts[i]),
				"--cluster_name", "testserver",
				"--cluster", "nats://127.0.0.1:" + strconv.Itoa(routePorts[i]),
				"--routes", strings.Join(routes, ","),
				"-c", conf,
				"--jetstream",
				"--store_dir", s.Dir,
			},
		}
		c.Servers = append(c.Servers, s)
	}
	t.Cleanup(c.Stop)
	// Start them all before waiting: one alone elects no meta leader.
	for _, s := range c.Servers {
		require(t, s.proc.start())
	}
	for _, s := range c.Servers {
		require(t, s.waitReady())
	}
	return c
}

// URL lists every server's client URL, as nats.Connect takes them.
func (c *NATSCluster) URL() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.url
	}
	return strings.Join(urls, ",")
}

// Connect returns a client connection to any server of the cluster, which
// the test's cleanup closes. It fails over to the others and keeps
// reconnecting, so it outlives the loss of servers.
func (c *NATSCluster) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("testserver: connect to %s: %v", c.URL(), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Stop stops every server.
func (c *NATSCluster) Stop() {
	for _, s := range c.Servers {
		s.proc.stop(syscall.SIGTERM, 10*time.Second)
	}
}
