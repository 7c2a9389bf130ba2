package objectstore

import (
	"fmt"
	"strings"
)

// maxKeyLen is S3's limit on key length in bytes.
const maxKeyLen = 1024

// checkKey rejects keys that no backend can store faithfully. Keys are
// slash-separated paths of non-empty segments, so that the file backend can
// map them onto directories and every backend agrees on what is valid.
func checkKey(key string) error {
	if key == "" || len(key) > maxKeyLen {
		return fmt.Errorf("%w: length %d", ErrInvalidKey, len(key))
	}
	if strings.ContainsRune(key, 0) {
		return fmt.Errorf("%w: %q contains NUL", ErrInvalidKey, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q has an empty, '.' or '..' segment", ErrInvalidKey, key)
		}
	}
	return nil
}
