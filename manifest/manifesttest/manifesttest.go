// Package manifesttest starts what tests of the manifest's users need: an
// embedded NATS server with JetStream and a client connected to it.
package manifesttest

import (
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sedimentdb/sediment/manifest"
)

// JetStream starts an embedded NATS server with JetStream under a temporary
// directory on 127.0.0.1, connects to it, and returns the JetStream context
// and the server's URL. Both are closed when the test ends.
func JetStream(t testing.TB) (jetstream.JetStream, string) {
	t.Helper()
	srv, err := manifest.StartEmbedded(filepath.Join(t.TempDir(), "nats"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js, srv.URL()
}
