package exec

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/manifest"
)

// The CQL text of schema elements, as Cassandra 4.0's DESCRIBE writes it
// (KeyspaceMetadata, UserType and TableMetadata.toCqlString): the same line
// breaks, indentation, option names and option order, so tools that compare
// or replay cqlsh output get what they would from Cassandra. Every table
// option Sediment stores is written with its value; the options it keeps at
// Cassandra's defaults are written with those, exactly as
// system_schema.tables shows them.

// describeIndent is CqlBuilder's indentation.
const describeIndent = "    "

// keyspaceDef is a keyspace as DESCRIBE sees it: a stored one, or one of
// the system keyspaces Sediment answers itself.
type keyspaceDef struct {
	name        string
	replication map[string]string
	durable     bool
	// virtual keyspaces are written as a comment: they cannot be created.
	virtual bool
	// types in dependency order: a type comes after the types it uses.
	types  []*manifest.UserType
	tables []*tableDef // by name
}

// tableDef is a table as DESCRIBE writes it.
type tableDef struct {
	keyspace, name string
	id             uuid.UUID
	virtual        bool
	comment        string // the options' comment, or a system table's
	options        manifest.TableOptions
	partition      []columnDef
	clustering     []columnDef
	// others are the static columns, then the regular ones, each simple
	// columns before non-frozen collections and UDTs, by name: the order
	// of Cassandra's RegularAndStaticColumns.
	others  []columnDef
	dropped []manifest.DroppedColumn
}

type columnDef struct {
	name, typ       string
	static, complex bool
	desc            bool
}

// describeKeyspaces returns every keyspace DESCRIBE knows, in no
// particular order: the schema's and the system ones.
func describeKeyspaces(s *manifest.Schema) []*keyspaceDef {
	var out []*keyspaceDef
	for _, ks := range localKeyspaces {
		out = append(out, systemKeyspaceDef(ks, false))
	}
	for _, ks := range virtualKeyspaces {
		out = append(out, systemKeyspaceDef(ks, true))
	}
	for _, ks := range s.Keyspaces {
		out = append(out, storedKeyspaceDef(ks))
	}
	return out
}

func systemKeyspaceDef(name string, virtual bool) *keyspaceDef {
	k := &keyspaceDef{
		name:        name,
		replication: map[string]string{"class": "org.apache.cassandra.locator.LocalStrategy"},
		durable:     true,
		virtual:     virtual,
	}
	for _, tn := range slices.Sorted(maps.Keys(sysTables[name])) {
		st := sysTables[name][tn]
		t := &tableDef{
			keyspace: name,
			name:     tn,
			id:       sysTableID(name, tn),
			virtual:  virtual,
			comment:  st.comment,
			options:  sysTableOptions(name, st.comment),
		}
		for _, c := range st.columns {
			d := columnDef{name: c.name, typ: c.typ.String(), complex: isComplex(c.typ)}
			switch c.kind {
			case manifest.KindPartitionKey:
				t.partition = append(t.partition, d)
			case manifest.KindClustering:
				t.clustering = append(t.clustering, d)
			default:
				t.others = append(t.others, d)
			}
		}
		sortOthers(t.others)
		k.tables = append(k.tables, t)
	}
	sortByName(k.tables, func(t *tableDef) string { return t.name })
	return k
}

func storedKeyspaceDef(ks *manifest.Keyspace) *keyspaceDef {
	k := &keyspaceDef{name: ks.Name, replication: ks.Replication, durable: ks.DurableWrites, types: typesInOrder(ks)}
	resolve := udtResolver(ks)
	for _, t := range ks.Tables {
		d := &tableDef{keyspace: ks.Name, name: t.Name, id: t.ID, comment: t.Options.Comment, options: t.Options, dropped: lastDrops(t.Dropped)}
		for i := range d.dropped {
			// As system_schema.dropped_columns shows it, user types as tuples.
			d.dropped[i].Type = droppedType(ks, d.dropped[i].Type)
		}
		byID := make(map[uint32]manifest.Column, len(t.Columns))
		for _, c := range t.Columns {
			byID[c.ID] = c
		}
		for _, id := range t.PartitionKey {
			d.partition = append(d.partition, columnDef{name: byID[id].Name, typ: byID[id].Type})
		}
		for _, ck := range t.Clustering {
			d.clustering = append(d.clustering, columnDef{name: byID[ck.ID].Name, typ: byID[ck.ID].Type, desc: ck.Desc})
		}
		for _, c := range t.Columns {
			if c.Kind != manifest.KindStatic && c.Kind != manifest.KindRegular {
				continue
			}
			// A type that no longer parses is still written as stored.
			typ, err := cqltype.Parse(c.Type, resolve)
			d.others = append(d.others, columnDef{name: c.Name, typ: c.Type, static: c.Kind == manifest.KindStatic, complex: err == nil && isComplex(typ)})
		}
		sortOthers(d.others)
		k.tables = append(k.tables, d)
	}
	sortByName(k.tables, func(t *tableDef) string { return t.name })
	return k
}

