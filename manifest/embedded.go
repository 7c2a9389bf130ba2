package manifest

import (
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Embedded is an in-process NATS server with JetStream, for the all-in-one
// mode and for tests. It listens on 127.0.0.1 only.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts an embedded NATS server that keeps its JetStream
// data under dir, listening on 127.0.0.1:port (0 picks a free port).
func StartEmbedded(dir string, port int) (*Embedded, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: embedded NATS needs a directory", ErrInvalid)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "sediment-embedded",
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("manifest: embedded NATS: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("manifest: embedded NATS did not start listening")
	}
	return &Embedded{srv: srv}, nil
}

// URL is the client URL of the server.
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// Port is the port the server listens on.
func (e *Embedded) Port() int { return e.srv.Addr().(*net.TCPAddr).Port }

// Shutdown stops the server and waits until it has stopped.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}
