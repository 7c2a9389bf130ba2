package manifest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"github.com/google/uuid"
)

// setupContention creates the keyspace and the shared table the workers race on.
func setupContention(t *testing.T, m *Manifest) uuid.UUID {
	t.Helper()
	ctx := ctxT(t)
	if err := m.CreateKeyspace(ctx, "ks", simple, true); err != nil {
		t.Fatal(err)
	}
	initRanges(t, m)
	if _, err := m.CreateTable(ctx, TableSpec{
		Keyspace: "ks", Name: "shared",
		Columns:      []ColumnSpec{{Name: "k", Type: "int"}},
		PartitionKey: []string{"k"},
	}); err != nil {
		t.Fatal(err)
	}
	return uuid.New()
}

// checkContention verifies that no worker's change was lost and that the
// archive's newest copies equal the live values.
func checkContention(t *testing.T, e *env, m *Manifest, table uuid.UUID, workers []string, n int) {
	t.Helper()
	ctx := ctxT(t)
	s, err := m.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ks := s.Keyspaces["ks"]
	shared := ks.Tables["shared"]
	if want := 1 + len(workers)*n; len(shared.Columns) != want || int(shared.NextColumnID) != want {
		t.Fatalf("shared table has %d columns, next ID %d; want %d", len(shared.Columns), shared.NextColumnID, want)
	}
	ids := map[uint32]bool{}
	for _, c := range shared.Columns {
		if ids[c.ID] {
			t.Fatalf("column ID %d handed out twice", c.ID)
		}
		ids[c.ID] = true
	}
	ssts, err := m.SSTables(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	if len(ssts) != len(workers)*n {
		t.Fatalf("%d sstables, want %d", len(ssts), len(workers)*n)
	}
	have := map[string]bool{}
	for _, s := range ssts {
		have[s.Key] = true
	}
	for _, w := range workers {
		for i := range n {
			if ks.Tables[fmt.Sprintf("t_%s_%d", w, i)] == nil {
				t.Fatalf("table of %s/%d lost", w, i)
			}
			if _, ok := shared.Column(fmt.Sprintf("c_%s_%d", w, i)); !ok {
				t.Fatalf("column of %s/%d lost", w, i)
			}
			if !have[fmt.Sprintf("sst/%s/%d", w, i)] {
				t.Fatalf("sstable of %s/%d lost", w, i)
			}
		}
	}
	for _, key := range []string{keyspaceKey("ks"), sstablesKey(table, testRange)} {
		b := m.schema
		if key != keyspaceKey("ks") {
			b = m.sstables
		}
		ent, err := b.kv.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		env, err := decodeEnvelope(ent.Value())
		if err != nil {
			t.Fatal(err)
		}
		// Every version from the first to the newest is archived.
		for v := uint64(1); v <= env.Version; v++ {
			got, err := readObject(ctx, e.store, archiveKey(b.name, key, v))
			if err != nil {
				t.Fatalf("version %d of %s: %v", v, key, err)
			}
			if v == env.Version && !bytes.Equal(got, ent.Value()) {
				t.Fatalf("newest archived %s differs from the live value", key)
			}
		}
	}
}

func TestConcurrentGoroutines(t *testing.T) {
	e := newEnv(t)
	table := setupContention(t, e.open("contend"))
	workers := []string{"g0", "g1", "g2", "g3"}
	n := 8
	if testing.Short() {
		n = 3
	}
	var g group
	for _, w := range workers {
		m := e.open("contend") // a connection of its own
		g.Go(func() error { return contend(context.Background(), m, w, table, n) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	checkContention(t, e, e.open("contend"), table, workers, n)
}

func TestConcurrentProcesses(t *testing.T) {
	e := newEnv(t)
	table := setupContention(t, e.open("contend"))
	workers := []string{"p0", "p1", "p2"}
	n := 6
	if testing.Short() {
		n = 3
	}
	var g group
	for _, w := range workers {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			childEnv+"="+w, childURLEnv+"="+e.srv.URL(), childStoreEnv+"="+e.storeDir,
			childTableEnv+"="+table.String(), childNEnv+"="+strconv.Itoa(n))
		g.Go(func() error {
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("worker %s: %w\n%s", w, err, out)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	checkContention(t, e, e.open("contend"), table, workers, n)
}

// group runs functions and keeps their first error.
type group struct {
	wg   sync.WaitGroup
	once sync.Once
	err  error
}

func (g *group) Go(f func() error) {
	g.wg.Go(func() {
		if err := f(); err != nil {
			g.once.Do(func() { g.err = err })
		}
	})
}

func (g *group) Wait() error {
	g.wg.Wait()
	return g.err
}

// TestLoserRerunsOnFreshValue makes a concurrent change inside the first run
// of a mutation, so that its compare-and-set must lose: the mutation runs
// again on the value that won, and a budget of one attempt gives ErrConflict.
func TestLoserRerunsOnFreshValue(t *testing.T) {
	e := newEnv(t)
	m, other := e.open("c1"), e.open("c1")
	ctx := ctxT(t)
	if err := m.CreateKeyspace(ctx, "ks", simple, true); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateTable(ctx, TableSpec{Keyspace: "ks", Name: "t", Columns: []ColumnSpec{{Name: "k", Type: "int"}}, PartitionKey: []string{"k"}}); err != nil {
		t.Fatal(err)
	}
	var seen []int
	err := m.AlterTable(ctx, "ks", "t", func(tb *Table) error {
		seen = append(seen, len(tb.Columns))
		if len(seen) == 1 {
			if err := other.AlterTable(ctx, "ks", "t", func(tb *Table) error { return tb.AddColumn("theirs", "int", false) }); err != nil {
				return err
			}
		}
		return tb.AddColumn("mine", "int", false)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Fatalf("mutation saw %v columns per run, want [1 2]", seen)
	}
	s, _ := m.Schema(ctx)
	tb := s.Keyspaces["ks"].Tables["t"]
	theirs, _ := tb.Column("theirs")
	mine, _ := tb.Column("mine")
	if theirs.ID != 2 || mine.ID != 3 {
		t.Fatalf("column IDs theirs=%d mine=%d, want 2 and 3", theirs.ID, mine.ID)
	}

	once, err := Open(ctx, e.connect(), e.store, "c1", Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	err = once.AlterTable(ctx, "ks", "t", func(tb *Table) error {
		if err := other.AlterTable(ctx, "ks", "t", func(tb *Table) error { tb.Options.Comment += "x"; return nil }); err != nil {
			return err
		}
		return nil
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("one attempt against a concurrent writer: %v, want ErrConflict", err)
	}
}
