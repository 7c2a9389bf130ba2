package main

// `admin snapshot`, `snapshots`, `clearsnapshot` and `restore-snapshot`:
// manifest snapshots (manifest.Snapshot), which pin a table's SSTables past
// the garbage grace period until they are dropped.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/status"
	"github.com/sedimentdb/sediment/internal/storage"
	"github.com/sedimentdb/sediment/manifest"
)

// SnapshotsReport is the result of `admin snapshot`, `snapshots`,
// `clearsnapshot` and `restore-snapshot`: the snapshots each acted on.
type SnapshotsReport struct {
	Snapshots []SnapshotStatus `json:"snapshots"`
}

// SnapshotStatus is one table's snapshot.
type SnapshotStatus struct {
	Name     string    `json:"name"`
	Keyspace string    `json:"keyspace"`
	Table    string    `json:"table"`
	ID       uuid.UUID `json:"id"`
	Created  time.Time `json:"created"`
	SSTables int       `json:"sstables"`
	Bytes    int64     `json:"bytes"`
	// Versions are the versions of the table's range documents the
	// snapshot holds, by range (0: the range held nothing).
	Versions []uint64 `json:"versions"`
}

func snapshotStatus(s *manifest.Snapshot) SnapshotStatus {
	st := SnapshotStatus{Name: s.Name, Keyspace: s.Keyspace, Table: s.TableName, ID: s.Table, Created: s.Created, Versions: []uint64{}}
	for _, r := range s.Ranges {
		st.Versions = append(st.Versions, r.Version)
		for _, sst := range r.SSTables {
			st.SSTables++
			st.Bytes += sst.Size
		}
	}
	return st
}

func (r *SnapshotsReport) text(w io.Writer) error {
	var rows [][]string
	for _, s := range r.Snapshots {
		rows = append(rows, []string{s.Name, s.Keyspace + "." + s.Table, s.Created.UTC().Format(time.RFC3339), strconv.Itoa(s.SSTables), status.HumanBytes(s.Bytes)})
	}
	return table(w, "SNAPSHOT\tTABLE\tCREATED\tSSTABLES\tSIZE", rows)
}

// oneName returns the single positional argument, a snapshot name.
func oneName(args []string, usage string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("want a snapshot name: %s", usage)
	}
	return args[0], nil
}

// adminSnapshot takes snapshot <name> of the chosen tables.
func adminSnapshot(ctx context.Context, a *admin, args []string) (report, error) {
	name, err := oneName(args, "snapshot [-table ks.t] <name>")
	if err != nil {
		return nil, err
	}
	m, s, tables, err := a.chosenTables(ctx)
	if err != nil {
		return nil, err
	}
	rep := &SnapshotsReport{Snapshots: []SnapshotStatus{}}
	for i, t := range tables {
		def := s.TableByID(t.ID)
		snap, err := m.TakeSnapshot(ctx, name, def)
		if errors.Is(err, manifest.ErrExists) {
			return nil, fmt.Errorf("%s.%s already has a snapshot %q: choose another name, or drop it with 'sediment admin clearsnapshot -table %s.%s %s'", t.Keyspace, t.Table, name, t.Keyspace, t.Table, name)
		}
		if err != nil {
			return nil, fmt.Errorf("snapshot of %s.%s: %w", t.Keyspace, t.Table, err)
		}
		rep.Snapshots = append(rep.Snapshots, snapshotStatus(snap))
		if a.progress {
			fmt.Fprintf(a.stderr, "\rsnapshot: %d/%d tables", i+1, len(tables))
		}
	}
	if a.progress {
		fmt.Fprintln(a.stderr)
	}
	return rep, nil
}

// chosenSnapshots opens the manifest and returns the snapshots named name
// (every one for ""), of the -table table if given.
func (a *admin) chosenSnapshots(ctx context.Context, name string) (*manifest.Manifest, []manifest.Snapshot, error) {
	m, err := a.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	snaps, err := m.Snapshots(ctx)
	if err != nil {
		return nil, nil, err
	}
	snaps = slices.DeleteFunc(snaps, func(s manifest.Snapshot) bool {
		return name != "" && s.Name != name || a.cfg.Table != "" && s.Keyspace+"."+s.TableName != a.cfg.Table
	})
	if name != "" && len(snaps) == 0 {
		return nil, nil, fmt.Errorf("no snapshot %q%s ('sediment admin snapshots' lists them)", name, a.tableSuffix())
	}
	return m, snaps, nil
}

func (a *admin) tableSuffix() string {
	if a.cfg.Table == "" {
		return ""
	}
	return " of " + a.cfg.Table
}

