package objectstore

import (
	"bytes"
	"crypto/md5"
	"errors"
	"testing"
)

func FuzzDecodeTrailer(f *testing.F) {
	var good bytes.Buffer
	writeTrailer(&good, md5.Sum([]byte("x")))
	f.Add(good.Bytes())
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0}, trailerLen))
	f.Add(append(bytes.Repeat([]byte{0xff}, md5.Size), "sdmntob2"...))
	f.Fuzz(func(t *testing.T, b []byte) {
		sum, err := decodeTrailer(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		var again bytes.Buffer
		writeTrailer(&again, sum)
		if !bytes.Equal(again.Bytes(), b) {
			t.Fatalf("decode then encode changed %x to %x", b, again.Bytes())
		}
	})
}