// isComplex reports whether a column of type t has one cell per element:
// Cassandra lists such columns after the simple ones.
func isComplex(t *cqltype.Type) bool {
	switch t.Kind {
	case cqltype.List, cqltype.Set, cqltype.Map, cqltype.UDT:
		return !t.Frozen
	}
	return false
}

func sortOthers(cs []columnDef) {
	rank := func(c columnDef) int {
		r := 0
		if !c.static {
			r += 2
		}
		if c.complex {
			r++
		}
		return r
	}
	slices.SortFunc(cs, func(a, b columnDef) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.name, b.name))
	})
}

// sortByName orders schema elements as Cassandra's
// SchemaElement.NAME_COMPARATOR: by name, ignoring case.
func sortByName[T any](list []T, name func(T) string) {
	slices.SortFunc(list, func(a, b T) int {
		na, nb := name(a), name(b)
		return cmp.Or(strings.Compare(strings.ToLower(na), strings.ToLower(nb)), strings.Compare(na, nb))
	})
}

// lastDrops keeps the latest drop of each column name, in drop order.
func lastDrops(ds []manifest.DroppedColumn) []manifest.DroppedColumn {
	last := map[string]manifest.DroppedColumn{}
	for _, d := range ds {
		if cur, ok := last[d.Name]; !ok || d.DroppedAt >= cur.DroppedAt {
			last[d.Name] = d
		}
	}
	out := slices.Collect(maps.Values(last))
	slices.SortFunc(out, func(a, b manifest.DroppedColumn) int {
		return cmp.Or(cmp.Compare(a.DroppedAt, b.DroppedAt), strings.Compare(a.Name, b.Name))
	})
	return out
}

// typesInOrder returns the user types of ks so that every type follows the
// types its fields use, visiting them by name: CREATE TYPE statements run
// in this order succeed.
func typesInOrder(ks *manifest.Keyspace) []*manifest.UserType {
	names := slices.Collect(maps.Keys(ks.Types))
	sortByName(names, func(s string) string { return s })
	var out []*manifest.UserType
	done := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		u := ks.Types[name]
		if u == nil || done[name] {
			return
		}
		done[name] = true // types cannot form cycles; this also stops bad data
		for _, f := range u.Fields {
			for _, dep := range typeRefs(f.Type) {
				visit(dep)
			}
		}
		out = append(out, u)
	}
	for _, n := range names {
		visit(n)
	}
	return out
}

// typeRefs returns the names of the user types a type string uses.
func typeRefs(typ string) []string {
	var refs []string
	_, _ = cqltype.Parse(typ, func(name string) (*cqltype.Type, error) {
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:]
		}
		refs = append(refs, name)
		return cqltype.UDTOf("", name, nil, nil), nil
	})
	return refs
}

// qualified is keyspace.name, each quoted if needed.
func qualified(ks, name string) string { return ast.QuoteName(ks) + "." + ast.QuoteName(name) }

