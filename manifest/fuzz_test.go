package manifest

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/google/uuid"
)

func TestEscapeName(t *testing.T) {
	for in, want := range map[string]string{
		"users":      "users",
		"Users_2-x":  "Users_2-x",
		"a.b":        "a=2Eb",
		"a=b":        "a=3Db",
		"with space": "with=20space",
		"é":          "=C3=A9",
	} {
		if got := escapeName(in); got != want {
			t.Errorf("escapeName(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", "a.b", "=2", "=41", "=2e", "a b", "=ZZ"} {
		if _, err := unescapeName(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("unescapeName(%q): %v, want ErrCorrupt", bad, err)
		}
	}
}

func FuzzEscapeName(f *testing.F) {
	for _, s := range []string{"users", "a.b", "=3D", "a=2Eb", "é", "\x00", "=41"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s != "" {
			if back, err := unescapeName(escapeName(s)); err != nil || back != s {
				t.Fatalf("round trip of %q: %q, %v", s, back, err)
			}
		}
		// Every accepted spelling is the one escapeName produces.
		if name, err := unescapeName(s); err == nil && escapeName(name) != s {
			t.Fatalf("%q decodes to %q, which escapes to %q", s, name, escapeName(name))
		}
	})
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte(`{"version":1,"data":{"name":"ks"}}`))
	f.Add([]byte(`{"version":3,"deleted":true}`))
	f.Add([]byte(`{"version":0,"data":{}}`))
	f.Add([]byte(`{"version":1,"deleted":true,"data":{}}`))
	f.Add([]byte(`{"version":1,"data":1} {}`))
	f.Add([]byte(`{"version":1,"extra":1,"deleted":true}`))
	f.Add([]byte(`{"version":1,"data":{"name":"ks","tables":{"t":{"name":"t","options":{"default_time_to_live":1,"crc_check_chance":0,"caching":{"keys":"NONE"},"extensions":{"x":"AQI="},"min_index_interval":"x"}}}}}`))
	f.Add([]byte(`{"version":2,"data":{"table":"3a838da0-8492-4670-8059-038db1402d3f","range":1,"sstables":[],"garbage":[{"key":"a","size":1,"since":"2026-01-01T00:00:00Z","reason":"truncated"}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEnvelope(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		e2, err := decodeEnvelope(again)
		if err != nil || e2.Version != e.Version || e2.Deleted != e.Deleted {
			t.Fatalf("re-encoded envelope %s: %+v, %v", again, e2, err)
		}
		// Documents inside decode or fail cleanly, whatever their kind.
		for kind, dec := range decoders {
			if _, err := dec(rangeKey(1), e.Data); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: error %v is not ErrCorrupt", kind, err)
			}
		}
	})
}

func FuzzParseArchiveKey(f *testing.F) {
	f.Add(archiveKey("c1_schema", "ks.a", 7))
	f.Add("manifest/c1_schema/ks.a/00000000000000000000")
	f.Add("manifest/a/b/c/00000000000000000001")
	f.Add("manifest//b/00000000000000000001")
	f.Fuzz(func(t *testing.T, k string) {
		b, key, v, err := parseArchiveKey(k)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if again := archiveKey(b, key, v); again != k {
			t.Fatalf("%q parses to (%q, %q, %d), which names %q", k, b, key, v, again)
		}
	})
}

func TestDecodersCheckKeys(t *testing.T) {
	for kind, tc := range map[string]struct {
		key, doc string
	}{
		kindSchema:    {keyspaceKey("a"), `{"name":"a","replication":{"class":"x"},"durable_writes":true,"version":"00000000-0000-0000-0000-000000000000"}`},
		kindSSTables:  {sstablesKey(uuid.Nil, 3), `{"table":"00000000-0000-0000-0000-000000000000","range":3,"sstables":[]}`},
		kindOwnership: {rangeKey(2), `{"range":2,"owner":"n","epoch":1}`},
		kindMembers:   {memberKey("n.1"), `{"id":"n.1","roles":null,"addr":"a","shards":1,"heartbeat":"2026-01-01T00:00:00Z"}`},
		kindLeases:    {leaseKey("p"), `{"name":"p","holder":"h","expiry":"2026-01-01T00:00:00Z"}`},
	} {
		if _, err := decoders[kind](tc.key, []byte(tc.doc)); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
		if _, err := decoders[kind]("x.other", []byte(tc.doc)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s under a foreign key: %v", kind, err)
		}
	}
}

func TestDecodeDocStrict(t *testing.T) {
	var ks Keyspace
	if err := decodeDoc([]byte(`{"name":"a","future_field":1}`), &ks); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown field: %v", err)
	}
	if err := decodeDoc([]byte(`{"name":"a"}{}`), &ks); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing data: %v", err)
	}
	want := Keyspace{Name: "a", Replication: map[string]string{"class": "x"}}
	raw, _ := json.Marshal(want)
	var got Keyspace
	if err := decodeDoc(raw, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v %v", got, err)
	}
}
