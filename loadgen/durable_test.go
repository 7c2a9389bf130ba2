package loadgen

import (
	"net/netip"
	"os"
	"runtime"
	"testing"
)

// TestDurableCeiling runs the mixed and counter workloads against a null
// server that logs its writes: every write, and no read, is appended and
// synced, the partitions are spread over the logs of the cores, and closing
// removes what the run wrote.
func TestDurableCeiling(t *testing.T) {
	dir := t.TempDir()
	d, closeLogs, err := openDurable(NewNullHandler("sediment_bench", "bench", 64, netip.AddrFrom4([4]byte{127, 0, 0, 1})), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.logs) != runtime.GOMAXPROCS(0) {
		t.Fatalf("%d logs for %d cores", len(d.logs), runtime.GOMAXPROCS(0))
	}
	srv, err := StartNullServer(d)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var writes int64
	for _, w := range []string{Mixed, Counter} {
		c := testConfig(w)
		c.Ceiling, c.Hosts = false, []string{srv.Addr()}
		rep := run(t, c)
		if rep.Errors != 0 {
			t.Fatalf("%s: %d errors: %s", w, rep.Errors, rep.FirstError)
		}
		for _, o := range rep.ByOp {
			if o.Op != "read" {
				writes += o.Ops
			}
		}
	}
	var appends, syncs uint64
	used := 0
	for _, l := range d.logs {
		st := l.Stats()
		appends += st.Appends
		syncs += st.Syncs
		if st.Appends > 0 {
			used++
		}
	}
	if appends != uint64(writes) || syncs == 0 || syncs > appends {
		t.Fatalf("%d appends in %d syncs for %d writes", appends, syncs, writes)
	}
	if len(d.logs) > 1 && used < 2 {
		t.Fatalf("the writes went to %d of %d logs", used, len(d.logs))
	}
	if err := closeLogs(); err != nil {
		t.Fatal(err)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Fatalf("left behind: %v, %v", left, err)
	}
}

// TestRunDurableCeiling runs the durable ceiling through Run.
func TestRunDurableCeiling(t *testing.T) {
	c := testConfig(Write)
	c.CeilingCommitlog = t.TempDir()
	if rep := run(t, c); rep.Errors != 0 || !rep.Ceiling {
		t.Fatalf("%d errors: %s", rep.Errors, rep.FirstError)
	}
}
