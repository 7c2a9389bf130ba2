package cqltest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sedimentdb/sediment/ingest"
	"github.com/sedimentdb/sediment/internal/benchfig"
	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// slowStore holds every upload back, so that flushes lag the writes and
// the ingest node runs out of memtable memory.
type slowStore struct {
	objectstore.Store
	delay time.Duration
}

func (s slowStore) NewWriter(ctx context.Context, key string) (objectstore.Writer, error) {
	time.Sleep(s.delay)
	return s.Store.NewWriter(ctx, key)
}

// copyResult is what copy_load.py prints.
type copyResult struct {
	Rows     int            `json:"rows"`
	Failed   int            `json:"failed"`
	Errors   map[string]int `json:"errors"`
	Retries  int            `json:"retries"`
	Seconds  float64        `json:"seconds"`
	Failures []any          `json:"first_failures"`
}

// copyLoads runs one copy_load.py per table at once and checks that every
// row of each is there.
func copyLoads(t testing.TB, srv *Server, rows int, tables ...string) []copyResult {
	if out, err := exec.Command(python, "-c", "import cassandra").CombinedOutput(); err != nil {
		t.Fatalf("the Python driver is missing (make tools installs it: apt-get install -y python3-cassandra): %v\n%s", err, out)
	}
	s := srv.Session(t, "py")
	for _, tbl := range tables {
		Exec(t, s, fmt.Sprintf("CREATE TABLE %s (id int PRIMARY KEY, v text)", tbl))
	}
	host, port, _ := net.SplitHostPort(srv.Addr)
	results := make([]copyResult, len(tables))
	var wg sync.WaitGroup
	for i, tbl := range tables {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, python, filepath.Join("python", "copy_load.py"),
				host, port, "py", tbl, strconv.Itoa(rows), "4", "128").CombinedOutput()
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &results[i]); err != nil || jerr != nil {
				t.Errorf("copy_load.py %s: %v %v\n%s", tbl, err, jerr, out)
			}
		})
	}
	wg.Wait()
	for i, tbl := range tables {
		var n int
		if err := s.Query("SELECT count(*) FROM " + tbl).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != rows || results[i].Failed != 0 {
			t.Errorf("table %s: %d rows of %d, load %+v", tbl, n, rows, results[i])
		}
	}
	return results
}

// overloadedNode is an ingest node with little memtable memory and a slow
// bucket: loads push it past its limits.
func overloadedNode(t testing.TB) *Server {
	store, err := objectstore.NewFile(vfs.Default, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return Start(t, Options{
		Shards: 2, MemtableSize: 64 << 10, Store: slowStore{store, 300 * time.Millisecond},
		Ingest: func(c *ingest.Config) {
			c.MemoryLimit = 2 * c.MemtableSize
			c.WriteTimeout = 20 * time.Millisecond
		},
	})
}

// Two COPY-like loads at once over the Python driver, past the ingest
// node's memory: writes it cannot take are answered Overloaded, the
// loaders retry them, and both finish with every row.
func TestPythonCopyUnderOverload(t *testing.T) {
	srv := overloadedNode(t)
	res := copyLoads(t, srv, 10000, "a", "b")
	overloaded := 0
	for _, r := range res {
		for kind, n := range r.Errors {
			if !strings.Contains(kind, "Overloaded") {
				t.Errorf("a load saw %d errors %s, want only Overloaded", n, kind)
			}
			overloaded += n
		}
	}
	if overloaded == 0 {
		t.Errorf("no write was answered Overloaded: the test did not reach the node's limits (%+v)", res)
	}
	t.Logf("loads: %+v", res)
}

// BenchmarkPythonCopy1M is the COPY FROM of 1M rows over the
// Python driver's CQL path (SEDIMENT_COPY_ROWS changes the count), as two
// loaders at once into a node with the test server's limits; it fails if a
// row is lost. (TestPythonCopyUnderOverload drives a node past its limits.)
// Under -short it loads 20k rows.
func BenchmarkPythonCopy1M(b *testing.B) {
	rows := 1_000_000
	if testing.Short() {
		rows = 20_000 // make test's one pass of every benchmark
	}
	if n, err := strconv.Atoi(os.Getenv("SEDIMENT_COPY_ROWS")); err == nil && n > 0 {
		rows = n
	}
	for b.Loop() {
		srv := Start(b, Options{})
		res := copyLoads(b, srv, rows/2, "a", "b")
		secs := max(res[0].Seconds, res[1].Seconds)
		benchfig.Report("copy.python.rows_s", float64(rows)/secs, "rows/s")
		benchfig.Report("copy.python.lost_rows", float64(res[0].Failed+res[1].Failed), "rows")
	}
}
