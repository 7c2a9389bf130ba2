package transport

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/benchfig"
)

// benchClients is the number of goroutines issuing statements on every
// side of the connection comparison.
const benchClients = 64

// runStatements runs b.N prepared statements through s from benchClients
// goroutines.
func runStatements(b *testing.B, s *gocql.Session) {
	b.ReportAllocs()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range benchClients {
		wg.Go(func() {
			var x int
			for next.Add(1) <= int64(b.N) {
				if err := s.Query("SELECT ?", 42).Scan(&x); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "statements/s")
}

// BenchmarkConnections compares one gocql connection with eight, with
// the same 64 callers, against a handler that does nothing: the cost of
// the protocol path, and whether one connection is a bottleneck.
func BenchmarkConnections(b *testing.B) {
	s, err := New(testConfig(), newTestHandler(), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := s.Listen()
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(ln)
	b.Cleanup(func() { s.Close() })
	session := func(conns int) *gocql.Session {
		sess, err := gocqlSession(b, ln.Addr().String(), func(c *gocql.ClusterConfig) { c.NumConns = conns })
		if err != nil {
			b.Fatal(err)
		}
		return sess
	}
	one, eight := session(1), session(8)
	var best benchfig.Best
	for round := range benchfig.Rounds {
		best.Observe(
			benchfig.Measure(b, fmt.Sprintf("conns=1/round=%d", round), func(b *testing.B) { runStatements(b, one) }),
			benchfig.Measure(b, fmt.Sprintf("conns=8/round=%d", round), func(b *testing.B) { runStatements(b, eight) }),
		)
	}
	benchfig.Report("frontend.single_conn.vs_many", benchfig.Speedup(best[0], best[1]), "x")
	if best[0] > 0 {
		benchfig.Report("frontend.statements_s", 1/best[0].Seconds(), "statements/s")
	}
}

// BenchmarkPipelined measures the server alone: one connection carries
// window statements at a time, written and read in bulk by a client that
// does no decoding beyond frame headers.
func BenchmarkPipelined(b *testing.B) {
	for _, window := range []int{1, 32, 256} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) {
			_, addr := startServer(b, testConfig(), newTestHandler(), nil)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			c := &client{t: b, nc: nc, v: wire.V4}
			c.startup(nil)
			var batch []byte
			for i := range window {
				if batch, err = wire.AppendFrame(batch, wire.Header{Version: wire.V4, Stream: int16(i)}, nil,
					query("ECHO", []byte{0, 0, 0, 1}), nil); err != nil {
					b.Fatal(err)
				}
			}
			br := bufio.NewReaderSize(nc, 64<<10)
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += window {
				if _, err := nc.Write(batch); err != nil {
					b.Fatal(err)
				}
				for range window {
					if _, err := wire.ReadFrame(br, 1<<20); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "statements/s")
		})
	}
}
