package exec

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/manifest"
)

// ---- CREATE TABLE -------------------------------------------------------

func (e *Executor) planCreateTable(s *Session, st *ast.CreateTable) (plan, error) {
	// CreateTableStatement.Raw.prepare resolves the keyspace name, then
	// wants a key, before anything looks at the keyspace.
	if _, err := e.keyspaceOf(s, st.Table); err != nil {
		return nil, err
	}
	if len(st.PartitionKey) == 0 {
		return nil, invalidf("No PRIMARY KEY specifed for table '%s' (exactly one required)", tableNameAsWritten(st.Table))
	}
	ksName, err := e.userKeyspaceOf(s, st.Table)
	if err != nil {
		return nil, err
	}
	if st.CompactStorage {
		return nil, invalidf("Compact tables are not allowed in Cassandra starting with 4.0 version.")
	}
	ks := e.view.Keyspace(ksName)
	if ks == nil {
		return nil, invalidf("Keyspace '%s' doesn't exist", ksName)
	}
	sc := SchemaChange{Change: ChangeCreated, Target: TargetTable, Keyspace: ksName, Name: st.Table.Name}
	if st.IfNotExists && ks.Tables[st.Table.Name] != nil {
		// Cassandra looks for the table before it reads the definition.
		return &ddlPlan{keyspace: ksName, change: func(context.Context, *execCtx) (SchemaChange, bool, error) {
			return sc, false, nil
		}}, nil
	}
	spec, err := tableSpec(ks, st)
	if err != nil {
		return nil, err
	}
	// TableMetadata.validate checks the name after the definition, as a
	// ConfigurationException naming the table.
	if msg := badName("Table", st.Table.Name); msg != "" {
		return nil, configf("%s.%s: %s", ksName, st.Table.Name, msg)
	}
	return &ddlPlan{keyspace: ksName, change: func(ctx context.Context, x *execCtx) (SchemaChange, bool, error) {
		_, err := x.e.manifest.CreateTable(ctx, spec)
		switch {
		case errors.Is(err, manifest.ErrExists):
			if st.IfNotExists {
				return sc, false, nil
			}
			return sc, false, alreadyExists(ksName, st.Table.Name)
		case errors.Is(err, manifest.ErrNotFound):
			return sc, false, invalidf("Keyspace '%s' doesn't exist", ksName)
		case err != nil:
			return sc, false, manifestError(err)
		}
		return sc, true, nil
	}}, nil
}

// tableSpec checks a CREATE TABLE against Cassandra's rules and returns what
// the manifest creates.
func tableSpec(ks *manifest.Keyspace, st *ast.CreateTable) (manifest.TableSpec, error) {
	spec := manifest.TableSpec{Keyspace: ks.Name, Name: st.Table.Name}
	types := map[string]*cqltype.Type{}
	static := map[string]bool{}
	resolve := udtResolver(ks)
	counters := 0
	for _, c := range st.Columns {
		if _, dup := types[c.Name]; dup {
			return spec, invalidf("Duplicate column '%s' declaration for table '%s'", c.Name, tableNameAsWritten(st.Table))
		}
		t, err := cqltype.Parse(c.Type, resolve)
		if err != nil {
			return spec, invalidf("%s", typeError(err))
		}
		types[c.Name] = t
		static[c.Name] = c.Static
		if t.Kind == cqltype.Counter {
			counters++
		}
		spec.Columns = append(spec.Columns, manifest.ColumnSpec{Name: c.Name, Type: t.String(), Static: c.Static})
	}
	spec.PartitionKey = slices.Clone(st.PartitionKey)
	// Cassandra 4's CreateTableStatement checks each key column in this
	// order: known, not repeated, frozen, not a counter, no duration, not
	// static.
	inKey := map[string]bool{}
	for _, name := range slices.Concat(st.PartitionKey, st.Clustering) {
		t, ok := types[name]
		if !ok {
			return spec, invalidf("Unknown column '%s' referenced in PRIMARY KEY for table '%s'", name, st.Table.Name)
		}
		if inKey[name] {
			return spec, invalidf("Duplicate column '%s' in PRIMARY KEY clause for table '%s'", name, st.Table.Name)
		}
		inKey[name] = true
		if err := keyType(name, t); err != nil {
			return spec, err
		}
		if static[name] {
			return spec, invalidf("Static column '%s' cannot be part of the PRIMARY KEY", name)
		}
	}
	desc, err := clusteringOrder(st)
	if err != nil {
		return spec, err
	}
	for i, name := range st.Clustering {
		spec.Clustering = append(spec.Clustering, manifest.ClusteringSpec{Name: name, Desc: desc[i]})
	}
	regular := 0
	for _, c := range st.Columns {
		if inKey[c.Name] {
			continue
		}
		regular++
		if c.Static && len(st.Clustering) == 0 {
			return spec, invalidf("Static columns are only useful (and thus allowed) if the table has at least one clustering column")
		}
	}
	if counters > 0 && counters != regular {
		return spec, invalidf("Cannot mix counter and non counter columns in the same table")
	}
	if slices.ContainsFunc(st.Properties, func(p ast.Property) bool { return p.Name == "id" }) {
		// Cassandra creates the table with the given id (to restore a
		// backup's SSTables); Sediment's manifest assigns every id itself.
		return spec, configf("The 'id' option is not supported: Sediment assigns table ids")
	}
	opts := manifest.DefaultTableOptions()
	if err := applyTableProps(&opts, st.Properties, counters > 0); err != nil {
		return spec, err
	}
	spec.Options = &opts
	return spec, nil
}

