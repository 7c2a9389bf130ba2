package exec

import (
	"cmp"
	"crypto/md5"
	"encoding/binary"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/internal/cqltype"
	"github.com/sedimentdb/sediment/manifest"
)

// System tables.
//
// Drivers learn the cluster and the schema from Cassandra's system tables.
// Sediment answers them from the View, as virtual read-only tables with
// Cassandra 4.0's columns and types:
//
//	keyspace               tables
//	---------------------  ----------------------------------------------------
//	system                 local, peers, peers_v2
//	system_schema          keyspaces, tables, columns, types, functions,
//	                       aggregates, indexes, views, triggers, dropped_columns
//	system_virtual_schema  keyspaces, tables, columns
//
// Tokens: frontends own no data, yet token-aware drivers route by the tokens
// each host reports, and refuse hosts without any. Every frontend therefore
// reports a share of the ring: the live frontends, ordered by host ID, split it
// into vnodesPerFrontend × n equal ranges dealt out in turn, so drivers spread
// their requests evenly over the frontends. Every frontend derives the same
// assignment from the same member list.

// The keyspaces Sediment answers from the View rather than from storage.
const (
	ksSystem        = "system"
	ksSystemSchema  = "system_schema"
	ksSystemVirtual = "system_virtual_schema"
	ksSystemAuth    = "system_auth"
	// ksSystemTraces holds the traced requests of this frontend (package
	// tracing); unlike the keyspaces above, DDL treats it as Cassandra's
	// replicated keyspace.
	ksSystemTraces = "system_traces"
)

// What system.local tells drivers about the server.
const (
	releaseVersion  = "4.0.11"
	cqlVersion      = "3.4.5"
	partitionerName = "org.apache.cassandra.dht.Murmur3Partitioner"
	// vnodesPerFrontend is how many tokens each frontend reports.
	vnodesPerFrontend = 16
	// RoleFrontend is the only role of a frontend's CQL endpoint in the
	// member list; the member's address is the CQL address.
	RoleFrontend = "frontend"
)

// isSystemKeyspace reports whether ks is one of the read-only system
// keyspaces.
func isSystemKeyspace(ks string) bool {
	switch ks {
	case ksSystem, ksSystemSchema, ksSystemVirtual, ksSystemAuth:
		return true
	}
	return false
}

// sysColumn is a column of a system table.
type sysColumn struct {
	name string
	typ  *cqltype.Type
	kind string // manifest.Kind*
}

// sysTable is a system table: its columns (partition key first, then
// clustering, then the others) and how to list its rows.
type sysTable struct {
	keyspace, name, comment string
	columns                 []sysColumn
	// partition and clustering are the indexes of the partition key and
	// clustering columns in columns, in key order.
	partition, clustering []int
	// rows lists the rows, each one value per column (nil for null), in
	// any order: sortedRows puts them in Cassandra's.
	rows func(e *Executor) [][][]byte
}

func (t *sysTable) column(name string) int {
	return slices.IndexFunc(t.columns, func(c sysColumn) bool { return c.name == name })
}

// defineTable builds a sysTable from a column list written "name type",
// with the partition key and clustering columns named.
func defineTable(ks, name, comment string, pk, ck []string, cols string, rows func(*Executor) [][][]byte) *sysTable {
	t := &sysTable{keyspace: ks, name: name, comment: comment, rows: rows}
	for _, def := range splitTopLevel(cols) {
		def = strings.TrimSpace(def)
		n, typ, _ := strings.Cut(def, " ")
		c := sysColumn{name: n, typ: cqltype.MustParse(strings.TrimSpace(typ)), kind: manifest.KindRegular}
		switch {
		case slices.Contains(pk, n):
			c.kind = manifest.KindPartitionKey
		case slices.Contains(ck, n):
			c.kind = manifest.KindClustering
		}
		t.columns = append(t.columns, c)
	}
	// Key columns first, in key order, then the others as Cassandra's
	// ColumnMetadata orders them, which is what SELECT * returns: simple
	// columns before non-frozen collections, each by name.
	rank := func(c sysColumn) int {
		if i := slices.Index(pk, c.name); i >= 0 {
			return i
		}
		if i := slices.Index(ck, c.name); i >= 0 {
			return len(pk) + i
		}
		if isComplex(c.typ) {
			return len(pk) + len(ck) + 1
		}
		return len(pk) + len(ck)
	}
	slices.SortFunc(t.columns, func(a, b sysColumn) int {
		ra, rb := rank(a), rank(b)
		if ra < len(pk)+len(ck) || rb < len(pk)+len(ck) {
			return cmp.Compare(ra, rb)
		}
		return cmp.Or(cmp.Compare(ra, rb), strings.Compare(a.name, b.name))
	})
	for i, c := range t.columns {
		switch c.kind {
		case manifest.KindPartitionKey:
			t.partition = append(t.partition, i)
		case manifest.KindClustering:
			t.clustering = append(t.clustering, i)
		}
	}
	return t
}

