package cqltest

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/apache/cassandra-gocql-driver/v2/lz4"
)

// v2Session connects gocql v2 to srv without a keyspace, in protocol
// version proto (0: negotiated), with lz4 when asked.
func v2Session(t *testing.T, srv *Server, proto int, compress bool) *gocql.Session {
	t.Helper()
	host, port, _ := net.SplitHostPort(srv.Addr)
	c := gocql.NewCluster(host)
	c.Port, _ = strconv.Atoi(port)
	c.Consistency = gocql.One
	c.Timeout = 20 * time.Second
	c.ConnectTimeout = 10 * time.Second
	c.NumConns = 1
	c.ProtoVersion = proto
	if compress {
		c.Compressor = lz4.LZ4Compressor{}
	}
	s, err := c.CreateSession()
	if err != nil {
		t.Fatalf("connecting gocql v2 (protocol %d): %v", proto, err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestGocqlV2 runs gocql v2 at protocol v5, asked for and negotiated,
// with and without lz4: keyspace per query (QUERY, PREPARE, BATCH),
// prepared statements, paging, batches, now_in_seconds, messages larger
// than a segment both ways, and result metadata that changes under a
// prepared statement.
func TestGocqlV2(t *testing.T) {
	srv := Start(t, Options{})
	srv.Session(t, "ks").Close() // gocql v1 creates the keyspace, at v4
	if srv.Startups(t, "v4") == 0 {
		t.Fatal("gocql v1 did not connect at v4")
	}
	for _, tc := range []struct {
		name  string
		proto int
		lz4   bool
	}{
		{"v5", 5, false},
		{"negotiated", 0, false},
		{"v5 lz4", 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.Startups(t, "v5")
			s := v2Session(t, srv, tc.proto, tc.lz4)
			if srv.Startups(t, "v5") == before {
				t.Fatal("gocql v2 did not connect at v5")
			}
			table := "v2_" + strings.ReplaceAll(tc.name, " ", "_")

			// Without a keyspace the statement has none; with the v5
			// flag it runs in the one it names.
			create := "CREATE TABLE IF NOT EXISTS " + table + " (p int, c int, v text, PRIMARY KEY (p, c))"
			if err := s.Query(create).Exec(); err == nil || !strings.Contains(err.Error(), "No keyspace has been specified") {
				t.Fatalf("CREATE TABLE without a keyspace: %v", err)
			}
			if err := s.Query(create).SetKeyspace("ks").Exec(); err != nil {
				t.Fatalf("CREATE TABLE in ks: %v", err)
			}

			// Prepared statements (gocql prepares statements with
			// values), in the query's keyspace.
			insert := "INSERT INTO " + table + " (p, c, v) VALUES (?, ?, ?)"
			for i := range 120 {
				if err := s.Query(insert, 0, i, "row "+strconv.Itoa(i)).SetKeyspace("ks").Exec(); err != nil {
					t.Fatalf("INSERT %d: %v", i, err)
				}
			}
			// A batch in the batch's keyspace.
			b := s.Batch(gocql.LoggedBatch).SetKeyspace("ks")
			for i := 120; i < 130; i++ {
				b.Query(insert, 0, i, "row "+strconv.Itoa(i))
			}
			if err := b.Exec(); err != nil {
				t.Fatalf("BATCH: %v", err)
			}

			// Paging: 130 rows in pages of 25, prepared and not.
			for _, q := range []*gocql.Query{
				s.Query("SELECT c, v FROM "+table+" WHERE p = ?", 0),
				s.Query("SELECT c, v FROM " + table + " WHERE p = 0"),
			} {
				iter := q.SetKeyspace("ks").PageSize(25).Iter()
				var c, n, pages int
				var v string
				for iter.Scan(&c, &v) {
					if c != n || v != "row "+strconv.Itoa(n) {
						t.Fatalf("row %d: %d %q", n, c, v)
					}
					n++
					if iter.WillSwitchPage() {
						pages++
					}
				}
				if err := iter.Close(); err != nil || n != 130 {
					t.Fatalf("paging: %d rows, %v", n, err)
				}
				if pages < 5 {
					t.Errorf("130 rows in %d page switches, want at least 5", pages)
				}
			}

			// A request and an answer larger than a segment (128 KiB):
			// both split over segments that are not self-contained.
			big := strings.Repeat("sediment v5 segments ", 15000) // 315 KB
			if err := s.Query(insert, 1, 0, big).SetKeyspace("ks").Exec(); err != nil {
				t.Fatalf("large INSERT: %v", err)
			}
			for i := 1; i < 4; i++ {
				if err := s.Query(insert, 1, i, big[i:]).SetKeyspace("ks").Exec(); err != nil {
					t.Fatalf("large INSERT: %v", err)
				}
			}
			iter := s.Query("SELECT c, v FROM "+table+" WHERE p = ?", 1).SetKeyspace("ks").Iter()
			var c, n int
			var v string
			for iter.Scan(&c, &v) {
				if c != n || v != big[n:] {
					t.Fatalf("large row %d: %d, %d bytes", n, c, len(v))
				}
				n++
			}
			if err := iter.Close(); err != nil || n != 4 {
				t.Fatalf("large rows: %d, %v", n, err)
			}

			// now_in_seconds: the statement's now for TTLs.
			if err := s.Query("INSERT INTO "+table+" (p, c, v) VALUES (?, ?, ?) USING TTL 1000", 2, 0, "ttl").SetKeyspace("ks").Exec(); err != nil {
				t.Fatal(err)
			}
			sel := "SELECT v FROM " + table + " WHERE p = 2"
			if err := s.Query(sel).SetKeyspace("ks").Scan(&v); err != nil || v != "ttl" {
				t.Fatalf("the TTL'd row now: %q %v", v, err)
			}
			later := int(time.Now().Unix()) + 2000
			if err := s.Query(sel).SetKeyspace("ks").WithNowInSeconds(later).Scan(&v); err != gocql.ErrNotFound {
				t.Fatalf("the TTL'd row 2000 s from now: %q %v", v, err)
			}
			var ttl int
			if err := s.Query("SELECT ttl(v) FROM " + table + " WHERE p = 2").SetKeyspace("ks").WithNowInSeconds(later - 1500).Scan(&ttl); err != nil || ttl > 500 || ttl < 400 {
				t.Fatalf("ttl(v) 500 s from now: %d %v", ttl, err)
			}

			// Result metadata that changes under a prepared statement:
			// the driver learns the new columns (METADATA_CHANGED, or
			// preparing again) and reads them.
			star := "SELECT * FROM " + table + " WHERE p = ? AND c = ?"
			row := map[string]any{}
			if err := s.Query(star, 0, 1).SetKeyspace("ks").MapScan(row); err != nil || len(row) != 3 {
				t.Fatalf("SELECT *: %v %v", row, err)
			}
			if err := s.Query("ALTER TABLE " + table + " ADD w int").SetKeyspace("ks").Exec(); err != nil {
				t.Fatal(err)
			}
			if err := s.Query("UPDATE " + table + " SET w = 9 WHERE p = 0 AND c = 1").SetKeyspace("ks").Exec(); err != nil {
				t.Fatal(err)
			}
			row = map[string]any{}
			if err := s.Query(star, 0, 1).SetKeyspace("ks").MapScan(row); err != nil || row["w"] != 9 {
				t.Fatalf("SELECT * after ALTER: %v %v", row, err)
			}
		})
	}
}

// TestGocqlV2Conditional: the [applied] columns of a conditional update
// are not those PREPARE announced; at v5 they come with METADATA_CHANGED.
func TestGocqlV2Conditional(t *testing.T) {
	srv := Start(t, Options{})
	srv.Session(t, "ks").Close()
	s := v2Session(t, srv, 5, false)
	if err := s.Query("CREATE TABLE IF NOT EXISTS cas (k int PRIMARY KEY, v blob)").SetKeyspace("ks").Exec(); err != nil {
		t.Fatal(err)
	}
	ins := "INSERT INTO cas (k, v) VALUES (?, ?) IF NOT EXISTS"
	applied, err := s.Query(ins, 1, []byte{1}).SetKeyspace("ks").MapScanCAS(map[string]any{})
	if err != nil || !applied {
		t.Fatalf("first insert: %v %v", applied, err)
	}
	cur := map[string]any{}
	applied, err = s.Query(ins, 1, []byte{2}).SetKeyspace("ks").MapScanCAS(cur)
	if err != nil || applied || !bytes.Equal(cur["v"].([]byte), []byte{1}) {
		t.Fatalf("second insert: %v %v %v", applied, cur, err)
	}
}

// TestGocqlV2Duration: from v5 duration has its own type ID, which gocql
// v2 reads as a gocql.Duration.
func TestGocqlV2Duration(t *testing.T) {
	srv := Start(t, Options{})
	srv.Session(t, "ks").Close()
	s := v2Session(t, srv, 5, false)
	if err := s.Query("CREATE TABLE IF NOT EXISTS dur (k int PRIMARY KEY, d duration)").SetKeyspace("ks").Exec(); err != nil {
		t.Fatal(err)
	}
	want := gocql.Duration{Months: 14, Days: 3, Nanoseconds: 4*3600e9 + 5e6}
	if err := s.Query("INSERT INTO dur (k, d) VALUES (?, ?)", 1, want).SetKeyspace("ks").Exec(); err != nil {
		t.Fatal(err)
	}
	iter := s.Query("SELECT d FROM dur WHERE k = 1").SetKeyspace("ks").Iter()
	var got gocql.Duration
	if !iter.Scan(&got) || got != want {
		t.Fatalf("duration %+v, want %+v", got, want)
	}
	if typ := iter.Columns()[0].TypeInfo.Type(); typ != gocql.TypeDuration {
		t.Errorf("column type %v, want duration", typ)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	// A literal reads back as the same duration.
	if err := s.Query("INSERT INTO dur (k, d) VALUES (2, 1y2mo3d4h5ms)").SetKeyspace("ks").Exec(); err != nil {
		t.Fatal(err)
	}
	if err := s.Query("SELECT d FROM dur WHERE k = 2").SetKeyspace("ks").Scan(&got); err != nil || got != want {
		t.Fatalf("literal duration %+v %v", got, err)
	}
}