// typeError words a cqltype.Parse error for the client, capitalized as
// Cassandra's CQL3Type messages are (but for its lower-case frozen<> one).
func typeError(err error) string {
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "cqltype: syntax error: "), "cqltype: ")
	if msg != "" && !strings.HasPrefix(msg, "frozen<>") {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return msg
}

// keyType checks that a primary key column's type can be part of a key,
// with Cassandra 4's messages.
func keyType(name string, t *cqltype.Type) error {
	switch {
	case t.IsCollection() && !t.Frozen:
		return invalidf("Invalid non-frozen collection type %s for PRIMARY KEY column '%s'", t, name)
	case t.Kind == cqltype.UDT && !t.Frozen:
		return invalidf("Invalid non-frozen user-defined type %s for PRIMARY KEY column '%s'", t, name)
	case t.Kind == cqltype.Counter:
		return invalidf("counter type is not supported for PRIMARY KEY column '%s'", name)
	case containsDuration(t):
		return invalidf("duration type is not supported for PRIMARY KEY column '%s'", name)
	}
	return nil
}

func containsDuration(t *cqltype.Type) bool {
	if t.Kind == cqltype.Duration {
		return true
	}
	for _, el := range t.Elems {
		if containsDuration(el) {
			return true
		}
	}
	return false
}

// clusteringOrder checks CLUSTERING ORDER BY as Cassandra 4 does and
// returns whether each clustering column is DESC. The directive may name a
// prefix of the clustering columns, in their order; the others are ASC.
func clusteringOrder(st *ast.CreateTable) ([]bool, error) {
	desc := make([]bool, len(st.Clustering))
	named := map[string]bool{}
	for _, o := range st.ClusteringOrder {
		if named[o.Column] {
			return nil, invalidf("Duplicate column '%s' in CLUSTERING ORDER BY clause for table '%s'", o.Column, tableNameAsWritten(st.Table))
		}
		named[o.Column] = true
	}
	if len(st.ClusteringOrder) > len(st.Clustering) {
		return nil, invalidf("Only clustering columns can be defined in CLUSTERING ORDER directive")
	}
	for i, o := range st.ClusteringOrder {
		c := st.Clustering[i]
		if o.Column != c {
			if named[c] {
				return nil, invalidf("The order of columns in the CLUSTERING ORDER directive must match that of the clustering columns (%s must appear before %s)", c, o.Column)
			}
			return nil, invalidf("Missing CLUSTERING ORDER for column %s", c)
		}
		desc[i] = o.Desc
	}
	return desc, nil
}

// tableNameAsWritten is a table's name as the statement wrote it, which
// Cassandra's parse-time messages show: keyspace-qualified only when the
// statement qualified it.
func tableNameAsWritten(t ast.TableName) string {
	if t.Keyspace == "" {
		return ast.QuoteName(t.Name)
	}
	return t.Keyspace + "." + ast.QuoteName(t.Name)
}