// splitTopLevel splits a column list at the commas outside angle brackets.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '<':
			depth++
		case '>':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// The table parameters of system_schema.tables and views.
const tableParamColumns = `bloom_filter_fp_chance double, caching frozen<map<text, text>>, cdc boolean, comment text,
	compaction frozen<map<text, text>>, compression frozen<map<text, text>>, crc_check_chance double,
	dclocal_read_repair_chance double, default_time_to_live int, extensions frozen<map<text, blob>>,
	gc_grace_seconds int, id uuid, max_index_interval int, memtable_flush_period_in_ms int,
	min_index_interval int, read_repair_chance double, speculative_retry text, additional_write_policy text,
	read_repair text`

// sysTables lists every system table by keyspace and name.
var sysTables map[string]map[string]*sysTable

func init() { sysTables = defineSysTables() }

func defineSysTables() map[string]map[string]*sysTable {
	list := []*sysTable{
		defineTable(ksSystem, "local", "information about the local node", []string{"key"}, nil,
			`key text, bootstrapped text, broadcast_address inet, broadcast_port int, cluster_name text,
			cql_version text, data_center text, gossip_generation int, host_id uuid, listen_address inet,
			listen_port int, native_protocol_version text, partitioner text, rack text, release_version text,
			rpc_address inet, rpc_port int, schema_version uuid, tokens set<text>, truncated_at map<uuid, blob>`,
			(*Executor).localRows),
		defineTable(ksSystem, "peers", "information about known peers in the cluster", []string{"peer"}, nil,
			`peer inet, data_center text, host_id uuid, preferred_ip inet, rack text, release_version text,
			rpc_address inet, schema_version uuid, tokens set<text>`,
			(*Executor).peersRows),
		defineTable(ksSystem, "peers_v2", "information about known peers in the cluster", []string{"peer"}, []string{"peer_port"},
			`peer inet, peer_port int, data_center text, host_id uuid, native_address inet, native_port int,
			preferred_ip inet, preferred_port int, rack text, release_version text, schema_version uuid,
			tokens set<text>`,
			(*Executor).peersV2Rows),
		defineTable(ksSystemSchema, "keyspaces", "keyspace definitions", []string{"keyspace_name"}, nil,
			`keyspace_name text, durable_writes boolean, replication frozen<map<text, text>>`,
			(*Executor).keyspacesRows),
		defineTable(ksSystemSchema, "tables", "table definitions", []string{"keyspace_name"}, []string{"table_name"},
			`keyspace_name text, table_name text, flags frozen<set<text>>, `+tableParamColumns,
			(*Executor).tablesRows),
		defineTable(ksSystemSchema, "columns", "column definitions", []string{"keyspace_name"}, []string{"table_name", "column_name"},
			`keyspace_name text, table_name text, column_name text, clustering_order text, column_name_bytes blob,
			kind text, position int, type text`,
			(*Executor).columnsRows),
		defineTable(ksSystemSchema, "dropped_columns", "dropped column registry", []string{"keyspace_name"}, []string{"table_name", "column_name"},
			`keyspace_name text, table_name text, column_name text, dropped_time timestamp, kind text, type text`,
			(*Executor).droppedColumnsRows),
		defineTable(ksSystemSchema, "types", "user defined type definitions", []string{"keyspace_name"}, []string{"type_name"},
			`keyspace_name text, type_name text, field_names frozen<list<text>>, field_types frozen<list<text>>`,
			(*Executor).typesRows),
		defineTable(ksSystemSchema, "functions", "user defined function definitions", []string{"keyspace_name"}, []string{"function_name", "argument_types"},
			`keyspace_name text, function_name text, argument_types frozen<list<text>>, argument_names frozen<list<text>>,
			body text, language text, return_type text, called_on_null_input boolean`, nil),
		defineTable(ksSystemSchema, "aggregates", "user defined aggregate definitions", []string{"keyspace_name"}, []string{"aggregate_name", "argument_types"},
			`keyspace_name text, aggregate_name text, argument_types frozen<list<text>>, final_func text, initcond text,
			return_type text, state_func text, state_type text`, nil),
		defineTable(ksSystemSchema, "indexes", "secondary index definitions", []string{"keyspace_name"}, []string{"table_name", "index_name"},
			`keyspace_name text, table_name text, index_name text, kind text, options frozen<map<text, text>>`, nil),
		defineTable(ksSystemSchema, "views", "view definitions", []string{"keyspace_name"}, []string{"view_name"},
			`keyspace_name text, view_name text, base_table_id uuid, base_table_name text, where_clause text,
			include_all_columns boolean, `+tableParamColumns, nil),
		defineTable(ksSystemSchema, "triggers", "trigger definitions", []string{"keyspace_name"}, []string{"table_name", "trigger_name"},
			`keyspace_name text, table_name text, trigger_name text, options frozen<map<text, text>>`, nil),
		defineTable(ksSystemVirtual, "keyspaces", "virtual keyspace definitions", []string{"keyspace_name"}, nil,
			`keyspace_name text`, (*Executor).virtualKeyspacesRows),
		defineTable(ksSystemVirtual, "tables", "virtual table definitions", []string{"keyspace_name"}, []string{"table_name"},
			`keyspace_name text, table_name text, comment text`, (*Executor).virtualTablesRows),
		defineTable(ksSystemVirtual, "columns", "virtual column definitions", []string{"keyspace_name"}, []string{"table_name", "column_name"},
			`keyspace_name text, table_name text, column_name text, clustering_order text, column_name_bytes blob,
			kind text, position int, type text`, (*Executor).virtualColumnsRows),
		defineTable(ksSystemTraces, "sessions", "tracing sessions", []string{"session_id"}, nil,
			`session_id uuid, client inet, command text, coordinator inet, coordinator_port int, duration int,
			parameters map<text, text>, request text, started_at timestamp`, (*Executor).traceSessionsRows),
		defineTable(ksSystemTraces, "events", "tracing events", []string{"session_id"}, []string{"event_id"},
			`session_id uuid, event_id timeuuid, activity text, source inet, source_elapsed int, source_port int, thread text`,
			(*Executor).traceEventsRows),
	}
	m := map[string]map[string]*sysTable{}
	for _, t := range list {
		if m[t.keyspace] == nil {
			m[t.keyspace] = map[string]*sysTable{}
		}
		m[t.keyspace][t.name] = t
	}
	return m
}

