package manifest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sedimentdb/sediment/internal/vfs"
	"github.com/sedimentdb/sediment/objectstore"
)

// A test binary started with childEnv set runs one contention worker
// against the NATS server and object store named by the other variables,
// instead of the tests: that is how several processes change one manifest.
const (
	childEnv      = "SEDIMENT_MANIFEST_CHILD" // worker name
	childURLEnv   = "SEDIMENT_MANIFEST_URL"
	childStoreEnv = "SEDIMENT_MANIFEST_STORE"
	childTableEnv = "SEDIMENT_MANIFEST_TABLE"
	childNEnv     = "SEDIMENT_MANIFEST_N"
)

func runChild() int {
	if err := child(); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

func child() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(os.Getenv(childURLEnv))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	store, err := objectstore.NewFile(vfs.Default, os.Getenv(childStoreEnv), prometheus.NewRegistry())
	if err != nil {
		return err
	}
	m, err := Open(ctx, js, store, "contend", Options{})
	if err != nil {
		return err
	}
	table, err := uuid.Parse(os.Getenv(childTableEnv))
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(os.Getenv(childNEnv))
	if err != nil {
		return err
	}
	return contend(ctx, m, os.Getenv(childEnv), table, n)
}

// contend makes n DDL changes and n SSTable commits, each of which races
// with the other workers': a table of its own, a column on the shared table
// "shared", and a flushed SSTable of the shared table ID.
func contend(ctx context.Context, m *Manifest, worker string, table uuid.UUID, n int) error {
	for i := range n {
		if _, err := m.CreateTable(ctx, usersSpec("ks", fmt.Sprintf("t_%s_%d", worker, i))); err != nil {
			return err
		}
		err := m.AlterTable(ctx, "ks", "shared", func(t *Table) error {
			return t.AddColumn(fmt.Sprintf("c_%s_%d", worker, i), "int", false)
		})
		if err != nil {
			return err
		}
		s := sst(fmt.Sprintf("sst/%s/%d", worker, i), 0, 1)
		if _, err := m.CommitSSTables(ctx, Commit{Table: table, Range: testRange, Add: []SSTable{s}}); err != nil {
			return err
		}
	}
	return nil
}