// ---- ALTER TABLE --------------------------------------------------------

func (e *Executor) planAlterTable(s *Session, st *ast.AlterTable) (plan, error) {
	ksName, err := e.userKeyspaceOf(s, st.Table)
	if err != nil {
		return nil, err
	}
	name := st.Table.Name
	sc := SchemaChange{Change: ChangeUpdated, Target: TargetTable, Keyspace: ksName, Name: name}
	if st.Kind == ast.AlterColumnType {
		return nil, invalidf("Altering column types is no longer supported")
	}
	return &ddlPlan{keyspace: ksName, change: func(ctx context.Context, x *execCtx) (SchemaChange, bool, error) {
		ks := x.e.view.Keyspace(ksName)
		if ks == nil {
			return sc, false, invalidf("Keyspace '%s' doesn't exist", ksName)
		}
		if ks.Tables[name] == nil {
			if st.IfExists {
				return sc, false, nil
			}
			return sc, false, invalidf("Table '%s.%s' doesn't exist", ksName, name)
		}
		changed := false
		dropAt := x.timestamp
		if st.DropTimestamp != nil {
			v, _, err := x.eval(cqltype.BigintType, st.DropTimestamp, "timestamp")
			if err != nil {
				return sc, false, err
			}
			if len(v) != 8 {
				return sc, false, invalidf("Invalid null value of timestamp")
			}
			dropAt = int64(uint64(v[0])<<56 | uint64(v[1])<<48 | uint64(v[2])<<40 | uint64(v[3])<<32 | uint64(v[4])<<24 | uint64(v[5])<<16 | uint64(v[6])<<8 | uint64(v[7]))
		}
		err := x.e.manifest.AlterTable(ctx, ksName, name, func(t *manifest.Table) error {
			var err error
			changed, err = alterTable(ks, t, st, dropAt)
			return err
		})
		changed, err = alterOutcome(err, changed, st.IfExists, invalidf("Table '%s.%s' doesn't exist", ksName, name))
		return sc, changed, err
	}}, nil
}

// alterOutcome is what an ALTER answers once the manifest has applied it
// (err its answer, changed whether anything changed): a table or type gone
// in the meantime is no change with IF EXISTS, else the error missing.
func alterOutcome(err error, changed, ifExists bool, missing error) (bool, error) {
	switch {
	case errors.Is(err, manifest.ErrNotFound) && ifExists:
		return false, nil
	case errors.Is(err, manifest.ErrNotFound):
		return false, missing
	case err != nil:
		return false, manifestError(err)
	}
	return changed, nil
}