// ---- Serialized values --------------------------------------------------

func textValue(s string) []byte { return []byte(s) }

func boolValue(b bool) []byte {
	if b {
		return []byte{1}
	}
	return []byte{0}
}

func intValue(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

func doubleValue(f float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)) }

func timestampValue(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixMilli()))
}

func uuidValue(u uuid.UUID) []byte { return append([]byte(nil), u[:]...) }

func inetValue(a netip.Addr) []byte {
	if !a.IsValid() {
		return nil
	}
	return a.Unmap().AsSlice()
}

// collectionValue serializes a list or set of serialized elements.
func collectionValue(elems [][]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(elems)))
	for _, e := range elems {
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

// textListValue serializes a list<text>; sorted, it is a set<text>.
func textListValue(ss []string) []byte {
	elems := make([][]byte, len(ss))
	for i, s := range ss {
		elems[i] = []byte(s)
	}
	return collectionValue(elems)
}

// textMapValue serializes a map<text, text> sorted by key, as Cassandra
// stores maps.
func textMapValue(m map[string]string) []byte {
	keys := slices.Sorted(maps.Keys(m))
	elems := make([][]byte, 0, 2*len(keys))
	for _, k := range keys {
		elems = append(elems, []byte(k), []byte(m[k]))
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(len(keys)))
	for _, e := range elems {
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

// emptyMap is the serialized empty map.
var emptyMap = []byte{0, 0, 0, 0}

// ---- system.local and peers ---------------------------------------------

// HostIDOf is the host ID a frontend with member ID id reports: the ID
// itself when it is a UUID, else a name-based UUID of it, so that every
// frontend derives the same host ID for a peer.
func HostIDOf(id string) uuid.UUID {
	if u, err := uuid.Parse(id); err == nil {
		return u
	}
	return uuid.NewSHA1(hostNamespace, []byte(id))
}

var hostNamespace = uuid.MustParse("9b1e7a3c-52f4-4f0e-8c55-3d2f6a1b7e90")

// frontend is one frontend as drivers see it.
type frontendHost struct {
	hostID uuid.UUID
	addr   netip.AddrPort
}

// frontends returns the live frontends, this one included, ordered by host
// ID.
func (e *Executor) frontends() []frontendHost {
	now := e.now()
	hosts := []frontendHost{{hostID: e.cfg.Local.HostID, addr: e.localAddr()}}
	for _, m := range e.view.Members() {
		// A CQL endpoint's member has the single role frontend; an ingest
		// node's member lists every role of its process and its RPC
		// address.
		if !slices.Equal(m.Roles, []string{RoleFrontend}) || !m.Live(now, e.cfg.MemberMaxAge) {
			continue
		}
		id := HostIDOf(m.ID)
		if id == e.cfg.Local.HostID {
			continue
		}
		hosts = append(hosts, frontendHost{hostID: id, addr: addrPort(m.Addr)})
	}
	slices.SortFunc(hosts, func(a, b frontendHost) int { return strings.Compare(a.hostID.String(), b.hostID.String()) })
	return hosts
}

// localAddr is this frontend's CQL address; an unspecified host is
// reported as the loopback address, which is where such a server is
// reachable from this machine.
func (e *Executor) localAddr() netip.AddrPort {
	ap := addrPort(e.cfg.Local.Addr)
	if !ap.IsValid() || ap.Addr().IsUnspecified() {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ap.Port())
	}
	return ap
}

// tokensOf returns the tokens of host i of n: its share of the ring.
func tokensOf(i, n int) []string {
	total := uint64(vnodesPerFrontend * n)
	step := math.MaxUint64 / total
	out := make([]string, 0, vnodesPerFrontend)
	for v := range vnodesPerFrontend {
		k := uint64(v*n + i)
		// Offset from the ring's minimum: flipping the sign bit maps unsigned
		// order onto token order.
		tok := int64((k*step + step/2) ^ (1 << 63))
		out = append(out, strconv.FormatInt(tok, 10))
	}
	slices.Sort(out)
	return out
}

// hostTokens returns each frontend's tokens as a serialized set<text>.
func hostTokens(hosts []frontendHost) map[uuid.UUID][]byte {
	out := make(map[uuid.UUID][]byte, len(hosts))
	for i, h := range hosts {
		out[h.hostID] = textListValue(tokensOf(i, len(hosts)))
	}
	return out
}

// startTime is when this process started, system.local's gossip
// generation.
var startTime = time.Now()

func (e *Executor) localRows() [][][]byte {
	hosts := e.frontends()
	tokens := hostTokens(hosts)
	l := e.cfg.Local
	addr := e.localAddr()
	ip := inetValue(addr.Addr())
	row := map[string][]byte{
		"key":                     textValue("local"),
		"bootstrapped":            textValue("COMPLETED"),
		"broadcast_address":       ip,
		"broadcast_port":          intValue(7000),
		"cluster_name":            textValue(l.ClusterName),
		"cql_version":             textValue(cqlVersion),
		"data_center":             textValue(l.DataCenter),
		"gossip_generation":       intValue(int32(startTime.Unix())),
		"host_id":                 uuidValue(l.HostID),
		"listen_address":          ip,
		"listen_port":             intValue(7000),
		"native_protocol_version": textValue("5"), // the highest Sediment speaks, as Cassandra 4 reports its current one
		"partitioner":             textValue(partitionerName),
		"rack":                    textValue(l.Rack),
		"release_version":         textValue(releaseVersion),
		"rpc_address":             ip,
		"rpc_port":                intValue(int32(addr.Port())),
		"schema_version":          uuidValue(e.view.SchemaVersion()),
		"tokens":                  tokens[l.HostID],
		"truncated_at":            nil,
	}
	return [][][]byte{rowOf(sysTables[ksSystem]["local"], row)}
}

func (e *Executor) peersRows() [][][]byte   { return e.peerRows("peers") }
func (e *Executor) peersV2Rows() [][][]byte { return e.peerRows("peers_v2") }

// peerRows is system.peers or system.peers_v2 (table): a row for every
// other frontend with an address; peers_v2 adds the ports and calls the
// CQL address native_address where peers calls it rpc_address.
func (e *Executor) peerRows(table string) [][][]byte {
	hosts := e.frontends()
	tokens := hostTokens(hosts)
	var rows [][][]byte
	for _, h := range hosts {
		if h.hostID == e.cfg.Local.HostID || !h.addr.IsValid() {
			continue
		}
		ip := inetValue(h.addr.Addr())
		row := map[string][]byte{
			"peer":            ip,
			"data_center":     textValue(e.cfg.Local.DataCenter),
			"host_id":         uuidValue(h.hostID),
			"rack":            textValue(e.cfg.Local.Rack),
			"release_version": textValue(releaseVersion),
			"schema_version":  uuidValue(e.view.SchemaVersion()),
			"tokens":          tokens[h.hostID],
		}
		if table == "peers_v2" {
			row["peer_port"] = intValue(7000)
			row["native_address"] = ip
			row["native_port"] = intValue(int32(h.addr.Port()))
		} else {
			row["rpc_address"] = ip
		}
		rows = append(rows, rowOf(sysTables[ksSystem][table], row))
	}
	return rows
}

// rowOf orders a row's values by the table's columns.
func rowOf(t *sysTable, vals map[string][]byte) [][]byte {
	row := make([][]byte, len(t.columns))
	for i, c := range t.columns {
		row[i] = vals[c.name]
	}
	return row
}

// ---- system_schema ------------------------------------------------------

// keyspaces returns the View's keyspaces by name.
func (e *Executor) keyspaces() []*manifest.Keyspace {
	s := e.view.Schema()
	out := make([]*manifest.Keyspace, 0, len(s.Keyspaces))
	for _, name := range slices.Sorted(maps.Keys(s.Keyspaces)) {
		out = append(out, s.Keyspaces[name])
	}
	return out
}

// localKeyspaces are the system keyspaces system_schema lists, with
// LocalStrategy replication as in Cassandra.
var localKeyspaces = []string{ksSystem, ksSystemSchema}

func (e *Executor) keyspacesRows() [][][]byte {
	t := sysTables[ksSystemSchema]["keyspaces"]
	var rows [][][]byte
	for _, ks := range localKeyspaces {
		rows = append(rows, rowOf(t, map[string][]byte{
			"keyspace_name":  textValue(ks),
			"durable_writes": boolValue(true),
			"replication":    textMapValue(map[string]string{"class": "org.apache.cassandra.locator.LocalStrategy"}),
		}))
	}
	for _, ks := range e.keyspaces() {
		rows = append(rows, rowOf(t, map[string][]byte{
			"keyspace_name":  textValue(ks.Name),
			"durable_writes": boolValue(ks.DurableWrites),
			"replication":    textMapValue(ks.Replication),
		}))
	}
	return rows
}

// tableParams returns the table parameter columns of a table's options.
// cdc is null unless a table set it: Cassandra 4.0 writes the column only
// on a node with cdc_enabled, which is off by default.
func tableParams(id uuid.UUID, o manifest.TableOptions) map[string][]byte {
	var cdc []byte
	if o.CDC {
		cdc = boolValue(true)
	}
	return map[string][]byte{
		"cdc":                         cdc,
		"bloom_filter_fp_chance":      doubleValue(o.BloomFilterFPChance),
		"caching":                     textMapValue(o.Caching),
		"comment":                     textValue(o.Comment),
		"compaction":                  textMapValue(withPackage(o.Compaction, compactionPackage)),
		"compression":                 textMapValue(withPackage(o.Compression, compressionPackage)),
		"crc_check_chance":            doubleValue(crcCheckChance(o)),
		"dclocal_read_repair_chance":  doubleValue(0),
		"default_time_to_live":        intValue(o.DefaultTTL),
		"extensions":                  blobMapValue(o.Extensions),
		"gc_grace_seconds":            intValue(o.GCGraceSeconds),
		"id":                          uuidValue(id),
		"max_index_interval":          intValue(o.MaxIndexInterval),
		"memtable_flush_period_in_ms": intValue(o.MemtableFlushPeriod),
		"min_index_interval":          intValue(o.MinIndexInterval),
		"read_repair_chance":          doubleValue(0),
		"speculative_retry":           textValue(o.SpeculativeRetry),
		"additional_write_policy":     textValue(o.AdditionalWritePolicy),
		"read_repair":                 textValue(o.ReadRepair),
	}
}

// blobMapValue serializes a map<text, blob>, its keys in order.
func blobMapValue(m map[string][]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(m[k])))
		b = append(b, m[k]...)
	}
	return b
}

