package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/sedimentdb/sediment/internal/vfs"
)

// nodeIDFile holds, under the data directory, the identity of the node whose
// commitlogs live there: a restarted node must come back as the same member
// and owner of the same ranges, or it could not commit what it replays. An
// operator may write the file before the first start to choose the ID.
const nodeIDFile = "node-id"

// maxNodeIDLen keeps IDs short: they appear in object keys and KV keys.
const maxNodeIDLen = 64

// loadNodeID returns the node ID stored in dir, creating a random one on the
// first start.
func loadNodeID(fsys vfs.FS, dir string) (string, error) {
	name := filepath.Join(dir, nodeIDFile)
	f, err := fsys.Open(name)
	if err == nil {
		b, err := io.ReadAll(io.LimitReader(f, maxNodeIDLen+2))
		f.Close()
		if err != nil {
			return "", fmt.Errorf("node id: %w", err)
		}
		id, err := parseNodeID(b)
		if err != nil {
			return "", fmt.Errorf("node id: %s: %w", name, err)
		}
		return id, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("node id: %w", err)
	}
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(r[:])
	err = fsys.MkdirAll(dir, 0o755)
	if err == nil {
		err = vfs.WriteFileAtomic(fsys, dir, nodeIDFile, []byte(id+"\n"))
	}
	if err != nil {
		return "", fmt.Errorf("node id: %w", err)
	}
	return id, nil
}

// parseNodeID reads an ID file: 1 to 64 letters, digits, '-', '_' or '.',
// optionally followed by a newline.
func parseNodeID(b []byte) (string, error) {
	id := strings.TrimSuffix(string(b), "\n")
	if id == "" || len(id) > maxNodeIDLen {
		return "", fmt.Errorf("want 1 to %d characters, found %d", maxNodeIDLen, len(id))
	}
	for i := range len(id) {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return "", fmt.Errorf("byte %#x at %d: want letters, digits, '-', '_' or '.'", c, i)
		}
	}
	return id, nil
}
