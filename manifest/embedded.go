package manifest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedUser is the one user of the embedded NATS server. Its password
// is generated at the server's first start and kept, readable by the
// owner alone, in EmbeddedPasswordFile(dir): a process on the same machine
// (another role, `sediment admin`) reads it from there, anyone else is
// refused, so that the catalog cannot be rewritten by whoever reaches the
// port.
const EmbeddedUser = "sediment"

// EmbeddedPasswordFile is where the embedded server whose JetStream
// directory is dir keeps its password.
func EmbeddedPasswordFile(dir string) string { return filepath.Join(dir, "password") }

// Embedded is an in-process NATS server with JetStream, for the all-in-one
// mode and for tests. It listens on 127.0.0.1 only and requires the
// password of EmbeddedUser.
type Embedded struct {
	srv      *server.Server
	password string
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
	password, err := embeddedPassword(dir)
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "sediment-embedded",
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
		Users:      []*server.User{{Username: EmbeddedUser, Password: password}},
	})
	if err != nil {
		return nil, fmt.Errorf("manifest: embedded NATS: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("manifest: embedded NATS did not start listening")
	}
	return &Embedded{srv: srv, password: password}, nil
}

// embeddedPassword reads the password kept under dir, or makes one at the
// first start: written to a temporary file with mode 0600, synced, then
// renamed, so that a crash never leaves half a password.
func embeddedPassword(dir string) (string, error) {
	name := EmbeddedPasswordFile(dir)
	if data, err := os.ReadFile(name); err == nil {
		if pw := strings.TrimSpace(string(data)); pw != "" {
			return pw, nil
		}
		return "", fmt.Errorf("%w: %s is empty", ErrInvalid, name)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("manifest: embedded NATS password: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("manifest: embedded NATS: %w", err)
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	pw := hex.EncodeToString(raw)
	f, err := os.CreateTemp(dir, ".password-*")
	if err != nil {
		return "", fmt.Errorf("manifest: embedded NATS password: %w", err)
	}
	defer os.Remove(f.Name())
	// CreateTemp makes the file 0600.
	_, err = f.WriteString(pw + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return "", fmt.Errorf("manifest: embedded NATS password: %w", err)
	}
	return pw, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// URL is the client URL of the server, with the credentials: pass it to
// a client, never to a log (Addr is for that).
func (e *Embedded) URL() string {
	u := url.URL{Scheme: "nats", User: url.UserPassword(EmbeddedUser, e.password), Host: e.Addr()}
	return u.String()
}

// Addr is the host:port the server listens on.
func (e *Embedded) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(e.Port())) }

// Port is the port the server listens on.
func (e *Embedded) Port() int { return e.srv.Addr().(*net.TCPAddr).Port }

// Shutdown stops the server and waits until it has stopped.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}