// sysTableOptions returns the options the system table ks.name with
// comment is shown with: Cassandra's defaults, with the grace and the
// memtable flush period that SystemKeyspace and SchemaKeyspace give their
// tables (no grace in system, seven days in system_schema; an hour).
func sysTableOptions(ks, comment string) manifest.TableOptions {
	o := manifest.DefaultTableOptions()
	o.Comment, o.MemtableFlushPeriod = comment, int32(time.Hour/time.Millisecond)
	if ks == ksSystemSchema {
		o.GCGraceSeconds = int32(7 * 24 * time.Hour / time.Second)
	} else {
		o.GCGraceSeconds = 0
	}
	return o
}

// sysTableID is the ID of the system table ks.name, as Cassandra's
// TableId.forSystemTable derives it: the name-based (MD5, version 3) UUID
// of the keyspace and table names run together, so that tools keyed by
// table ID see the same ones as on Cassandra.
func sysTableID(ks, name string) uuid.UUID {
	sum := md5.Sum([]byte(ks + name))
	sum[6] = sum[6]&0x0f | 0x30
	sum[8] = sum[8]&0x3f | 0x80
	return uuid.UUID(sum)
}

func (e *Executor) tablesRows() [][][]byte {
	t := sysTables[ksSystemSchema]["tables"]
	var rows [][][]byte
	for _, ks := range localKeyspaces {
		for _, name := range slices.Sorted(maps.Keys(sysTables[ks])) {
			st := sysTables[ks][name]
			vals := tableParams(sysTableID(ks, name), sysTableOptions(ks, st.comment))
			vals["keyspace_name"], vals["table_name"] = textValue(ks), textValue(name)
			vals["flags"] = textListValue([]string{"compound"})
			rows = append(rows, rowOf(t, vals))
		}
	}
	for _, ks := range e.keyspaces() {
		for _, name := range slices.Sorted(maps.Keys(ks.Tables)) {
			tbl := ks.Tables[name]
			vals := tableParams(tbl.ID, tbl.Options)
			vals["keyspace_name"], vals["table_name"] = textValue(ks.Name), textValue(name)
			flags := []string{"compound"}
			if tableHasCounters(tbl) {
				flags = []string{"compound", "counter"}
			}
			vals["flags"] = textListValue(flags)
			rows = append(rows, rowOf(t, vals))
		}
	}
	return rows
}

