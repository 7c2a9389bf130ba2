package bulk_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/bulk"
	"github.com/sedimentdb/sediment/internal/cqltest"
	"github.com/sedimentdb/sediment/internal/testserver"
	"github.com/sedimentdb/sediment/manifest"
)

// benchMB is the size of the benchmark's CSV: the issue asks for 1 GiB,
// more than a shared 2-core test machine loads in a benchmark's budget;
// SEDIMENT_LOAD_BENCH_MB sets it; -short makes it 1 MiB.
func benchMB() int {
	if n, err := strconv.Atoi(os.Getenv("SEDIMENT_LOAD_BENCH_MB")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return 1 // make test's one pass of every benchmark
	}
	return 16
}

// benchCSV writes a CSV of about mb MiB of rows (id bigint, c int, name
// text, n bigint, at timestamp) and returns its path and row count.
func benchCSV(b *testing.B, mb int) (string, int) {
	p := filepath.Join(b.TempDir(), "bench.csv")
	var sb strings.Builder
	sb.WriteString("id,c,name,n,at\n")
	rows := 0
	for sb.Len() < mb<<20 {
		fmt.Fprintf(&sb, "%d,%d,name of row %d with some text,%d,2024-01-02 03:04:05Z\n", rows/4, rows%4, rows, rows*7)
		rows++
	}
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return p, rows
}

// BenchmarkLoadMinIO measures `sediment load` into MinIO against the
// bucket's own streaming PUT of as many bytes, against the same rows
// written over CQL with many connections, and two loads at once against
// one, in one run on the same data.
func BenchmarkLoadMinIO(b *testing.B) {
	ms := testserver.MinIO(b)
	store := minioStoreB(b, ms)
	srv := cqltest.Start(b, cqltest.Options{Store: store, Ranges: 16, MemtableSize: 16 << 20})
	sess := srv.Session(b, "ks")
	for _, t := range []string{"t1", "t2", "t3", "cql"} {
		cqltest.Exec(b, sess, fmt.Sprintf("CREATE TABLE %s (id bigint, c int, name text, n bigint, at timestamp, PRIMARY KEY (id, c))", t))
	}
	if err := srv.View.WaitFor(b.Context(), func(v *manifest.View) bool { return v.Table("ks", "cql") != nil }); err != nil {
		b.Fatal(err)
	}
	mb := benchMB()
	path, rows := benchCSV(b, mb)
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	size := info.Size()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	inputs, err := bulk.Inputs(b.Context(), nil, []string{path})
	if err != nil {
		b.Fatal(err)
	}
	deps := bulk.Deps{Manifest: srv.Manifest, View: srv.View, Store: store, FS: vfsDefault}
	load := func(b *testing.B, table string) {
		st, err := bulk.Load(b.Context(), deps, bulk.Options{Keyspace: "ks", Table: table, Header: true, Workers: 2}, inputs)
		if err != nil || st.Rows != int64(rows) {
			b.Fatalf("load: %+v, %v", st, err)
		}
	}
	one := func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			load(b, "t1")
		}
	}
	two := func(b *testing.B) {
		b.SetBytes(2 * size)
		for b.Loop() {
			var wg sync.WaitGroup
			for _, t := range []string{"t2", "t3"} {
				wg.Go(func() { load(b, t) })
			}
			wg.Wait()
		}
	}
	put := func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			w, err := store.NewWriter(b.Context(), "bench/put")
			if err != nil {
				b.Fatal(err)
			}
			for p := data; len(p) > 0; {
				n := min(len(p), 1<<20)
				if _, err := w.Write(p[:n]); err != nil {
					b.Fatal(err)
				}
				p = p[n:]
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	cql := func(b *testing.B) {
		c := srv.Cluster()
		c.NumConns = 4
		c.Keyspace = "ks"
		s, err := c.CreateSession()
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		const writers = 32
		b.SetBytes(size)
		for b.Loop() {
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := w; i < rows; i += writers {
						err := s.Query(`INSERT INTO cql (id, c, name, n, at) VALUES (?, ?, ?, ?, ?)`,
							i/4, i%4, fmt.Sprintf("name of row %d with some text", i), i*7, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)).
							Consistency(gocql.One).Exec()
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		}
	}
	var best benchfig.Best
	rounds := 2
	if testing.Short() {
		rounds = 1
	}
	for round := range rounds {
		best.Observe(
			benchfig.Measure(b, fmt.Sprintf("put/round=%d", round), put),
			benchfig.Measure(b, fmt.Sprintf("load/round=%d", round), one),
			benchfig.Measure(b, fmt.Sprintf("two-loads/round=%d", round), two),
		)
	}
	cqlTime := benchfig.Measure(b, "cql", cql)
	putTime, loadTime, twoTime := best[0], best[1], best[2]
	if loadTime <= 0 {
		return
	}
	benchfig.Report("load.input_mb", float64(size)/1e6, "MB")
	benchfig.Report("load.mb_s", float64(size)/1e6/loadTime.Seconds(), "MB/s")
	benchfig.Report("load.rows_s", float64(rows)/loadTime.Seconds(), "rows/s")
	benchfig.Report("load.vs_bucket_put", benchfig.Speedup(loadTime, putTime), "x")
	benchfig.Report("load.vs_cql_path", benchfig.Speedup(loadTime, cqlTime), "x")
	if twoTime > 0 {
		benchfig.Report("load.two_loaders.slowdown", float64(twoTime)/float64(loadTime), "x")
	}
}
