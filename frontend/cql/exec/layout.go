package exec

import (
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/internal/keys"
	"github.com/sedimentdb/sediment/internal/model"
	"github.com/sedimentdb/sediment/internal/token"
	"github.com/sedimentdb/sediment/manifest"
)

// columnKind tells a column's role in its table.
type columnKind uint8

const (
	kindPartition columnKind = iota
	kindClustering
	kindStatic
	kindRegular
)

// column is one column of a table, its type parsed.
type column struct {
	id   uint32
	name string
	typ  *cqltype.Type
	kind columnKind
	// pos is the column's position in the partition key or among the
	// clustering columns; -1 for static and regular columns.
	pos  int
	desc bool
}

// tableLayout maps a CQL table to storage: which columns make the partition
// key and the clustering, in what order, and how values become keys and cell
// paths. It is built once per schema version and shared by every statement
// planned against it.
type tableLayout struct {
	keyspace string
	table    *manifest.Table
	id       uuid.UUID

	columns    []*column // definition order
	byName     map[string]*column
	byID       map[uint32]*column
	partition  []*column
	clustering []*column
	static     []*column
	regular    []*column

	// For package keys.
	clusteringTypes []*cqltype.Type
	clusteringDesc  []bool
}

// udtResolver resolves type names against the user-defined types of ks, as
// cqltype.Parse asks for them: "name" or "keyspace.name".
func udtResolver(ks *manifest.Keyspace) func(string) (*cqltype.Type, error) {
	var resolve func(name string, depth int) (*cqltype.Type, error)
	resolve = func(name string, depth int) (*cqltype.Type, error) {
		if i := strings.IndexByte(name, '.'); i >= 0 {
			if ks == nil || name[:i] != ks.Name {
				return nil, fmt.Errorf("statement on keyspace %s cannot refer to a user type in keyspace %s; user types can only be used in the keyspace they are defined in", ksName(ks), name[:i])
			}
			name = name[i+1:]
		}
		var u *manifest.UserType
		if ks != nil {
			u = ks.Types[name]
		}
		if u == nil {
			return nil, fmt.Errorf("Unknown type %s.%s", ksName(ks), name)
		}
		if depth > 32 {
			return nil, fmt.Errorf("type %s nests too deeply", name)
		}
		return u.Type(ks.Name, func(n string) (*cqltype.Type, error) { return resolve(n, depth+1) })
	}
	return func(name string) (*cqltype.Type, error) { return resolve(name, 0) }
}

func ksName(ks *manifest.Keyspace) string {
	if ks == nil {
		return ""
	}
	return ks.Name
}

// newTableLayout builds the layout of table t of keyspace ks.
func newTableLayout(ks *manifest.Keyspace, t *manifest.Table) (*tableLayout, error) {
	l := &tableLayout{
		keyspace: ks.Name,
		table:    t,
		id:       t.ID,
		byName:   make(map[string]*column, len(t.Columns)),
		byID:     make(map[uint32]*column, len(t.Columns)),
	}
	resolve := udtResolver(ks)
	for _, mc := range t.Columns {
		typ, err := cqltype.Parse(mc.Type, resolve)
		if err != nil {
			return nil, fmt.Errorf("exec: table %s.%s column %s: %w", ks.Name, t.Name, mc.Name, err)
		}
		c := &column{id: mc.ID, name: mc.Name, typ: typ, pos: -1}
		switch mc.Kind {
		case manifest.KindPartitionKey:
			c.kind = kindPartition
		case manifest.KindClustering:
			c.kind = kindClustering
		case manifest.KindStatic:
			c.kind = kindStatic
			l.static = append(l.static, c)
		case manifest.KindRegular:
			c.kind = kindRegular
			l.regular = append(l.regular, c)
		default:
			return nil, fmt.Errorf("exec: table %s.%s column %s has kind %q", ks.Name, t.Name, mc.Name, mc.Kind)
		}
		l.columns = append(l.columns, c)
		l.byName[c.name] = c
		l.byID[c.id] = c
	}
	for i, id := range t.PartitionKey {
		c := l.byID[id]
		if c == nil || c.kind != kindPartition {
			return nil, fmt.Errorf("exec: table %s.%s: partition key column %d missing", ks.Name, t.Name, id)
		}
		c.pos = i
		l.partition = append(l.partition, c)
	}
	for i, ck := range t.Clustering {
		c := l.byID[ck.ID]
		if c == nil || c.kind != kindClustering {
			return nil, fmt.Errorf("exec: table %s.%s: clustering column %d missing", ks.Name, t.Name, ck.ID)
		}
		c.pos, c.desc = i, ck.Desc
		l.clustering = append(l.clustering, c)
		l.clusteringTypes = append(l.clusteringTypes, c.typ)
		l.clusteringDesc = append(l.clusteringDesc, ck.Desc)
	}
	if len(l.partition) == 0 {
		return nil, fmt.Errorf("exec: table %s.%s has no partition key", ks.Name, t.Name)
	}
	return l, nil
}