// columnRow is one row of system_schema.columns or its virtual twin.
func columnRow(t *sysTable, ks, table, name, kind, typ string, pos int, desc bool) [][]byte {
	order := "none"
	if kind == manifest.KindClustering {
		order = "asc"
		if desc {
			order = "desc"
		}
	}
	if kind != manifest.KindPartitionKey && kind != manifest.KindClustering {
		pos = -1
	}
	return rowOf(t, map[string][]byte{
		"keyspace_name":     textValue(ks),
		"table_name":        textValue(table),
		"column_name":       textValue(name),
		"clustering_order":  textValue(order),
		"column_name_bytes": []byte(name),
		"kind":              textValue(kind),
		"position":          intValue(int32(pos)),
		"type":              textValue(typ),
	})
}

// sysColumnRows lists the columns of system tables.
func sysColumnRows(t *sysTable, keyspaces []string) [][][]byte {
	var rows [][][]byte
	for _, ks := range keyspaces {
		for _, name := range slices.Sorted(maps.Keys(sysTables[ks])) {
			pos := map[string]int{}
			cols := slices.Clone(sysTables[ks][name].columns)
			positions := make(map[string]int, len(cols))
			for _, c := range cols {
				positions[c.name] = pos[c.kind]
				pos[c.kind]++
			}
			// Rows in clustering order: by column name, as UTF-8 bytes.
			slices.SortFunc(cols, func(a, b sysColumn) int { return strings.Compare(a.name, b.name) })
			for _, c := range cols {
				rows = append(rows, columnRow(t, ks, name, c.name, c.kind, c.typ.String(), positions[c.name], false))
			}
		}
	}
	return rows
}

