package manifest

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// Keyspace is one keyspace with its tables and user-defined types. It is
// stored as one document, under "ks.<escaped name>" in the schema bucket, so
// that a DDL statement is one compare-and-set however many tables it touches
// (a type in use by a table, for example).
type Keyspace struct {
	Name string `json:"name"`
	// Replication is the CQL replication map, "class" included.
	Replication   map[string]string    `json:"replication"`
	DurableWrites bool                 `json:"durable_writes"`
	Tables        map[string]*Table    `json:"tables,omitempty"`
	Types         map[string]*UserType `json:"types,omitempty"`
	// Version is new with every change of the keyspace; the schema version
	// is derived from all of them.
	Version uuid.UUID `json:"version"`
}

// named sets the Keyspace of the keyspace's tables, once it is decoded.
func (ks *Keyspace) named() {
	for _, t := range ks.Tables {
		t.Keyspace = ks.Name
	}
}

// Table is a table's definition. Cells are named by column ID, so IDs are
// stable across renames and are never reused, even after a drop.
//
// A *Table is the handle code carries for a table: it names the table's
// keyspace, its ID and, through ShortID, the 4-byte ID of memtables and
// commitlogs.
type Table struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
	// Keyspace is the name of the keyspace holding the table. It is not
	// stored: the keyspace document names it (Keyspace.named).
	Keyspace string `json:"-"`
	// Columns in definition order.
	Columns []Column `json:"columns"`
	// PartitionKey and Clustering list column IDs in key order.
	PartitionKey []uint32        `json:"partition_key"`
	Clustering   []ClusteringKey `json:"clustering,omitempty"`
	Dropped      []DroppedColumn `json:"dropped,omitempty"`
	NextColumnID uint32          `json:"next_column_id"`
	Options      TableOptions    `json:"options"`
}

// Column kinds.
const (
	KindPartitionKey = "partition_key"
	KindClustering   = "clustering"
	KindRegular      = "regular"
	KindStatic       = "static"
)

// Column is one column of a table.
type Column struct {
	ID   uint32 `json:"id"`
	Name string `json:"name"`
	// Type is the CQL type in cqltype's canonical form.
	Type string `json:"type"`
	Kind string `json:"kind"`
}

// ClusteringKey is one clustering column and its order.
type ClusteringKey struct {
	ID   uint32 `json:"id"`
	Desc bool   `json:"desc,omitempty"`
}

