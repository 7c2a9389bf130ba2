package exec

import (
	"cmp"
	"context"
	"encoding/binary"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/manifest"
)

// DESCRIBE.
//
// cqlsh 6 sends DESCRIBE to servers of release 4.0 and later, which answer
// it as Cassandra 4's DescribeStatement does. The forms that list names
// (KEYSPACES, TABLES, TYPES, FUNCTIONS, AGGREGATES) return the columns
// keyspace_name, type and name; the others add create_statement, the CQL
// that recreates the element (see describe_cql.go). Names are quoted where
// CQL needs it. DESCRIBE CLUSTER returns cluster, partitioner and snitch,
// and, when the session has a non-system keyspace, range_ownership: the
// tokens each frontend reports in system.local and system.peers, mapped to
// the frontend's address. Sediment has no user functions, aggregates,
// indexes or views, so those forms list nothing or name nothing.
//
// The rows are paged by their position, as Cassandra does. The paging
// state, opaque to clients, is
//
//	+-------------+------------------------+-----------------------+
//	| magic 0x44  | schema version (16 B)  | next row (uvarint)    |
//	+-------------+------------------------+-----------------------+
//
// and a state from another schema version is refused with Cassandra's
// message, since the rows' positions may have moved.

// Element kinds, as the type column names them.
const (
	elemKeyspace = "keyspace"
	elemTable    = "table"
	elemType     = "type"
)

const describePagingMagic = 0x44

// errSchemaChangedWhilePaging is Cassandra's message for a paging state
// of another schema version.
const errSchemaChangedWhilePaging = "The schema has changed since the previous page of the DESCRIBE statement result. Please retry the DESCRIBE statement."

// describeElement is one row of a DESCRIBE result.
type describeElement struct {
	keyspace, kind, name string
	// cql writes the element's CREATE statement.
	cql func(withInternals bool) string
}

func describeSpec(name string, t *cqltype.Type) ColumnSpec {
	return ColumnSpec{Keyspace: ksSystem, Table: "describe", Name: name, Type: t}
}

var (
	describeListColumns = []ColumnSpec{
		describeSpec("keyspace_name", cqltype.TextType),
		describeSpec("type", cqltype.TextType),
		describeSpec("name", cqltype.TextType),
	}
	describeElementColumns = append(slices.Clip(describeListColumns), describeSpec("create_statement", cqltype.TextType))
	describeClusterColumns = []ColumnSpec{
		describeSpec("cluster", cqltype.TextType),
		describeSpec("partitioner", cqltype.TextType),
		describeSpec("snitch", cqltype.TextType),
	}
	rangeOwnershipType = cqltype.MapOf(cqltype.TextType, cqltype.ListOf(cqltype.TextType, false), false)
)

// describePlan is a DESCRIBE statement. It reads the schema when it runs:
// the View's current one.
type describePlan struct {
	st *ast.Describe
	// keyspace is the session's keyspace the statement was planned in.
	keyspace string
}

func (e *Executor) planDescribe(s *Session, st *ast.Describe) (plan, error) {
	return &describePlan{st: st, keyspace: s.Keyspace()}, nil
}

func (p *describePlan) binds() []ColumnSpec { return nil }

func (p *describePlan) result() []ColumnSpec {
	switch p.st.Kind {
	case ast.DescribeCluster:
		if p.withRanges() {
			return append(slices.Clip(describeClusterColumns), describeSpec("range_ownership", rangeOwnershipType))
		}
		return describeClusterColumns
	}
	if p.listing() {
		return describeListColumns
	}
	return describeElementColumns
}

// listing reports whether the statement lists names only.
func (p *describePlan) listing() bool {
	switch p.st.Kind {
	case ast.DescribeKeyspaces, ast.DescribeTables, ast.DescribeTypes, ast.DescribeFunctions, ast.DescribeAggregates:
		return true
	}
	return false
}

// withRanges reports whether DESCRIBE CLUSTER lists range ownership: only
// in a keyspace that is not a system one, as Cassandra.
func (p *describePlan) withRanges() bool {
	return p.keyspace != "" && !isSystemKeyspace(p.keyspace)
}

func (p *describePlan) execute(_ context.Context, x *execCtx) (*Result, error) {
	schema := x.e.view.Schema()
	offset, err := decodeDescribePaging(x.params.PagingState, schema.Version)
	if err != nil {
		return nil, err
	}
	// row returns row i of the result; only the page's rows are rendered.
	var row func(i int) [][]byte
	n := 1
	if p.st.Kind == ast.DescribeCluster {
		row = func(int) [][]byte { return x.e.clusterRow(p.withRanges()) }
	} else {
		elems, err := p.elements(schema)
		if err != nil {
			return nil, err
		}
		withCQL := !p.listing()
		n = len(elems)
		row = func(i int) [][]byte {
			el := elems[i]
			r := [][]byte{textValue(ast.QuoteName(el.keyspace)), textValue(el.kind), textValue(el.name)}
			if withCQL {
				r = append(r, textValue(el.cql(p.st.WithInternals)))
			}
			return r
		}
	}
	res := &Result{Kind: ResultRows, Columns: p.result()}
	end := n
	if size := x.params.PageSize; size > 0 && offset+size < n {
		end = offset + size
		res.PagingState = encodeDescribePaging(schema.Version, end)
	}
	for i := offset; i < end; i++ {
		res.Rows = append(res.Rows, row(i))
	}
	return res, nil
}