func (e *Executor) columnsRows() [][][]byte {
	t := sysTables[ksSystemSchema]["columns"]
	rows := sysColumnRows(t, localKeyspaces)
	for _, ks := range e.keyspaces() {
		for _, name := range slices.Sorted(maps.Keys(ks.Tables)) {
			tbl := ks.Tables[name]
			// Rows in clustering order: by column name, as UTF-8 bytes.
			cols := slices.SortedFunc(slices.Values(tbl.Columns), func(a, b manifest.Column) int { return strings.Compare(a.Name, b.Name) })
			for _, c := range cols {
				pos, desc := -1, false
				if i := slices.Index(tbl.PartitionKey, c.ID); i >= 0 {
					pos = i
				}
				if i := slices.IndexFunc(tbl.Clustering, func(ck manifest.ClusteringKey) bool { return ck.ID == c.ID }); i >= 0 {
					pos, desc = i, tbl.Clustering[i].Desc
				}
				rows = append(rows, columnRow(t, ks.Name, name, c.Name, c.Kind, c.Type, pos, desc))
			}
		}
	}
	return rows
}

func (e *Executor) droppedColumnsRows() [][][]byte {
	t := sysTables[ksSystemSchema]["dropped_columns"]
	var rows [][][]byte
	for _, ks := range e.keyspaces() {
		for _, name := range slices.Sorted(maps.Keys(ks.Tables)) {
			// One row per column, its last drop, as the table's key says.
			for _, d := range lastDrops(ks.Tables[name].Dropped) {
				rows = append(rows, rowOf(t, map[string][]byte{
					"keyspace_name": textValue(ks.Name),
					"table_name":    textValue(name),
					"column_name":   textValue(d.Name),
					"dropped_time":  timestampValue(time.UnixMicro(d.DroppedAt)),
					"kind":          textValue(manifest.KindRegular),
					"type":          textValue(droppedType(ks, d.Type)),
				}))
			}
		}
	}
	return rows
}