// adminSnapshots lists the snapshots.
func adminSnapshots(ctx context.Context, a *admin, args []string) (report, error) {
	if len(args) > 1 {
		return nil, fmt.Errorf("unexpected argument %q", args[1])
	}
	name := ""
	if len(args) == 1 {
		name = args[0]
	}
	_, snaps, err := a.chosenSnapshots(ctx, name)
	if err != nil {
		return nil, err
	}
	rep := &SnapshotsReport{Snapshots: []SnapshotStatus{}}
	for i := range snaps {
		rep.Snapshots = append(rep.Snapshots, snapshotStatus(&snaps[i]))
	}
	return rep, nil
}

// adminClearSnapshot drops snapshot <name>, of every table or of -table.
func adminClearSnapshot(ctx context.Context, a *admin, args []string) (report, error) {
	name, err := oneName(args, "clearsnapshot [-table ks.t] <name>")
	if err != nil {
		return nil, err
	}
	m, snaps, err := a.chosenSnapshots(ctx, name)
	if err != nil {
		return nil, err
	}
	rep := &SnapshotsReport{Snapshots: []SnapshotStatus{}}
	for i := range snaps {
		if err := m.DropSnapshot(ctx, name, snaps[i].Table); err != nil {
			return nil, err
		}
		rep.Snapshots = append(rep.Snapshots, snapshotStatus(&snaps[i]))
	}
	return rep, nil
}

// adminRestoreSnapshot brings the tables of snapshot <name> (or -table)
// back to it: it truncates each table on every range owner, as TRUNCATE
// does, so that no unflushed write lands on top, then makes the snapshot's
// SSTables the live set (manifest.RestoreSnapshot).
func adminRestoreSnapshot(ctx context.Context, a *admin, args []string) (report, error) {
	name, err := oneName(args, "restore-snapshot [-table ks.t] -yes <name>")
	if err != nil {
		return nil, err
	}
	m, snaps, err := a.chosenSnapshots(ctx, name)
	if err != nil {
		return nil, err
	}
	s, err := m.Schema(ctx)
	if err != nil {
		return nil, err
	}
	for _, snap := range snaps {
		if s.TableByID(snap.Table) == nil {
			return nil, fmt.Errorf("table %s.%s of snapshot %q (ID %s) no longer exists: a restore brings back a table's data, not a dropped table", snap.Keyspace, snap.TableName, name, snap.Table)
		}
	}
	if !a.cfg.Yes {
		return nil, fmt.Errorf("restoring %d tables to snapshot %q discards every write made to them since; pass -yes to go ahead", len(snaps), name)
	}
	owners, err := rangeOwners(ctx, m)
	if err != nil {
		return nil, err
	}
	rep := &SnapshotsReport{Snapshots: []SnapshotStatus{}}
	for i := range snaps {
		snap := &snaps[i]
		id := storage.TableIDOf(snap.Table)
		for _, o := range owners {
			c := rpc.Dial(o.Addr, rpc.Options{Conns: 1})
			err := c.Truncate(ctx, id)
			c.Close()
			if err != nil {
				return rep, fmt.Errorf("truncate %s.%s on %s (%s): %w; nothing of this table changed, run again once the node answers", snap.Keyspace, snap.TableName, o.ID, o.Addr, err)
			}
		}
		if err := m.RestoreSnapshot(ctx, snap); err != nil {
			return rep, fmt.Errorf("restore %s.%s: %w; the table is truncated: run again to finish", snap.Keyspace, snap.TableName, err)
		}
		rep.Snapshots = append(rep.Snapshots, snapshotStatus(snap))
		if a.progress {
			fmt.Fprintf(a.stderr, "\rrestore-snapshot: %d/%d tables", i+1, len(snaps))
		}
	}
	if a.progress {
		fmt.Fprintln(a.stderr)
	}
	return rep, nil
}

// rangeOwners returns the members that own a token range, each once; a
// range owned by a node that is not a member fails: its memtable cannot be
// reached.
func rangeOwners(ctx context.Context, m *manifest.Manifest) ([]manifest.Member, error) {
	n, err := m.RangeCount(ctx)
	if errors.Is(err, manifest.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	mems, err := m.Members(ctx)
	if err != nil {
		return nil, err
	}
	var out []manifest.Member
	for r := range n {
		o, err := m.Ownership(ctx, r)
		if errors.Is(err, manifest.ErrNotFound) || o.Owner == "" {
			continue
		}
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(mem manifest.Member) bool { return mem.ID == o.Owner }) {
			continue
		}
		i := slices.IndexFunc(mems, func(mem manifest.Member) bool { return mem.ID == o.Owner })
		if i < 0 {
			return nil, fmt.Errorf("range %d's owner %s is not a member: start it, or let a live node take its ranges over, then run again", r, o.Owner)
		}
		out = append(out, mems[i])
	}
	return out, nil
}