// alterTable applies an ALTER TABLE to t; it reports whether anything
// changed (IF [NOT] EXISTS on columns may make it a no-op).
func alterTable(ks *manifest.Keyspace, t *manifest.Table, st *ast.AlterTable, dropAt int64) (bool, error) {
	counter := tableHasCounters(t)
	// Cassandra's messages name the table by its TableMetadata: ks.table.
	ref := ast.QuoteName(ks.Name) + "." + ast.QuoteName(t.Name)
	switch st.Kind {
	case ast.AlterAdd:
		changed := false
		for _, c := range st.Add {
			// Cassandra resolves the type before looking for the name.
			typ, err := cqltype.Parse(c.Type, udtResolver(ks))
			if err != nil {
				return false, invalidf("%s", typeError(err))
			}
			if _, ok := t.Column(c.Name); ok {
				if st.AddIfNotExists {
					continue
				}
				return false, invalidf("Column with name '%s' already exists", c.Name)
			}
			if c.Static && len(t.Clustering) == 0 {
				return false, invalidf("Static columns are only useful (and thus allowed) if the table has at least one clustering column")
			}
			// Cassandra remembers the last drop of a name.
			for i := len(t.Dropped) - 1; i >= 0; i-- {
				d := t.Dropped[i]
				if d.Name != c.Name {
					continue
				}
				if !readsAs(ks, d.Type, typ) {
					return false, invalidf("Cannot re-add previously dropped column '%s' of type %s, incompatible with previous type %s", c.Name, typ, d.Type)
				}
				if counter {
					return false, invalidf("Cannot re-add previously dropped counter column %s", c.Name)
				}
				break
			}
			// TableMetadata.validate refuses the mix, with a
			// ConfigurationException prefixed by the table.
			isCounter := typ.Kind == cqltype.Counter
			switch {
			case isCounter && !counter:
				return false, configf("%s: Cannot have a counter column (\"%s\") in a non counter table", ks.Name+"."+t.Name, c.Name)
			case !isCounter && counter:
				return false, configf("%s: Cannot have a non counter column (\"%s\") in a counter table", ks.Name+"."+t.Name, c.Name)
			}
			if err := t.AddColumn(c.Name, typ.String(), c.Static); err != nil {
				return false, manifestError(err)
			}
			changed = true
		}
		return changed, nil
	case ast.AlterDrop:
		changed := false
		for i, name := range st.Drop {
			c, ok := t.Column(name)
			if !ok {
				if st.DropIfExists || slices.Contains(st.Drop[:i], name) {
					// Cassandra drops a column named twice once.
					continue
				}
				return false, invalidf("Column %s was not found in table '%s'", name, ref)
			}
			if c.Kind == manifest.KindPartitionKey || c.Kind == manifest.KindClustering {
				return false, invalidf("Cannot drop PRIMARY KEY column %s", name)
			}
			// A non-frozen UDT cannot be recorded in dropped_columns as the
			// frozen tuple Cassandra records dropped UDTs as.
			if typ, err := cqltype.Parse(c.Type, udtResolver(ks)); err == nil && typ.Kind == cqltype.UDT && !typ.Frozen {
				return false, invalidf("Cannot drop non-frozen column %s of user type %s", name, typ)
			}
			if err := t.DropColumn(name, dropAt); err != nil {
				return false, manifestError(err)
			}
			changed = true
		}
		return changed, nil
	case ast.AlterRename:
		changed := false
		for _, r := range st.Renames {
			i := slices.IndexFunc(t.Columns, func(c manifest.Column) bool { return c.Name == r.From })
			if i < 0 {
				if st.RenameIfExists {
					continue
				}
				return false, invalidf("Column %s was not found in table %s", r.From, ref)
			}
			if k := t.Columns[i].Kind; k != manifest.KindPartitionKey && k != manifest.KindClustering {
				return false, invalidf("Cannot rename non PRIMARY KEY column %s", r.From)
			}
			if _, ok := t.Column(r.To); ok {
				return false, invalidf("Cannot rename column %s to %s in table '%s'; another column with that name already exists", r.From, r.To, ref)
			}
			t.Columns[i].Name = r.To
			changed = true
		}
		return changed, nil
	case ast.AlterWith:
		if err := applyTableProps(&t.Options, st.Properties, counter); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, invalidf("Unsupported ALTER TABLE")
}

// readsAs reports whether a column dropped with type dropped may come
// back with type added: Cassandra 4 asks that the old type read values of
// the new one (AbstractType.isValueCompatibleWith): the same type, or a
// blob reading anything, text reading ascii, varint reading int, bigint and
// timestamp, bigint reading timestamp, timestamp and time reading bigint, uuid reading
// timeuuid.
func readsAs(ks *manifest.Keyspace, dropped string, added *cqltype.Type) bool {
	if dropped == added.String() {
		return true
	}
	old, err := cqltype.Parse(dropped, udtResolver(ks))
	if err != nil {
		return false
	}
	switch k := added.Kind; old.Kind {
	case cqltype.Blob:
		return true
	case cqltype.Text:
		return k == cqltype.Ascii
	case cqltype.Varint:
		return k == cqltype.Int || k == cqltype.Bigint || k == cqltype.Timestamp
	case cqltype.Bigint:
		return k == cqltype.Timestamp
	case cqltype.Timestamp, cqltype.Time:
		return k == cqltype.Bigint
	case cqltype.UUID:
		return k == cqltype.Timeuuid
	}
	return old.Equal(added)
}

func tableHasCounters(t *manifest.Table) bool {
	for _, c := range t.Columns {
		if c.Type == "counter" {
			return true
		}
	}
	return false
}

// ---- DROP TABLE, TRUNCATE -----------------------------------------------

func (e *Executor) planDropTable(s *Session, st *ast.DropTable) (plan, error) {
	ksName, err := e.userKeyspaceOf(s, st.Table)
	if err != nil {
		return nil, err
	}
	name := st.Table.Name
	sc := SchemaChange{Change: ChangeDropped, Target: TargetTable, Keyspace: ksName, Name: name}
	return &ddlPlan{keyspace: ksName, change: func(ctx context.Context, x *execCtx) (SchemaChange, bool, error) {
		missing := func() (SchemaChange, bool, error) {
			if st.IfExists {
				return sc, false, nil
			}
			if x.e.view.Keyspace(ksName) == nil {
				return sc, false, invalidf("Keyspace '%s' doesn't exist", ksName)
			}
			return sc, false, invalidf("Table '%s.%s' doesn't exist", ksName, name)
		}
		ks, err := x.e.manifest.Keyspace(ctx, ksName)
		if errors.Is(err, manifest.ErrNotFound) {
			return missing()
		}
		if err != nil {
			return sc, false, manifestError(err)
		}
		t := ks.Tables[name]
		if t == nil {
			return missing()
		}
		err = x.e.manifest.DropTable(ctx, ksName, name)
		if errors.Is(err, manifest.ErrNotFound) {
			return missing()
		}
		if err != nil {
			return sc, false, manifestError(err)
		}
		if err := x.e.truncate(ctx, t.ID); err != nil {
			return sc, false, err
		}
		return sc, true, nil
	}}, nil
}

var _ plan = (*truncatePlan)(nil)

// truncatePlan is TRUNCATE: the table's data goes, its schema stays.
type truncatePlan struct{ keyspace, table string }

func (e *Executor) planTruncate(s *Session, st *ast.Truncate) (plan, error) {
	ksName, err := e.userKeyspaceOf(s, st.Table)
	if err != nil {
		return nil, err
	}
	if _, err := e.table(s, ast.TableName{Keyspace: ksName, Name: st.Table.Name}); err != nil {
		return nil, err
	}
	return &truncatePlan{keyspace: ksName, table: st.Table.Name}, nil
}

func (*truncatePlan) binds() []ColumnSpec  { return nil }
func (*truncatePlan) result() []ColumnSpec { return nil }

func (p *truncatePlan) execute(ctx context.Context, x *execCtx) (*Result, error) {
	t := x.e.view.Table(p.keyspace, p.table)
	if t == nil {
		return nil, invalidf("unconfigured table %s", p.table)
	}
	if err := x.e.truncate(ctx, t.ID); err != nil {
		return nil, err
	}
	return voidResult, nil
}

// ---- Types --------------------------------------------------------------

func (e *Executor) planCreateType(s *Session, st *ast.CreateType) (plan, error) {
	ksName, err := e.userKeyspaceOf(s, st.Name)
	if err != nil {
		return nil, err
	}
	if msg := badName("Type", st.Name.Name); msg != "" {
		// Cassandra 4's CreateTypeStatement does not check the name;
		// Sediment keeps type names to the rules of table names (see
		// docs/cql.md).
		return nil, invalidf("%s", msg)
	}
	ks := e.view.Keyspace(ksName)
	if ks == nil {
		return nil, invalidf("Keyspace '%s' doesn't exist", ksName)
	}
	if nativeTypeName(st.Name.Name) {
		return nil, invalidf("User defined type name %s is reserved", st.Name.Name)
	}
	// Cassandra 4's CreateTypeStatement: names first, then counters and
	// non-frozen UDTs as written, then the types resolved.
	u := manifest.UserType{Name: st.Name.Name}
	seen := map[string]bool{}
	for _, f := range st.Fields {
		if seen[f.Name] {
			return nil, invalidf("Duplicate field name '%s' in type '%s'", f.Name, st.Name.Name)
		}
		seen[f.Name] = true
	}
	for _, f := range st.Fields {
		if err := fieldTypeAsWritten(f.Type); err != nil {
			return nil, err
		}
	}
	for _, f := range st.Fields {
		t, err := cqltype.Parse(f.Type, udtResolver(ks))
		if err != nil {
			return nil, invalidf("%s", typeError(err))
		}
		u.Fields = append(u.Fields, manifest.Field{Name: f.Name, Type: cqltype.Freeze(t).String()})
	}
	sc := SchemaChange{Change: ChangeCreated, Target: TargetType, Keyspace: ksName, Name: u.Name}
	return &ddlPlan{keyspace: ksName, change: func(ctx context.Context, x *execCtx) (SchemaChange, bool, error) {
		err := x.e.manifest.CreateType(ctx, ksName, u)
		switch {
		case errors.Is(err, manifest.ErrExists):
			if st.IfNotExists {
				return sc, false, nil
			}
			return sc, false, invalidf("A user type with name '%s' already exists", u.Name)
		case errors.Is(err, manifest.ErrNotFound):
			return sc, false, invalidf("Keyspace '%s' doesn't exist", ksName)
		case err != nil:
			return sc, false, manifestError(err)
		}
		return sc, true, nil
	}}, nil
}

// fieldTypeAsWritten refuses a field type a user type cannot hold as
// written: a counter, or a user type not declared frozen (Cassandra checks
// the type before resolving it, so an unknown name is refused too).
func fieldTypeAsWritten(typ string) error {
	t, err := cqltype.Parse(typ, func(name string) (*cqltype.Type, error) {
		return &cqltype.Type{Kind: cqltype.UDT, Name: name}, nil
	})
	switch {
	case err != nil:
		return nil // resolving the type reports it
	case t.Kind == cqltype.Counter:
		return invalidf("A user type cannot contain counters")
	case t.Kind == cqltype.UDT && !t.Frozen:
		return invalidf("A user type cannot contain non-frozen UDTs")
	}
	return nil
}

// nativeTypeName reports whether name is a native type's name, which a
// user type may not take.
func nativeTypeName(name string) bool {
	t, err := cqltype.Parse(name, func(string) (*cqltype.Type, error) { return nil, errors.New("not native") })
	return err == nil && t.Kind.Native()
}

func (e *Executor) planAlterType(s *Session, st *ast.AlterType) (plan, error) {
	ksName, err := e.userKeyspaceOf(s, st.Name)
	if err != nil {
		return nil, err
	}
	if st.Kind == ast.AlterTypeFieldType {
		return nil, invalidf("Altering field types is no longer supported")
	}
	name := st.Name.Name
	sc := SchemaChange{Change: ChangeUpdated, Target: TargetType, Keyspace: ksName, Name: name}
	return &ddlPlan{keyspace: ksName, change: func(ctx context.Context, x *execCtx) (SchemaChange, bool, error) {
		ks := x.e.view.Keyspace(ksName)
		if ks == nil || ks.Types[name] == nil {
			if st.IfExists {
				return sc, false, nil
			}
			return sc, false, invalidf("Type %s.%s doesn't exist", ksName, name)
		}
		changed := false
		err := x.e.manifest.AlterType(ctx, ksName, name, func(u *manifest.UserType) error {
			var err error
			changed, err = alterType(ks, u, st)
			return err
		})
		changed, err = alterOutcome(err, changed, st.IfExists, invalidf("Type %s.%s doesn't exist", ksName, name))
		return sc, changed, err
	}}, nil
}

// alterType applies an ALTER TYPE ADD or RENAME to u with Cassandra's
// checks; it reports whether anything changed (IF [NOT] EXISTS on fields may
// make it a no-op). ks is the keyspace as planned, for types and tables.
func alterType(ks *manifest.Keyspace, u *manifest.UserType, st *ast.AlterType) (bool, error) {
	cqlName := ast.QuoteName(ks.Name) + "." + ast.QuoteName(u.Name)
	field := func(name string) int {
		return slices.IndexFunc(u.Fields, func(f manifest.Field) bool { return f.Name == name })
	}
	if st.Kind == ast.AlterTypeRename {
		names := make([]string, len(u.Fields))
		for i, f := range u.Fields {
			names[i] = f.Name
		}
		changed := false
		for _, r := range st.Renames {
			i := field(r.From)
			if i < 0 {
				if st.RenameIfExists {
					continue
				}
				return false, invalidf("Unkown field %s in user type %s", r.From, cqlName)
			}
			names[i], changed = r.To, true
		}
		for i, n := range names {
			if slices.Index(names, n) != i {
				// Cassandra's message names the keyspace where it means the type.
				return false, invalidf("Duplicate field name %s in type %s", n, ks.Name)
			}
		}
		for i := range u.Fields {
			u.Fields[i].Name = names[i]
		}
		return changed, nil
	}
	f := st.Add
	if err := fieldTypeAsWritten(f.Type); err != nil {
		return false, err
	}
	if field(f.Name) >= 0 {
		if st.AddIfNotExists {
			return false, nil
		}
		return false, invalidf("Cannot add field %s to type %s: a field with name %s already exists", f.Name, cqlName, f.Name)
	}
	resolve := udtResolver(ks)
	typ, err := cqltype.Parse(f.Type, resolve)
	if err != nil {
		return false, invalidf("%s", typeError(err))
	}
	if usesType(typ, u.Name) {
		return false, invalidf("Cannot add new field %s of type %s to user type %s as it would create a circular reference", f.Name, f.Type, cqlName)
	}
	var inKey []string
	for _, tn := range slices.Sorted(maps.Keys(ks.Tables)) {
		t := ks.Tables[tn]
		for _, id := range t.PartitionKey {
			c := t.Columns[slices.IndexFunc(t.Columns, func(c manifest.Column) bool { return c.ID == id })]
			if ct, err := cqltype.Parse(c.Type, resolve); err == nil && usesType(ct, u.Name) {
				inKey = append(inKey, ks.Name+"."+tn)
				break
			}
		}
	}
	if len(inKey) > 0 {
		return false, invalidf("Cannot add new field %s of type %s to user type %s as the type is being used in partition key by the following tables: %s",
			f.Name, f.Type, cqlName, strings.Join(inKey, ", "))
	}
	u.Fields = append(u.Fields, manifest.Field{Name: f.Name, Type: cqltype.Freeze(typ).String()})
	return true, nil
}

func (e *Executor) planDropType(s *Session, st *ast.DropType) (plan, error) {
	ksName, err := e.userKeyspaceOf(s, st.Name)
	if err != nil {
		return nil, err
	}
	name := st.Name.Name
	sc := SchemaChange{Change: ChangeDropped, Target: TargetType, Keyspace: ksName, Name: name}
	return &ddlPlan{keyspace: ksName, change: func(ctx context.Context, x *execCtx) (SchemaChange, bool, error) {
		if ks := x.e.view.Keyspace(ksName); ks != nil && ks.Types[name] != nil {
			if users := typeUsers(ks, name); users != "" {
				return sc, false, invalidf("Cannot drop user type '%s.%s' as it is still used by %s", ksName, name, users)
			}
		}
		err := x.e.manifest.DropType(ctx, ksName, name)
		switch {
		case errors.Is(err, manifest.ErrNotFound):
			if st.IfExists {
				return sc, false, nil
			}
			return sc, false, invalidf("Type '%s.%s' doesn't exist", ksName, name)
		case err != nil:
			return sc, false, manifestError(err)
		}
		return sc, true, nil
	}}, nil
}

// typeUsers names what in ks uses type name, as Cassandra's
// DropTypeStatement does: the user types if any ("user types a, b"), else
// the tables ("tables t, u"); "" when nothing does.
func typeUsers(ks *manifest.Keyspace, name string) string {
	uses := func(typ string) bool {
		t, err := cqltype.Parse(typ, udtResolver(ks))
		return err == nil && usesType(t, name)
	}
	var types, tables []string
	for _, un := range slices.Sorted(maps.Keys(ks.Types)) {
		if un != name && slices.ContainsFunc(ks.Types[un].Fields, func(f manifest.Field) bool { return uses(f.Type) }) {
			types = append(types, un)
		}
	}
	for _, tn := range slices.Sorted(maps.Keys(ks.Tables)) {
		if slices.ContainsFunc(ks.Tables[tn].Columns, func(c manifest.Column) bool { return uses(c.Type) }) {
			tables = append(tables, tn)
		}
	}
	switch {
	case len(types) > 0:
		return "user types " + strings.Join(types, ", ")
	case len(tables) > 0:
		return "tables " + strings.Join(tables, ", ")
	}
	return ""
}

func usesType(t *cqltype.Type, name string) bool {
	if t.Kind == cqltype.UDT && t.Name == name {
		return true
	}
	for _, el := range t.Elems {
		if usesType(el, name) {
			return true
		}
	}
	return false
}