// droppedType is a dropped column's type as Cassandra 4.0 records it
// (TableMetadata.Builder.recordColumnDrop): every user type replaced by the
// tuple of its fields, so that the record outlives the type. A type that no
// longer resolves is shown as stored.
func droppedType(ks *manifest.Keyspace, typ string) string {
	t, err := cqltype.Parse(typ, udtResolver(ks))
	if err != nil {
		return typ
	}
	return expandUserTypes(t).String()
}

// expandUserTypes returns t with every user type, at any depth, replaced by
// a tuple of its field types.
func expandUserTypes(t *cqltype.Type) *cqltype.Type {
	if len(t.Elems) == 0 {
		return t
	}
	elems := make([]*cqltype.Type, len(t.Elems))
	for i, el := range t.Elems {
		elems[i] = expandUserTypes(el)
	}
	if t.Kind == cqltype.UDT {
		return cqltype.TupleOf(elems...)
	}
	u := *t
	u.Elems = elems
	return &u
}

func (e *Executor) typesRows() [][][]byte {
	t := sysTables[ksSystemSchema]["types"]
	var rows [][][]byte
	for _, ks := range e.keyspaces() {
		for _, name := range slices.Sorted(maps.Keys(ks.Types)) {
			u := ks.Types[name]
			names := make([]string, len(u.Fields))
			types := make([]string, len(u.Fields))
			for i, f := range u.Fields {
				names[i], types[i] = f.Name, f.Type
			}
			rows = append(rows, rowOf(t, map[string][]byte{
				"keyspace_name": textValue(ks.Name),
				"type_name":     textValue(name),
				"field_names":   textListValue(names),
				"field_types":   textListValue(types),
			}))
		}
	}
	return rows
}