// name is the table's name.
func (l *tableLayout) name() string { return l.table.Name }

// column returns the column called name, or nil.
func (l *tableLayout) column(name string) *column { return l.byName[name] }

// rowLive reports whether a row the engine returned lives for the table as
// it is now: by its liveness, or by a live cell of a column it still has.
// A row whose only cells are of dropped columns is gone, as in Cassandra,
// whose reads fetch no column the schema no longer has.
func (l *tableLayout) rowLive(r *model.Row, now int64) bool {
	if r.Liveness.IsLive(now) {
		return true
	}
	for i := range r.Cells {
		if l.byID[r.Cells[i].Column] != nil && r.Cells[i].IsLive(now) {
			return true
		}
	}
	return false
}

// isCounter reports whether the table is a counter table: every column that
// is not part of the primary key is a counter.
func (l *tableLayout) isCounter() bool {
	n := 0
	for _, c := range l.columns {
		if c.kind == kindStatic || c.kind == kindRegular {
			if c.typ.Kind != cqltype.Counter {
				return false
			}
			n++
		}
	}
	return n > 0
}

// partitionKey serializes the partition key from one value per partition
// key column, in key order, and returns it with its token.
func (l *tableLayout) partitionKey(values [][]byte) ([]byte, int64, error) {
	if len(values) != len(l.partition) {
		return nil, 0, fmt.Errorf("exec: %d partition key values for %d columns", len(values), len(l.partition))
	}
	pk, tok, err := partitionKeyOf(values)
	if err == nil && len(pk) > maxKeyLength {
		return nil, 0, invalidf("Key length of %d is longer than maximum of %d", len(pk), maxKeyLength)
	}
	return pk, tok, err
}

// maxKeyLength is the longest partition key, and the longest clustering
// value, Cassandra accepts (Validation.validateKey, ClusteringPrefix
// validate): its SSTables write them with an unsigned short length.
const maxKeyLength = 65535

// keyColumns are the partition key columns, as token relations see them.
func (l *tableLayout) keyColumns() []keyColumn {
	key := make([]keyColumn, len(l.partition))
	for i, c := range l.partition {
		key[i] = keyColumn{name: c.name, typ: c.typ}
	}
	return key
}

// partitionKeyOf serializes a partition key from its column values and
// returns it with its token. A single column's key is its value; several
// are composed as Cassandra's CompositeType does.
func partitionKeyOf(values [][]byte) ([]byte, int64, error) {
	var pk []byte
	if len(values) == 1 {
		pk = values[0]
	} else {
		var err error
		if pk, err = keys.ComposePartitionKey(values); err != nil {
			return nil, 0, invalidf("Key length of %d is longer than maximum of 65535", longest(values))
		}
	}
	if len(pk) == 0 {
		return nil, 0, invalidf("Key may not be empty")
	}
	return pk, token.Murmur3(pk), nil
}

func longest(vs [][]byte) int {
	n := 0
	for _, v := range vs {
		n = max(n, len(v))
	}
	return n
}

// partitionValues splits a serialized partition key back into one value per
// partition key column.
func (l *tableLayout) partitionValues(pk []byte) ([][]byte, error) {
	if len(l.partition) == 1 {
		return [][]byte{pk}, nil
	}
	return keys.DecomposePartitionKey(pk, len(l.partition))
}

