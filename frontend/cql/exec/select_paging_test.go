package exec

import (
	"bytes"
	"testing"

	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/keys"
)

func TestPagingStateRoundTrip(t *testing.T) {
	key := keys.AppendPartitionEnd(nil, keys.AppendPartitionPrefix(nil, -42, []byte("pk")))
	for _, s := range []pagingState{
		{key: key},
		{key: key, remaining: 7, partRows: 3},
		{key: key, remaining: 1 << 31, partRows: 1 << 31},
	} {
		got, err := decodePagingState(encodePagingState(&s))
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if !bytes.Equal(got.key, s.key) || got.remaining != s.remaining || got.partRows != s.partRows {
			t.Fatalf("round trip of %+v gave %+v", s, *got)
		}
	}
	if s, err := decodePagingState(nil); s != nil || err != nil {
		t.Fatalf("empty state: %v, %v", s, err)
	}
}

func TestPagingStateRejectsMalformed(t *testing.T) {
	good := encodePagingState(&pagingState{key: keys.AppendPartitionEnd(nil, keys.AppendPartitionPrefix(nil, 1, []byte("k"))), remaining: 5})
	bad := [][]byte{
		{0},                                   // unknown version
		{pagingVersion},                       // no key
		{pagingVersion, 200, 1},               // key longer than the state
		append(good[:len(good):len(good)], 0), // trailing bytes
		good[:len(good)-1],                    // truncated
		encodePagingState(&pagingState{key: []byte("not a key")}),
		encodePagingState(&pagingState{key: keys.AppendPartitionPrefix(nil, 1, []byte("k"))}), // a prefix, not a key in a partition
	}
	for _, b := range bad {
		if _, err := decodePagingState(b); err == nil {
			t.Errorf("%x: decoded", b)
		} else if e := toError(err); e.Code != wire.CodeInvalid {
			t.Errorf("%x: code %x", b, e.Code)
		}
	}
}

func FuzzPagingState(f *testing.F) {
	f.Add(encodePagingState(&pagingState{key: keys.AppendPartitionEnd(nil, keys.AppendPartitionPrefix(nil, 1, []byte("k"))), remaining: 5, partRows: 2}))
	f.Add([]byte{pagingVersion, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodePagingState(b)
		if err != nil || s == nil {
			return
		}
		again, err := decodePagingState(encodePagingState(s))
		if err != nil || !bytes.Equal(again.key, s.key) || again.remaining != s.remaining || again.partRows != s.partRows {
			t.Fatalf("%x: re-encoding changed the state: %+v, %v", b, again, err)
		}
	})
}
