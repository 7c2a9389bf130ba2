package objectstore

import (
	"crypto/md5"
	"errors"
	"fmt"
	"io"
)

// ErrCorrupt marks a file-backend object whose trailer is missing or damaged.
var ErrCorrupt = errors.New("objectstore: corrupt object file")

const trailerLen = md5.Size + 8 // MD5, then trailerMagic

// trailerMagic ends every object file; the digit is the format version.
var trailerMagic = [8]byte{'s', 'd', 'm', 'n', 't', 'o', 'b', '1'}

func writeTrailer(w io.Writer, sum [md5.Size]byte) error {
	var b [trailerLen]byte
	copy(b[:], sum[:])
	copy(b[md5.Size:], trailerMagic[:])
	if _, err := w.Write(b[:]); err != nil {
		return fmt.Errorf("objectstore: %w", err)
	}
	return nil
}

// readTrailer reads the trailer of an object file of fileSize bytes and
// returns the object's size and MD5.
func readTrailer(r io.ReaderAt, fileSize int64) (int64, [md5.Size]byte, error) {
	if fileSize < trailerLen {
		return 0, [md5.Size]byte{}, fmt.Errorf("%w: %d bytes is too short", ErrCorrupt, fileSize)
	}
	var b [trailerLen]byte
	if _, err := r.ReadAt(b[:], fileSize-trailerLen); err != nil {
		return 0, [md5.Size]byte{}, fmt.Errorf("objectstore: read trailer: %w", err)
	}
	sum, err := decodeTrailer(b[:])
	return fileSize - trailerLen, sum, err
}

// decodeTrailer checks and decodes the trailer b.
func decodeTrailer(b []byte) ([md5.Size]byte, error) {
	var sum [md5.Size]byte
	if len(b) != trailerLen {
		return sum, fmt.Errorf("%w: trailer of %d bytes", ErrCorrupt, len(b))
	}
	if [8]byte(b[md5.Size:]) != trailerMagic {
		return sum, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[md5.Size:])
	}
	copy(sum[:], b)
	return sum, nil
}