// ---- system_virtual_schema ----------------------------------------------

var virtualKeyspaces = []string{ksSystemVirtual}

func (e *Executor) virtualKeyspacesRows() [][][]byte {
	t := sysTables[ksSystemVirtual]["keyspaces"]
	var rows [][][]byte
	for _, ks := range virtualKeyspaces {
		rows = append(rows, rowOf(t, map[string][]byte{"keyspace_name": textValue(ks)}))
	}
	return rows
}

func (e *Executor) virtualTablesRows() [][][]byte {
	t := sysTables[ksSystemVirtual]["tables"]
	var rows [][][]byte
	for _, ks := range virtualKeyspaces {
		for _, name := range slices.Sorted(maps.Keys(sysTables[ks])) {
			rows = append(rows, rowOf(t, map[string][]byte{
				"keyspace_name": textValue(ks),
				"table_name":    textValue(name),
				"comment":       textValue(sysTables[ks][name].comment),
			}))
		}
	}
	return rows
}

func (e *Executor) virtualColumnsRows() [][][]byte {
	return sysColumnRows(sysTables[ksSystemVirtual]["columns"], virtualKeyspaces)
}

// traceSessionsRows lists the traced requests kept: duration is null while
// a request runs, as Cassandra writes it at the end.
func (e *Executor) traceSessionsRows() [][][]byte {
	if e.cfg.Traces == nil {
		return nil
	}
	t := sysTables[ksSystemTraces]["sessions"]
	var rows [][][]byte
	for _, s := range e.cfg.Traces.Sessions() {
		request, params, _, duration, done := s.Snapshot()
		row := map[string][]byte{
			"session_id":  uuidValue(s.ID),
			"client":      inetValue(s.Client),
			"command":     textValue(s.Command),
			"coordinator": inetValue(s.Coordinator),
			"parameters":  textMapValue(params),
			"request":     textValue(request),
			"started_at":  timestampValue(s.Started),
		}
		if done {
			row["duration"] = intValue(int32(min(duration.Microseconds(), math.MaxInt32)))
		}
		rows = append(rows, rowOf(t, row))
	}
	return rows
}

// traceEventsRows lists the steps of the traced requests kept.
func (e *Executor) traceEventsRows() [][][]byte {
	if e.cfg.Traces == nil {
		return nil
	}
	t := sysTables[ksSystemTraces]["events"]
	var rows [][][]byte
	for _, s := range e.cfg.Traces.Sessions() {
		_, _, events, _, _ := s.Snapshot()
		for _, ev := range events {
			rows = append(rows, rowOf(t, map[string][]byte{
				"session_id":     uuidValue(s.ID),
				"event_id":       uuidValue(ev.ID),
				"activity":       textValue(ev.Activity),
				"source":         inetValue(s.Coordinator),
				"source_elapsed": intValue(int32(min(ev.Elapsed.Microseconds(), math.MaxInt32))),
				"thread":         textValue(ev.Thread),
			}))
		}
	}
	return rows
}