// elements lists the schema elements the statement describes.
func (p *describePlan) elements(schema *manifest.Schema) ([]describeElement, error) {
	all := describeKeyspaces(schema)
	sortByName(all, func(k *keyspaceDef) string { return k.name })
	find := func(name string) (*keyspaceDef, error) {
		if i := slices.IndexFunc(all, func(k *keyspaceDef) bool { return k.name == name }); i >= 0 {
			return all[i], nil
		}
		return nil, invalidf("'%s' not found in keyspaces", name)
	}
	// inKeyspace resolves the keyspace of a named element.
	inKeyspace := func() (*keyspaceDef, error) {
		ks := p.st.Name.Keyspace
		if ks == "" {
			ks = p.keyspace
		}
		if ks == "" {
			return nil, invalidf("No keyspace specified and no current keyspace")
		}
		return find(ks)
	}
	// listing lists the elements of the session's keyspace, or of all.
	listing := func(of func(k *keyspaceDef) []describeElement) ([]describeElement, error) {
		list := all
		if p.keyspace != "" {
			k, err := find(p.keyspace)
			if err != nil {
				return nil, err
			}
			list = []*keyspaceDef{k}
		}
		var out []describeElement
		for _, k := range list {
			out = append(out, of(k)...)
		}
		return out, nil
	}
	name := p.st.Name.Name

	switch p.st.Kind {
	case ast.DescribeSchema:
		var out []describeElement
		for _, k := range all {
			if p.st.Full || !isSystemKeyspace(k.name) {
				out = append(out, keyspaceElements(k, false)...)
			}
		}
		return out, nil
	case ast.DescribeKeyspaces:
		out := make([]describeElement, len(all))
		for i, k := range all {
			out[i] = keyspaceElement(k)
		}
		return out, nil
	case ast.DescribeKeyspace:
		if name == "" {
			name = p.keyspace
		}
		if name == "" {
			return nil, invalidf("No keyspace specified and no current keyspace")
		}
		k, err := find(name)
		if err != nil {
			return nil, err
		}
		return keyspaceElements(k, p.st.Only), nil
	case ast.DescribeTables:
		return listing(func(k *keyspaceDef) []describeElement {
			out := make([]describeElement, len(k.tables))
			for i, t := range k.tables {
				out[i] = tableElement(t)
			}
			return out
		})
	case ast.DescribeTypes:
		return listing(func(k *keyspaceDef) []describeElement {
			types := slices.Clone(k.types)
			sortByName(types, func(u *manifest.UserType) string { return u.Name })
			out := make([]describeElement, len(types))
			for i, u := range types {
				out[i] = typeElement(k.name, u)
			}
			return out
		})
	case ast.DescribeFunctions, ast.DescribeAggregates:
		// No user-defined functions or aggregates: an empty listing, after
		// the same keyspace check.
		return listing(func(*keyspaceDef) []describeElement { return nil })
	case ast.DescribeTable:
		k, err := inKeyspace()
		if err != nil {
			return nil, err
		}
		if t := k.table(name); t != nil {
			return []describeElement{tableElement(t)}, nil
		}
		return nil, invalidf("Table '%s' not found in keyspace '%s'", name, k.name)
	case ast.DescribeType:
		k, err := inKeyspace()
		if err != nil {
			return nil, err
		}
		for _, u := range k.types {
			if u.Name == name {
				return []describeElement{typeElement(k.name, u)}, nil
			}
		}
		return nil, invalidf("User defined type '%s' not found in '%s'", name, k.name)
	case ast.DescribeFunction, ast.DescribeAggregate:
		k, err := inKeyspace()
		if err != nil {
			return nil, err
		}
		what := "function"
		if p.st.Kind == ast.DescribeAggregate {
			what = "aggregate"
		}
		return nil, invalidf("User defined %s '%s' not found in '%s'", what, name, k.name)
	case ast.DescribeIndex:
		k, err := inKeyspace()
		if err != nil {
			return nil, err
		}
		return nil, invalidf("Table for existing index '%s' not found in '%s'", name, k.name)
	case ast.DescribeView:
		k, err := inKeyspace()
		if err != nil {
			return nil, err
		}
		return nil, invalidf("Materialized view '%s' not found in '%s'", name, k.name)
	case ast.DescribeName:
		// A keyspace, then a table (Sediment has no indexes or views), as
		// cqlsh's help orders them.
		ks := p.st.Name.Keyspace
		if ks == "" {
			if k, err := find(name); err == nil {
				return keyspaceElements(k, false), nil
			}
			ks = cmp.Or(p.keyspace, name)
		}
		k, err := find(ks)
		if err != nil {
			return nil, err
		}
		if t := k.table(name); t != nil {
			return []describeElement{tableElement(t)}, nil
		}
		return nil, invalidf("'%s' not found in keyspace '%s'", name, k.name)
	}
	return nil, invalidf("Unsupported DESCRIBE statement")
}