// DroppedColumn remembers a dropped column so that its cells, still in old
// SSTables, are known to be dead, and so its ID is never handed out again.
type DroppedColumn struct {
	ID   uint32 `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	// DroppedAt is the drop's timestamp in microseconds: cells written
	// before it are ignored.
	DroppedAt int64 `json:"dropped_at"`
}

// TableOptions are the table's WITH options: every option Cassandra 4.0
// stores in system_schema.tables. Sediment acts on default_time_to_live,
// gc_grace_seconds and compaction; the rest are kept and shown so that
// schemas written for Cassandra round-trip. Options added after the first
// manifests are omitempty and pointers or zero-means-default, so an older
// document reads back with Cassandra's defaults (withDefaults).
type TableOptions struct {
	DefaultTTL     int32             `json:"default_time_to_live"`
	GCGraceSeconds int32             `json:"gc_grace_seconds"`
	Compaction     map[string]string `json:"compaction,omitempty"`
	Compression    map[string]string `json:"compression,omitempty"`
	Comment        string            `json:"comment,omitempty"`

	// Caching is {"keys": "ALL"|"NONE", "rows_per_partition": "ALL"|"NONE"|n}.
	Caching             map[string]string `json:"caching,omitempty"`
	BloomFilterFPChance float64           `json:"bloom_filter_fp_chance,omitempty"`
	// CRCCheckChance is a pointer because 0 is a valid chance.
	CRCCheckChance      *float64 `json:"crc_check_chance,omitempty"`
	MinIndexInterval    int32    `json:"min_index_interval,omitempty"`
	MaxIndexInterval    int32    `json:"max_index_interval,omitempty"`
	MemtableFlushPeriod int32    `json:"memtable_flush_period_in_ms,omitempty"`
	// SpeculativeRetry and AdditionalWritePolicy are in Cassandra's
	// normalized text form ("99p", "50ms", "ALWAYS", "MIN(99p,50ms)").
	SpeculativeRetry      string `json:"speculative_retry,omitempty"`
	AdditionalWritePolicy string `json:"additional_write_policy,omitempty"`
	// ReadRepair is "BLOCKING" or "NONE".
	ReadRepair string            `json:"read_repair,omitempty"`
	CDC        bool              `json:"cdc,omitempty"`
	Extensions map[string][]byte `json:"extensions,omitempty"`
}

// Defaults of the options that older manifests lack (Cassandra 4.0's).
const (
	DefaultBloomFilterFPChance   = 0.01
	DefaultCRCCheckChance        = 1.0
	DefaultMinIndexInterval      = 128
	DefaultMaxIndexInterval      = 2048
	DefaultSpeculativeRetry      = "99p"
	DefaultAdditionalWritePolicy = "99p"
	DefaultReadRepair            = "BLOCKING"
)

// DefaultTableOptions returns Cassandra's defaults (4.0 and later): no
// default TTL, ten days of gc_grace_seconds, size-tiered compaction and LZ4
// compression in 16 KiB chunks, key caching. Each call returns fresh maps
// and pointers.
func DefaultTableOptions() TableOptions {
	crc := DefaultCRCCheckChance
	return TableOptions{
		GCGraceSeconds:        864000,
		Compaction:            map[string]string{"class": "SizeTieredCompactionStrategy", "max_threshold": "32", "min_threshold": "4"},
		Compression:           map[string]string{"chunk_length_in_kb": "16", "class": "LZ4Compressor"},
		Caching:               map[string]string{"keys": "ALL", "rows_per_partition": "NONE"},
		BloomFilterFPChance:   DefaultBloomFilterFPChance,
		CRCCheckChance:        &crc,
		MinIndexInterval:      DefaultMinIndexInterval,
		MaxIndexInterval:      DefaultMaxIndexInterval,
		SpeculativeRetry:      DefaultSpeculativeRetry,
		AdditionalWritePolicy: DefaultAdditionalWritePolicy,
		ReadRepair:            DefaultReadRepair,
	}
}

// withDefaults returns o completed with Cassandra's defaults: all of them
// for nil, and each option o lacks (a document written before the option
// was stored) otherwise. Maps and pointers are copied.
func withDefaults(o *TableOptions) TableOptions {
	d := DefaultTableOptions()
	if o == nil {
		return d
	}
	out := *o
	out.Compaction, out.Compression = maps.Clone(o.Compaction), maps.Clone(o.Compression)
	out.Caching, out.Extensions = maps.Clone(o.Caching), maps.Clone(o.Extensions)
	if out.Compaction == nil {
		out.Compaction = d.Compaction
	}
	if out.Compression == nil {
		out.Compression = d.Compression
	}
	if out.Caching == nil {
		out.Caching = d.Caching
	}
	if out.BloomFilterFPChance == 0 {
		out.BloomFilterFPChance = d.BloomFilterFPChance
	}
	if o.CRCCheckChance == nil {
		out.CRCCheckChance = d.CRCCheckChance
	} else {
		f := *o.CRCCheckChance
		out.CRCCheckChance = &f
	}
	if out.MinIndexInterval == 0 {
		out.MinIndexInterval = d.MinIndexInterval
	}
	if out.MaxIndexInterval == 0 {
		out.MaxIndexInterval = d.MaxIndexInterval
	}
	if out.SpeculativeRetry == "" {
		out.SpeculativeRetry = d.SpeculativeRetry
	}
	if out.AdditionalWritePolicy == "" {
		out.AdditionalWritePolicy = d.AdditionalWritePolicy
	}
	if out.ReadRepair == "" {
		out.ReadRepair = d.ReadRepair
	}
	return out
}

// UnmarshalJSON decodes options and fills in the defaults of those the
// document lacks, so a manifest written before an option was stored reads
// back with Cassandra's default rather than a zero value.
func (o *TableOptions) UnmarshalJSON(b []byte) error {
	type plain TableOptions // without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*o = withDefaults((*TableOptions)(&p))
	return nil
}

// UserType is a user-defined type.
type UserType struct {
	Name   string  `json:"name"`
	Fields []Field `json:"fields"`
}

// Field is one field of a user-defined type.
type Field struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Type is u as a CQL type of keyspace ks, its fields' type names resolved
// by resolve (which names the user types they use).
func (u *UserType) Type(ks string, resolve func(name string) (*cqltype.Type, error)) (*cqltype.Type, error) {
	names := make([]string, len(u.Fields))
	types := make([]*cqltype.Type, len(u.Fields))
	for i, f := range u.Fields {
		ft, err := cqltype.Parse(f.Type, resolve)
		if err != nil {
			return nil, err
		}
		names[i], types[i] = f.Name, ft
	}
	return cqltype.UDTOf(ks, u.Name, names, types), nil
}

// Column returns the column named name.
func (t *Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// AddColumn adds a regular or static column with a fresh ID.
func (t *Table) AddColumn(name, typ string, static bool) error {
	if _, ok := t.Column(name); ok {
		return fmt.Errorf("%w: column %q", ErrExists, name)
	}
	if static && len(t.Clustering) == 0 {
		return fmt.Errorf("%w: static column %q in a table without clustering columns", ErrInvalid, name)
	}
	kind := KindRegular
	if static {
		kind = KindStatic
	}
	t.NextColumnID++
	t.Columns = append(t.Columns, Column{ID: t.NextColumnID, Name: name, Type: typ, Kind: kind})
	return nil
}

// DropColumn drops a regular or static column at timestamp at (µs).
func (t *Table) DropColumn(name string, at int64) error {
	i := slices.IndexFunc(t.Columns, func(c Column) bool { return c.Name == name })
	if i < 0 {
		return fmt.Errorf("%w: column %q", ErrNotFound, name)
	}
	c := t.Columns[i]
	if c.Kind != KindRegular && c.Kind != KindStatic {
		return fmt.Errorf("%w: cannot drop primary key column %q", ErrInvalid, name)
	}
	t.Columns = slices.Delete(t.Columns, i, i+1)
	t.Dropped = append(t.Dropped, DroppedColumn{ID: c.ID, Name: c.Name, Type: c.Type, DroppedAt: at})
	return nil
}

// TableSpec describes a table to create; IDs are assigned by CreateTable.
type TableSpec struct {
	Keyspace, Name string
	// Columns, in definition order; Kind says which are key columns.
	Columns []ColumnSpec
	// PartitionKey and Clustering name key columns in key order.
	PartitionKey []string
	Clustering   []ClusteringSpec
	// Options are the WITH options; nil means DefaultTableOptions(). A
	// caller that sets some options starts from DefaultTableOptions() and
	// overrides those given, as CQL does, so that an explicit
	// gc_grace_seconds = 0 stays expressible. Missing compaction and
	// compression maps get the defaults.
	Options *TableOptions
}

// ColumnSpec is one column of a TableSpec.
type ColumnSpec struct {
	Name, Type string
	Static     bool
}

// ClusteringSpec is one clustering column of a TableSpec.
type ClusteringSpec struct {
	Name string
	Desc bool
}

// Schema is the whole catalog at one version, with its tables indexed by
// ID once, for the lookups that the flush, read and compaction paths make
// by ID. Build it with NewSchema; like its keyspaces, it must not be
// modified.
type Schema struct {
	Version   uuid.UUID
	Keyspaces map[string]*Keyspace

	tables  []*Table // by keyspace, then name
	byID    map[uuid.UUID]*Table
	byShort map[uint32][]*Table
}

// NewSchema returns the schema of keyspaces, its version derived from
// theirs (SchemaVersion), and indexes its tables.
func NewSchema(keyspaces map[string]*Keyspace) *Schema {
	if keyspaces == nil {
		keyspaces = map[string]*Keyspace{}
	}
	s := &Schema{Version: SchemaVersion(keyspaces), Keyspaces: keyspaces, byID: map[uuid.UUID]*Table{}, byShort: map[uint32][]*Table{}}
	for _, ks := range keyspaces {
		for _, t := range ks.Tables {
			s.tables = append(s.tables, t)
			s.byID[t.ID] = t
			s.byShort[t.ShortID()] = append(s.byShort[t.ShortID()], t)
		}
	}
	slices.SortFunc(s.tables, func(a, b *Table) int {
		return cmp.Or(strings.Compare(a.Keyspace, b.Keyspace), strings.Compare(a.Name, b.Name))
	})
	return s
}

// Tables returns every table, ordered by keyspace, then name.
func (s *Schema) Tables() []*Table { return s.tables }

// TableByID returns the table with ID id, or nil.
func (s *Schema) TableByID(id uuid.UUID) *Table { return s.byID[id] }

// TablesByShortID returns the tables whose ShortID is short: one at most,
// unless two tables created at once in different keyspaces collided (see
// CreateTable), which the caller decides how to treat.
func (s *Schema) TablesByShortID(short uint32) []*Table { return s.byShort[short] }

// schemaNamespace seeds the schema version's name-based UUID.
var schemaNamespace = uuid.MustParse("4c4e1d2a-6f0b-4bde-9a51-5d1f0b3c7e21")

// SchemaVersion derives the cluster's schema version from the keyspaces'
// versions: every node computes the same UUID from the same catalog, and any
// change to any keyspace changes it.
func SchemaVersion(keyspaces map[string]*Keyspace) uuid.UUID {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(keyspaces)) {
		fmt.Fprintf(&b, "%q=%s\n", name, keyspaces[name].Version)
	}
	return uuid.NewSHA1(schemaNamespace, []byte(b.String()))
}

// Table returns the table ks.name.
func (s *Schema) Table(ks, name string) (*Table, bool) {
	k := s.Keyspaces[ks]
	if k == nil {
		return nil, false
	}
	t := k.Tables[name]
	return t, t != nil
}

func keyspaceKey(name string) string { return "ks." + escapeName(name) }

// Schema reads the current schema.
func (m *Manifest) Schema(ctx context.Context) (*Schema, error) {
	docs, err := list(ctx, m.schema)
	if err != nil {
		return nil, err
	}
	keyspaces := map[string]*Keyspace{}
	for key, raw := range docs {
		ks, err := decoders[kindSchema](key, raw)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", m.schema.name, key, err)
		}
		keyspaces[ks.(*Keyspace).Name] = ks.(*Keyspace)
	}
	return NewSchema(keyspaces), nil
}

// Keyspace reads one keyspace.
func (m *Manifest) Keyspace(ctx context.Context, name string) (*Keyspace, error) {
	ks, err := getJSON[Keyspace](ctx, m.schema, keyspaceKey(name))
	if err == nil && ks == nil {
		err = fmt.Errorf("%w: keyspace %q", ErrNotFound, name)
	}
	return ks, err
}

// updateKeyspace runs fn on a fresh copy of keyspace name, stamps a new
// version and stores it. fn is re-run after every lost race.
func (m *Manifest) updateKeyspace(ctx context.Context, name string, fn func(ks *Keyspace) error) error {
	return mutateJSON(ctx, m, m.schema, keyspaceKey(name), func(ks *Keyspace) (*Keyspace, error) {
		if ks == nil {
			return nil, fmt.Errorf("%w: keyspace %q", ErrNotFound, name)
		}
		if err := fn(ks); err != nil {
			return nil, err
		}
		ks.Version = uuid.New()
		return ks, nil
	})
}

// CreateKeyspace creates a keyspace; ErrExists if it exists.
func (m *Manifest) CreateKeyspace(ctx context.Context, name string, replication map[string]string, durableWrites bool) error {
	if name == "" || replication["class"] == "" {
		return fmt.Errorf("%w: keyspace needs a name and a replication class", ErrInvalid)
	}
	return mutateJSON(ctx, m, m.schema, keyspaceKey(name), func(ks *Keyspace) (*Keyspace, error) {
		if ks != nil {
			return nil, fmt.Errorf("%w: keyspace %q", ErrExists, name)
		}
		return &Keyspace{Name: name, Replication: maps.Clone(replication), DurableWrites: durableWrites, Version: uuid.New()}, nil
	})
}

// AlterKeyspace changes a keyspace's replication and durable_writes.
func (m *Manifest) AlterKeyspace(ctx context.Context, name string, replication map[string]string, durableWrites bool) error {
	if replication["class"] == "" {
		return fmt.Errorf("%w: replication needs a class", ErrInvalid)
	}
	return m.updateKeyspace(ctx, name, func(ks *Keyspace) error {
		ks.Replication, ks.DurableWrites = maps.Clone(replication), durableWrites
		return nil
	})
}

// DropKeyspace drops a keyspace with its tables and types.
func (m *Manifest) DropKeyspace(ctx context.Context, name string) error {
	return mutateJSON(ctx, m, m.schema, keyspaceKey(name), func(ks *Keyspace) (*Keyspace, error) {
		if ks == nil {
			return nil, fmt.Errorf("%w: keyspace %q", ErrNotFound, name)
		}
		return nil, nil
	})
}

// ShortID is the 4-byte form of a table ID that memtables and commitlogs
// know tables by (storage.TableIDOf): its first four bytes, big-endian.
func ShortID(id uuid.UUID) uint32 { return binary.BigEndian.Uint32(id[:4]) }

// ShortID returns the ShortID of the table's ID.
func (t *Table) ShortID() uint32 { return ShortID(t.ID) }

// CreateTable creates a table, assigning its ID and column IDs, and returns
// it as stored. The ID's ShortID differs from every other table's in the
// schema as read before the change; only two tables created at the same
// moment in different keyspaces could still share one (odds about 2⁻³² per
// such pair), which ingest detects and refuses to guess between.
func (m *Manifest) CreateTable(ctx context.Context, spec TableSpec) (*Table, error) {
	var created *Table
	schema, err := m.Schema(ctx)
	if err != nil {
		return nil, err
	}
	taken := map[uint32]bool{}
	for _, t := range schema.Tables() {
		taken[t.ShortID()] = true
	}
	err = m.updateKeyspace(ctx, spec.Keyspace, func(ks *Keyspace) error {
		if ks.Tables[spec.Name] != nil {
			return fmt.Errorf("%w: table %q.%q", ErrExists, spec.Keyspace, spec.Name)
		}
		t, err := newTable(spec, ks)
		if err != nil {
			return err
		}
		for _, o := range ks.Tables {
			taken[o.ShortID()] = true
		}
		t.ID = freshID(taken, t.ID, uuid.New)
		if ks.Tables == nil {
			ks.Tables = map[string]*Table{}
		}
		ks.Tables[spec.Name] = t
		created = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	return created, nil
}

// freshID returns id, or the first ID from gen, whose ShortID is not taken.
func freshID(taken map[uint32]bool, id uuid.UUID, gen func() uuid.UUID) uuid.UUID {
	for taken[ShortID(id)] {
		id = gen()
	}
	return id
}

func newTable(spec TableSpec, ks *Keyspace) (*Table, error) {
	if spec.Name == "" || len(spec.PartitionKey) == 0 {
		return nil, fmt.Errorf("%w: table needs a name and a partition key", ErrInvalid)
	}
	t := &Table{ID: uuid.New(), Name: spec.Name, Keyspace: ks.Name, Options: withDefaults(spec.Options)}
	ids := map[string]uint32{}
	for _, c := range spec.Columns {
		if _, dup := ids[c.Name]; dup || c.Name == "" {
			return nil, fmt.Errorf("%w: column name %q", ErrInvalid, c.Name)
		}
		t.NextColumnID++
		ids[c.Name] = t.NextColumnID
		kind := KindRegular
		if c.Static {
			kind = KindStatic
		}
		t.Columns = append(t.Columns, Column{ID: t.NextColumnID, Name: c.Name, Type: c.Type, Kind: kind})
	}
	setKind := func(name, kind string) (uint32, error) {
		id, ok := ids[name]
		if !ok {
			return 0, fmt.Errorf("%w: key column %q is not defined", ErrInvalid, name)
		}
		c := &t.Columns[id-1]
		if c.Kind != KindRegular {
			return 0, fmt.Errorf("%w: column %q used twice in the primary key or static", ErrInvalid, name)
		}
		c.Kind = kind
		return id, nil
	}
	for _, name := range spec.PartitionKey {
		id, err := setKind(name, KindPartitionKey)
		if err != nil {
			return nil, err
		}
		t.PartitionKey = append(t.PartitionKey, id)
	}
	for _, cs := range spec.Clustering {
		id, err := setKind(cs.Name, KindClustering)
		if err != nil {
			return nil, err
		}
		t.Clustering = append(t.Clustering, ClusteringKey{ID: id, Desc: cs.Desc})
	}
	if err := t.validate(ks); err != nil {
		return nil, err
	}
	return t, nil
}

// validate checks a table against the keyspace's types and normalizes every
// column type to cqltype's canonical form.
func (t *Table) validate(ks *Keyspace) error {
	hasStatic := false
	for i := range t.Columns {
		c := &t.Columns[i]
		typ, err := cqltype.Parse(c.Type, ks.udtResolver())
		if err != nil {
			return fmt.Errorf("%w: column %q: %w", ErrInvalid, c.Name, err)
		}
		c.Type = typ.String()
		hasStatic = hasStatic || c.Kind == KindStatic
		if c.ID == 0 || c.ID > t.NextColumnID {
			return fmt.Errorf("%w: column %q has ID %d past %d", ErrInvalid, c.Name, c.ID, t.NextColumnID)
		}
	}
	ids := map[uint32]string{}
	names := map[string]bool{}
	for _, c := range t.Columns {
		if names[c.Name] {
			return fmt.Errorf("%w: duplicate column %q", ErrInvalid, c.Name)
		}
		ids[c.ID], names[c.Name] = c.Kind, true
	}
	for _, d := range t.Dropped {
		if _, dup := ids[d.ID]; dup {
			return fmt.Errorf("%w: column ID %d is both live and dropped", ErrInvalid, d.ID)
		}
	}
	if len(ids) != len(t.Columns) {
		return fmt.Errorf("%w: duplicate column ID", ErrInvalid)
	}
	for _, id := range t.PartitionKey {
		if ids[id] != KindPartitionKey {
			return fmt.Errorf("%w: partition key column %d missing", ErrInvalid, id)
		}
	}
	for _, ck := range t.Clustering {
		if ids[ck.ID] != KindClustering {
			return fmt.Errorf("%w: clustering column %d missing", ErrInvalid, ck.ID)
		}
	}
	if hasStatic && len(t.Clustering) == 0 {
		return fmt.Errorf("%w: static columns need clustering columns", ErrInvalid)
	}
	if t.Options.DefaultTTL < 0 || t.Options.GCGraceSeconds < 0 {
		return fmt.Errorf("%w: negative default_time_to_live or gc_grace_seconds", ErrInvalid)
	}
	if o := t.Options; o.MinIndexInterval < 1 || o.MaxIndexInterval < o.MinIndexInterval || o.MemtableFlushPeriod < 0 ||
		o.BloomFilterFPChance <= 0 || o.BloomFilterFPChance > 1 || o.CRCCheckChance != nil && (*o.CRCCheckChance < 0 || *o.CRCCheckChance > 1) {
		return fmt.Errorf("%w: table option out of range", ErrInvalid)
	}
	return nil
}

// udtResolver resolves type names against the keyspace's user-defined types.
func (ks *Keyspace) udtResolver() func(string) (*cqltype.Type, error) {
	var resolve func(name string, depth int) (*cqltype.Type, error)
	resolve = func(name string, depth int) (*cqltype.Type, error) {
		if i := strings.IndexByte(name, '.'); i >= 0 {
			if name[:i] != ks.Name {
				return nil, fmt.Errorf("%w: type %q is in another keyspace", ErrInvalid, name)
			}
			name = name[i+1:]
		}
		u := ks.Types[name]
		if u == nil || depth > 32 {
			return nil, fmt.Errorf("%w: type %q", ErrNotFound, name)
		}
		return u.Type(ks.Name, func(n string) (*cqltype.Type, error) { return resolve(n, depth+1) })
	}
	return func(name string) (*cqltype.Type, error) { return resolve(name, 0) }
}

// AlterTable runs fn on a fresh copy of table ks.name and stores the result;
// fn is re-run after every lost race, so it must only change t. The ID, key
// columns and column IDs may not change.
func (m *Manifest) AlterTable(ctx context.Context, ks, name string, fn func(t *Table) error) error {
	return m.updateKeyspace(ctx, ks, func(k *Keyspace) error {
		t := k.Tables[name]
		if t == nil {
			return fmt.Errorf("%w: table %q.%q", ErrNotFound, ks, name)
		}
		before := *t
		before.Columns = slices.Clone(t.Columns)
		before.PartitionKey = slices.Clone(t.PartitionKey)
		before.Clustering = slices.Clone(t.Clustering)
		if err := fn(t); err != nil {
			return err
		}
		if t.ID != before.ID || t.Name != before.Name || !slices.Equal(t.PartitionKey, before.PartitionKey) ||
			!slices.Equal(t.Clustering, before.Clustering) || t.NextColumnID < before.NextColumnID {
			return fmt.Errorf("%w: ALTER may not change a table's ID, name or primary key", ErrInvalid)
		}
		// A column that existed is still there or dropped; a new column
		// has a new ID.
		known := map[uint32]bool{}
		for _, c := range t.Columns {
			known[c.ID] = true
			if c.ID <= before.NextColumnID && !slices.ContainsFunc(before.Columns, func(b Column) bool { return b.ID == c.ID }) {
				return fmt.Errorf("%w: column %q reuses ID %d", ErrInvalid, c.Name, c.ID)
			}
		}
		for _, d := range t.Dropped {
			known[d.ID] = true
		}
		for _, c := range before.Columns {
			if !known[c.ID] {
				return fmt.Errorf("%w: column %q vanished without a drop", ErrInvalid, c.Name)
			}
		}
		return t.validate(k)
	})
}

// DropTable drops a table. Its SSTable list stays until a collector removes
// the objects; the table ID is never reused.
func (m *Manifest) DropTable(ctx context.Context, ks, name string) error {
	return m.updateKeyspace(ctx, ks, func(k *Keyspace) error {
		if k.Tables[name] == nil {
			return fmt.Errorf("%w: table %q.%q", ErrNotFound, ks, name)
		}
		delete(k.Tables, name)
		return nil
	})
}

// CreateType creates a user-defined type in keyspace ks.
func (m *Manifest) CreateType(ctx context.Context, ks string, u UserType) error {
	if u.Name == "" || len(u.Fields) == 0 {
		return fmt.Errorf("%w: type needs a name and fields", ErrInvalid)
	}
	return m.updateKeyspace(ctx, ks, func(k *Keyspace) error {
		if k.Types[u.Name] != nil {
			return fmt.Errorf("%w: type %q.%q", ErrExists, ks, u.Name)
		}
		if k.Types == nil {
			k.Types = map[string]*UserType{}
		}
		nu := &UserType{Name: u.Name, Fields: slices.Clone(u.Fields)}
		k.Types[u.Name] = nu
		if _, err := k.udtResolver()(u.Name); err != nil {
			return fmt.Errorf("%w: type %q: %w", ErrInvalid, u.Name, err)
		}
		return nil
	})
}

// DropType drops a user-defined type that no table or type uses.
func (m *Manifest) DropType(ctx context.Context, ks, name string) error {
	return m.updateKeyspace(ctx, ks, func(k *Keyspace) error {
		if k.Types[name] == nil {
			return fmt.Errorf("%w: type %q.%q", ErrNotFound, ks, name)
		}
		delete(k.Types, name)
		for _, t := range k.Tables {
			if err := t.validate(k); err != nil {
				return fmt.Errorf("%w: type %q is in use by table %q", ErrInvalid, name, t.Name)
			}
		}
		for other := range k.Types {
			if _, err := k.udtResolver()(other); err != nil {
				return fmt.Errorf("%w: type %q is in use by type %q", ErrInvalid, name, other)
			}
		}
		return nil
	})
}

// AlterType runs fn on a fresh copy of type ks.name and stores the result;
// fn is re-run after every lost race, so it must only change u. A type may
// only gain fields at its end and rename fields: non-frozen values address
// their cells by field position and frozen values are read by position, so
// every existing field keeps its position and type, and a value written
// before a field was added reads that field as null. A type in a partition
// key may not gain fields, since that would change its keys' tokens.
func (m *Manifest) AlterType(ctx context.Context, ks, name string, fn func(u *UserType) error) error {
	return m.updateKeyspace(ctx, ks, func(k *Keyspace) error {
		u := k.Types[name]
		if u == nil {
			return fmt.Errorf("%w: type %q.%q", ErrNotFound, ks, name)
		}
		before := slices.Clone(u.Fields)
		if err := fn(u); err != nil {
			return err
		}
		if u.Name != name || len(u.Fields) < len(before) {
			return fmt.Errorf("%w: ALTER TYPE may not rename a type or remove fields", ErrInvalid)
		}
		seen := map[string]bool{}
		for i, f := range u.Fields {
			if f.Name == "" || seen[f.Name] {
				return fmt.Errorf("%w: type %q: field name %q", ErrInvalid, name, f.Name)
			}
			seen[f.Name] = true
			if i < len(before) && f.Type != before[i].Type {
				return fmt.Errorf("%w: type %q: field %q changed type", ErrInvalid, name, f.Name)
			}
		}
		resolve := k.udtResolver()
		for other := range k.Types {
			if _, err := resolve(other); err != nil {
				return fmt.Errorf("%w: type %q: %w", ErrInvalid, other, err)
			}
		}
		for _, t := range k.Tables {
			if err := t.validate(k); err != nil {
				return err
			}
			if len(u.Fields) == len(before) {
				continue
			}
			for _, id := range t.PartitionKey {
				c := t.Columns[slices.IndexFunc(t.Columns, func(c Column) bool { return c.ID == id })]
				typ, err := cqltype.Parse(c.Type, resolve)
				if err != nil {
					return fmt.Errorf("%w: column %q: %w", ErrInvalid, c.Name, err)
				}
				if typeUses(typ, name) {
					return fmt.Errorf("%w: type %q is in the partition key of table %q", ErrInvalid, name, t.Name)
				}
			}
		}
		return nil
	})
}

// typeUses reports whether t is or contains the user type name.
func typeUses(t *cqltype.Type, name string) bool {
	if t.Kind == cqltype.UDT && t.Name == name {
		return true
	}
	return slices.ContainsFunc(t.Elems, func(e *cqltype.Type) bool { return typeUses(e, name) })
}