// cqlString is s as a CQL string literal.
func cqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// cqlMap is a map<text, text> as a CQL literal, its keys in order, as
// CqlBuilder writes option maps.
func cqlMap(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, cqlString(k)+": "+cqlString(m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// keyspaceCQL is the CREATE KEYSPACE statement of k.
func keyspaceCQL(k *keyspaceDef) string {
	if k.virtual {
		return "/*\nWarning: Keyspace " + ast.QuoteName(k.name) + " is a virtual keyspace and cannot be recreated with CQL.\n" +
			"Structure, for reference:\nVIRTUAL KEYSPACE " + ast.QuoteName(k.name) + ";\n*/"
	}
	// The class first, by its short name for Cassandra's own strategies,
	// then the options.
	class := strings.TrimPrefix(k.replication["class"], "org.apache.cassandra.locator.")
	parts := []string{cqlString("class") + ": " + cqlString(class)}
	for _, opt := range slices.Sorted(maps.Keys(k.replication)) {
		if opt != "class" {
			parts = append(parts, cqlString(opt)+": "+cqlString(k.replication[opt]))
		}
	}
	return fmt.Sprintf("CREATE KEYSPACE %s WITH replication = {%s}  AND durable_writes = %t;",
		ast.QuoteName(k.name), strings.Join(parts, ", "), k.durable)
}

// typeCQL is the CREATE TYPE statement of u.
func typeCQL(ks string, u *manifest.UserType) string {
	var b strings.Builder
	b.WriteString("CREATE TYPE " + qualified(ks, u.Name) + " (\n")
	for i, f := range u.Fields {
		b.WriteString(describeIndent + ast.QuoteName(f.Name) + " " + f.Type)
		if i < len(u.Fields)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(");")
	return b.String()
}

// tableCQL is the CREATE TABLE statement of t. withInternals adds the
// table ID and replays the dropped columns, as Cassandra's WITH INTERNALS.
func tableCQL(t *tableDef, withInternals bool) string {
	var b strings.Builder
	create := "CREATE"
	if t.virtual {
		fmt.Fprintf(&b, "/*\nWarning: Table %s is a virtual table and cannot be recreated with CQL.\nStructure, for reference:\n", qualified(t.keyspace, t.name))
		create = "VIRTUAL"
	}
	b.WriteString(create + " TABLE " + qualified(t.keyspace, t.name) + " (\n")

	dropped := map[string]bool{}
	if withInternals && !t.virtual {
		for _, d := range t.dropped {
			dropped[d.Name] = true
		}
	}
	var lines []string
	singleKey := len(t.partition) == 1 && len(t.clustering) == 0
	for _, c := range t.partition {
		l := ast.QuoteName(c.name) + " " + c.typ
		if singleKey {
			l += " PRIMARY KEY"
		}
		lines = append(lines, l)
	}
	for _, c := range t.clustering {
		lines = append(lines, ast.QuoteName(c.name)+" "+c.typ)
	}
	var readded []columnDef
	for _, c := range t.others {
		if dropped[c.name] {
			// Re-added after a drop: written after the drop below.
			readded = append(readded, c)
			continue
		}
		lines = append(lines, columnLine(c))
	}
	for _, d := range t.dropped {
		if dropped[d.Name] {
			lines = append(lines, ast.QuoteName(d.Name)+" "+d.Type)
		}
	}
	if !singleKey {
		lines = append(lines, primaryKeyCQL(t))
	}
	for i, l := range lines {
		b.WriteString(describeIndent + l)
		if i < len(lines)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(") WITH ")

	var opts []string
	if withInternals {
		opts = append(opts, "ID = "+t.id.String())
	}
	if len(t.clustering) > 0 {
		order := make([]string, len(t.clustering))
		for i, c := range t.clustering {
			dir := "ASC"
			if c.desc {
				dir = "DESC"
			}
			order[i] = ast.QuoteName(c.name) + " " + dir
		}
		opts = append(opts, "CLUSTERING ORDER BY ("+strings.Join(order, ", ")+")")
	}
	if t.virtual {
		opts = append(opts, "comment = "+cqlString(t.comment))
	} else {
		opts = append(opts, optionsCQL(t.options)...)
	}
	b.WriteString(strings.Join(opts, "\n"+describeIndent+"AND "))
	b.WriteByte(';')
	if t.virtual {
		b.WriteString("\n*/")
	}
	if withInternals && !t.virtual {
		name := qualified(t.keyspace, t.name)
		for _, d := range t.dropped {
			fmt.Fprintf(&b, "\nALTER TABLE %s DROP %s USING TIMESTAMP %d;", name, ast.QuoteName(d.Name), d.DroppedAt)
		}
		for _, c := range readded {
			fmt.Fprintf(&b, "\nALTER TABLE %s ADD %s;", name, columnLine(c))
		}
	}
	return b.String()
}

func columnLine(c columnDef) string {
	l := ast.QuoteName(c.name) + " " + c.typ
	if c.static {
		l += " static"
	}
	return l
}

func primaryKeyCQL(t *tableDef) string {
	names := func(cs []columnDef) string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = ast.QuoteName(c.name)
		}
		return strings.Join(out, ", ")
	}
	pk := names(t.partition)
	if len(t.partition) > 1 {
		pk = "(" + pk + ")"
	}
	if len(t.clustering) > 0 {
		pk += ", " + names(t.clustering)
	}
	return "PRIMARY KEY (" + pk + ")"
}