func (k *keyspaceDef) table(name string) *tableDef {
	if i := slices.IndexFunc(k.tables, func(t *tableDef) bool { return t.name == name }); i >= 0 {
		return k.tables[i]
	}
	return nil
}

// keyspaceElements is a keyspace followed, unless only, by its types in
// dependency order and its tables by name.
func keyspaceElements(k *keyspaceDef, only bool) []describeElement {
	out := []describeElement{keyspaceElement(k)}
	if only {
		return out
	}
	for _, u := range k.types {
		out = append(out, typeElement(k.name, u))
	}
	for _, t := range k.tables {
		out = append(out, tableElement(t))
	}
	return out
}

func keyspaceElement(k *keyspaceDef) describeElement {
	return describeElement{keyspace: k.name, kind: elemKeyspace, name: ast.QuoteName(k.name),
		cql: func(bool) string { return keyspaceCQL(k) }}
}

func typeElement(ks string, u *manifest.UserType) describeElement {
	return describeElement{keyspace: ks, kind: elemType, name: ast.QuoteName(u.Name),
		cql: func(bool) string { return typeCQL(ks, u) }}
}

func tableElement(t *tableDef) describeElement {
	return describeElement{keyspace: t.keyspace, kind: elemTable, name: ast.QuoteName(t.name),
		cql: func(internals bool) string { return tableCQL(t, internals) }}
}

// clusterRow is DESCRIBE CLUSTER's row.
func (e *Executor) clusterRow(withRanges bool) [][]byte {
	snitch := "SimpleSnitch"
	if e.cfg.Local.DataCenter != "datacenter1" || e.cfg.Local.Rack != "rack1" {
		// SimpleSnitch names only datacenter1 and rack1.
		snitch = "GossipingPropertyFileSnitch"
	}
	row := [][]byte{
		textValue(e.cfg.Local.ClusterName),
		textValue(strings.TrimPrefix(partitionerName, "org.apache.cassandra.dht.")),
		textValue(snitch),
	}
	if withRanges {
		row = append(row, e.rangeOwnership())
	}
	return row
}

// rangeOwnership maps the tokens the live frontends report to the
// frontend's endpoint, as a serialized map<text, list<text>> in token
// order: the range ending at a token belongs to the host that reports it.
func (e *Executor) rangeOwnership() []byte {
	hosts := e.frontends()
	type owned struct {
		token int64
		text  string
		addr  netip.AddrPort
	}
	var all []owned
	for i, h := range hosts {
		addr := h.addr
		if h.hostID == e.cfg.Local.HostID {
			addr = e.localAddr()
		}
		for _, tok := range tokensOf(i, len(hosts)) {
			n, _ := strconv.ParseInt(tok, 10, 64)
			all = append(all, owned{n, tok, addr})
		}
	}
	slices.SortFunc(all, func(a, b owned) int { return cmp.Compare(a.token, b.token) })
	b := binary.BigEndian.AppendUint32(nil, uint32(len(all)))
	for _, o := range all {
		// Endpoints as Cassandra 4's InetAddressAndPort prints them, with
		// the storage port system.local reports.
		ep := "/" + o.addr.Addr().Unmap().String() + ":7000"
		b = binary.BigEndian.AppendUint32(b, uint32(len(o.text)))
		b = append(b, o.text...)
		list := textListValue([]string{ep})
		b = binary.BigEndian.AppendUint32(b, uint32(len(list)))
		b = append(b, list...)
	}
	return b
}

// encodeDescribePaging is the paging state of the page that starts at row
// next of a result of schema version v.
func encodeDescribePaging(v uuid.UUID, next int) []byte {
	b := append([]byte{describePagingMagic}, v[:]...)
	return binary.AppendUvarint(b, uint64(next))
}

// decodeDescribePaging returns the first row of the page a client's paging
// state asks for: 0 for none.
func decodeDescribePaging(b []byte, v uuid.UUID) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	bad := invalidf("Invalid paging state.")
	if len(b) < 1+16 || b[0] != describePagingMagic {
		return 0, bad
	}
	next, n := binary.Uvarint(b[17:])
	if n <= 0 || 17+n != len(b) || next > 1<<31 {
		return 0, bad
	}
	if uuid.UUID(b[1:17]) != v {
		return 0, invalidf("%s", errSchemaChangedWhilePaging)
	}
	return int(next), nil
}
