package loadgen

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sedimentdb/sediment/internal/commitlog"
	"github.com/sedimentdb/sediment/internal/token"
)

// TestDurableCeiling runs the mixed workload against a null server that
// logs its writes, then replays the logs: every write, and no read, is in
// them, in the log of its partition's token, and the logs synced in groups.
func TestDurableCeiling(t *testing.T) {
	dir := t.TempDir()
	d, stop, err := openDurable(NewNullHandler("sediment_bench", "bench", 64, netip.AddrFrom4([4]byte{127, 0, 0, 1})), dir)
	if err != nil {
		t.Fatal(err)
	}
	n := len(d.logs)
	if n != runtime.GOMAXPROCS(0) {
		t.Fatalf("%d logs for %d cores", n, runtime.GOMAXPROCS(0))
	}
	srv, err := StartNullServer(d)
	if err != nil {
		t.Fatal(err)
	}
	c := testConfig(Mixed)
	c.Ceiling, c.Hosts = false, []string{srv.Addr()}
	rep := run(t, c)
	srv.Close()
	if rep.Errors != 0 {
		t.Fatalf("%d errors: %s", rep.Errors, rep.FirstError)
	}
	var writes int64
	for _, o := range rep.ByOp {
		if o.Op == "write" {
			writes = o.Ops
		}
	}
	var syncs uint64
	for _, g := range d.logs {
		syncs += g.log.Stats().Syncs
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Each write logged its partition key, clustering key and value.
	var logged int64
	used := 0
	for i := range n {
		l, err := commitlog.Open(commitlog.Options{Dir: filepath.Join(dir, fmt.Sprint(i)), Shard: uint32(i)})
		if err != nil {
			t.Fatal(err)
		}
		var values [][]byte
		err = l.Replay(func(_ commitlog.Position, rec []byte) error {
			for len(rec) > 0 {
				size, k := binary.Uvarint(rec)
				if k <= 0 || uint64(len(rec)-k) < size {
					return fmt.Errorf("bad value at %x", rec)
				}
				values = append(values, rec[k:k+int(size)])
				rec = rec[k+int(size):]
			}
			return nil
		})
		if cerr := l.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(values)%3 != 0 {
			t.Fatalf("log %d holds %d values, not writes of 3", i, len(values))
		}
		for v := 0; v < len(values); v += 3 {
			if s := token.Shard(token.Murmur3(values[v]), n); s != i {
				t.Fatalf("partition %x logged in log %d, belongs to %d", values[v], i, s)
			}
		}
		logged += int64(len(values) / 3)
		if len(values) > 0 {
			used++
		}
	}
	if logged != writes || syncs == 0 || syncs > uint64(writes) {
		t.Fatalf("%d writes logged in %d syncs; the run wrote %d", logged, syncs, writes)
	}
	if n > 1 && used < 2 {
		t.Fatalf("the writes went to %d of %d logs", used, n)
	}
}

// TestRunDurableCeiling runs the durable ceiling through Run, which removes
// the logs it wrote.
func TestRunDurableCeiling(t *testing.T) {
	c := testConfig(Counter)
	c.CeilingCommitlog = t.TempDir()
	if rep := run(t, c); rep.Errors != 0 || !rep.DurableCeiling {
		t.Fatalf("%d errors: %s", rep.Errors, rep.FirstError)
	}
	if left, err := os.ReadDir(c.CeilingCommitlog); err != nil || len(left) != 0 {
		t.Fatalf("left behind: %v, %v", left, err)
	}
}