// prefix returns the storage key prefix of a partition.
func (l *tableLayout) prefix(tok int64, pk []byte) []byte {
	return keys.AppendPartitionPrefix(nil, tok, pk)
}

// headerKey returns the key of a partition's header entry.
func (l *tableLayout) headerKey(tok int64, pk []byte) []byte {
	return keys.HeaderKey(nil, tok, pk)
}

// rowKey returns the storage key of the row with the given clustering
// values, one per clustering column.
func (l *tableLayout) rowKey(tok int64, pk []byte, clustering [][]byte) ([]byte, error) {
	if len(clustering) != len(l.clustering) {
		return nil, fmt.Errorf("exec: %d clustering values for %d columns", len(clustering), len(l.clustering))
	}
	return keys.RowKey(nil, tok, pk, clustering, l.clusteringTypes, l.clusteringDesc)
}

// bound returns a slice bound within a partition (prefix from l.prefix) for
// a clustering prefix; see keys.AppendBound for the kinds.
func (l *tableLayout) bound(prefix []byte, clustering [][]byte, kind keys.BoundKind) ([]byte, error) {
	if len(clustering) > len(l.clustering) {
		return nil, fmt.Errorf("exec: %d clustering values for %d columns", len(clustering), len(l.clustering))
	}
	return keys.AppendBound(nil, prefix, clustering, l.clusteringTypes[:len(clustering)], l.clusteringDesc[:len(clustering)], kind)
}

// clusteringValues decodes the clustering values of a row key.
func (l *tableLayout) clusteringValues(rowKey []byte) ([][]byte, error) {
	return keys.DecodeClustering(rowKey, l.clusteringTypes, l.clusteringDesc)
}

// Element paths of non-frozen collections.
//
// A cell of a non-frozen collection is addressed by its path (model.Cell.Path),
// which must order by bytes.Compare as CQL orders the elements: a list by the
// element's timeuuid, a set by the element, a map by the key. A path is the
// clustering encoding of package keys for one ascending component (its marker
// byte and order-preserving encoding), cut out of a row key built around it;
// elementFromPath rebuilds such a key to decode it. Reusing the clustering
// encoding keeps one order-preserving codec for the whole engine.

// pathKeyPrefix is the row-key prefix paths are cut from: token 0, an empty
// partition key and the row kind.
var pathKeyPrefix = append(keys.AppendPartitionPrefix(nil, 0, nil), byte(keys.KindRow))

// elementPath returns the cell path of an element: v is a list element's
// timeuuid, a set element or a map key, and t its type.
func elementPath(t *cqltype.Type, v []byte) ([]byte, error) {
	key, err := keys.RowKey(nil, 0, nil, [][]byte{v}, []*cqltype.Type{t}, []bool{false})
	if err != nil {
		return nil, err
	}
	// Drop the prefix and the end-of-row byte.
	return key[len(pathKeyPrefix) : len(key)-1], nil
}

// elementFromPath decodes a cell path made by elementPath for type t.
func elementFromPath(t *cqltype.Type, path []byte) ([]byte, error) {
	key := make([]byte, 0, len(pathKeyPrefix)+len(path)+1)
	key = append(append(append(key, pathKeyPrefix...), path...), 0x01)
	vals, err := keys.DecodeClustering(key, []*cqltype.Type{t}, []bool{false})
	if err != nil {
		return nil, err
	}
	if len(vals) != 1 {
		return nil, fmt.Errorf("%w: cell path holds %d values", keys.ErrCorrupt, len(vals))
	}
	// The key encoding lets any type be empty; not every type may be.
	if err := cqltype.Validate(t, vals[0]); err != nil {
		return nil, fmt.Errorf("%w: cell path: %w", keys.ErrCorrupt, err)
	}
	return vals[0], nil
}

// pathType returns the type whose values address the cells of a non-frozen
// collection of type t: timeuuid for lists, the element type for sets, the
// key type for maps.
func pathType(t *cqltype.Type) *cqltype.Type {
	switch t.Kind {
	case cqltype.List:
		return cqltype.TimeuuidType
	case cqltype.Set, cqltype.Map:
		return t.Elems[0]
	}
	return nil
}
