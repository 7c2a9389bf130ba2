package transport

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/frontend/wire"
)

// FuzzConnection sends arbitrary bytes to a server, after a STARTUP when
// asked, and checks that every frame it answers is well formed and that
// it still serves a new connection afterwards.
func FuzzConnection(f *testing.F) {
	frame := func(stream int16, m wire.Message) []byte {
		b, _ := wire.AppendFrame(nil, wire.Header{Version: wire.V4, Stream: stream}, nil, m, nil)
		return b
	}
	f.Add(false, frame(1, &wire.Options{}))
	f.Add(true, frame(1, query("ECHO", []byte{1})))
	f.Add(true, append(frame(1, &wire.Prepare{Query: "SELECT ?"}), frame(2, &wire.Register{Events: []string{wire.SchemaChanged}})...))
	f.Add(true, append(frame(1, query("WAIT x")), frame(2, query("PANIC"))...))
	f.Add(true, []byte{4, 1, 0, 1, 7, 0, 0, 0, 4, 0, 0, 0, 9})
	f.Add(false, []byte{5, 0, 0, 1, 5, 0, 0, 0, 0})
	f.Add(true, []byte{4, 0, 0, 1, 7, 0x7f, 0xff, 0xff, 0xff})
	f.Add(true, []byte{0x84, 0, 0, 1, 2, 0, 0, 0, 0})                // a response frame, dropped
	f.Add(false, []byte{0x84, 0, 0, 1, 7, 0, 0, 0, 0})               // a request with the response bit
	f.Add(true, []byte{3, 0, 0, 1, 5, 0, 0, 0, 0})                   // OPTIONS in another version
	f.Add(true, []byte{4, 0x10, 0xff, 0xf0, 0x0b, 0, 0, 0, 2, 0, 0}) // beta flag, negative stream
	for _, m := range []wire.Message{
		&wire.Batch{Children: []wire.BatchChild{{Query: "ECHO"}, {ID: []byte{1}}}},
		&wire.AuthResponse{Token: []byte("\x00a\x00b")},
		&wire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0", "COMPRESSION": "lz4"}},
	} {
		f.Add(true, frame(3, m))
	}

	cfg := testConfig()
	cfg.MaxFrameSize = 1 << 16
	s, err := New(cfg, newTestHandler(), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		f.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close()
	addr := ln.Addr().String()
	startup := frame(0, &wire.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}})

	f.Fuzz(func(t *testing.T, withStartup bool, in []byte) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if withStartup {
			in = append(bytes.Clone(startup), in...)
		}
		if _, err := nc.Write(in); err != nil {
			t.Fatal(err)
		}
		nc.(*net.TCPConn).CloseWrite()
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			fr, err := wire.ReadFrame(nc, 1<<24)
			if err != nil {
				var uv *wire.UnsupportedVersionError
				if errAs(err, &uv) && uv.Header.Response {
					// The answer to an unsupported version, in that version.
					break
				}
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatal("the server neither answered nor closed")
				}
				break // closed
			}
			if !fr.Response {
				t.Fatalf("frame without the response bit: %+v", fr.Header)
			}
			body := fr.Body
			if fr.Flags&wire.FlagCompression != 0 {
				// The input's own STARTUP chose the algorithm.
				if body, err = wire.LZ4.Decompress(nil, body, 1<<24); err != nil {
					if body, err = wire.Snappy.Decompress(nil, fr.Body, 1<<24); err != nil {
						t.Fatalf("compressed answer does not decompress: %v", err)
					}
				}
			}
			_, body, err = wire.SplitBody(fr.Header, body)
			if err != nil {
				t.Fatalf("answer envelope: %v", err)
			}
			if _, err := wire.DecodeResponse(fr.Opcode, fr.Version, body); err != nil {
				t.Fatalf("answer %v does not decode: %v", fr.Opcode, err)
			}
		}
		// Other connections are served still.
		c := &client{t: t, nc: dialRaw(t, addr), v: wire.V4}
		defer c.nc.Close()
		if _, ok := c.roundTrip(1, &wire.Options{}).(*wire.Supported); !ok {
			t.Fatal("OPTIONS on a new connection")
		}
	})
}

func dialRaw(t *testing.T, addr string) net.Conn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

func errAs(err error, target **wire.UnsupportedVersionError) bool { return errors.As(err, target) }

// FuzzConnectionV5 starts a v5 connection, with or without lz4, then
// sends arbitrary bytes as its segments, and checks that every answer is
// a well-formed envelope in well-formed segments until the server closes.
func FuzzConnectionV5(f *testing.F) {
	envelope := func(stream int16, m wire.Message) []byte {
		b, _ := wire.AppendFrame(nil, wire.Header{Version: wire.V5, Stream: stream}, nil, m, nil)
		return b
	}
	big := query("ECHO", bytes.Repeat([]byte("x"), 140<<10))
	for _, lz4 := range []bool{false, true} {
		segs, _ := wire.AppendSegments(nil, envelope(1, query("ECHO", []byte{1})), lz4)
		f.Add(lz4, segs)
		segs, _ = wire.AppendSegments(nil, append(envelope(1, &wire.Prepare{Query: "SELECT ?", Keyspace: "ks"}), envelope(2, &wire.Options{})...), lz4)
		f.Add(lz4, segs)
		segs, _ = wire.AppendSegments(nil, envelope(3, big), lz4)
		f.Add(lz4, segs)
		f.Add(lz4, wire.AppendSegment(nil, envelope(4, query("KEYSPACE"))[:5], false, lz4))
	}
	f.Add(false, []byte{0x05, 0x00, 0x02, 0x19, 0x99, 0x9b})

	cfg := testConfig()
	cfg.MaxFrameSize = 1 << 18
	s, err := New(cfg, newTestHandler(), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		f.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close()
	addr := ln.Addr().String()

	f.Fuzz(func(t *testing.T, lz4 bool, in []byte) {
		c := &client{t: t, nc: dialRaw(t, addr), v: wire.V5}
		defer c.nc.Close()
		opts := map[string]string{}
		if lz4 {
			opts["COMPRESSION"] = "lz4"
		}
		c.startup(opts)
		c.raw(in)
		c.nc.(*net.TCPConn).CloseWrite()
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			fr, err := wire.ReadFrame(c.in, 1<<24)
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatal("the server neither answered nor closed")
				}
				if errors.Is(err, wire.ErrCorruptSegment) {
					t.Fatalf("the server sent a corrupt segment: %v", err)
				}
				break // closed
			}
			if !fr.Response || fr.Version != wire.V5 {
				t.Fatalf("answer %+v", fr.Header)
			}
			_, body, err := wire.SplitBody(fr.Header, fr.Body)
			if err != nil {
				t.Fatalf("answer envelope: %v", err)
			}
			if _, err := wire.DecodeResponse(fr.Opcode, fr.Version, body); err != nil {
				t.Fatalf("answer %v does not decode: %v", fr.Opcode, err)
			}
		}
	})
}
