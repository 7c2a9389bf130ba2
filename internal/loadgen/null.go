package loadgen

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"flag"
	"log/slog"
	"net"
	"net/netip"
	"strings"

	"github.com/google/uuid"

	"github.com/sedimentdb/sediment/frontend/transport"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/cqltype"
)

// NullHandler is a transport.Handler that does no work: it answers the
// statements of the workloads (see the package comment) and those drivers
// issue when they connect with valid minimal results, so that a benchmark
// against it measures the protocol path alone.
//
//	statement                        answer
//	-------------------------------  -----------------------------------------
//	INSERT, UPDATE, BATCH            Void
//	the read (SELECT v ...)          one row: a blob of RowSize bytes
//	the scan (SELECT ck, v ...)      one row: ck 0 and a blob of RowSize bytes
//	CREATE ...                       Void (what IF NOT EXISTS gives when the
//	                                 object exists)
//	USE ks                           Set_keyspace
//	system.local                     one row: this node, owning token 0 of the
//	                                 Murmur3 partitioner
//	system.peers, system.peers_v2    no rows: a cluster of one node
//	system_schema.keyspaces          SimpleStrategy, replication factor 1
//
// Any other statement is an Invalid error naming it. Prepared IDs are the
// MD5 of the statement's text, so every connection and every server shares
// them. The handler is safe for concurrent use.
type NullHandler struct {
	byText map[string]*nullStatement
	byID   map[string]*nullStatement
}

var _ transport.Handler = (*NullHandler)(nil)

// nullStatement is a statement the NullHandler knows and its answer.
type nullStatement struct {
	statement
	id   []byte
	rows [][][]byte // nil for a write
}

// NewNullHandler returns a handler for the workloads over the tables of
// keyspace ks named by table, whose reads return blobs of rowSize bytes and
// whose system.local says the node is at addr.
func NewNullHandler(ks, table string, rowSize int, addr netip.Addr) *NullHandler {
	h := &NullHandler{byText: map[string]*nullStatement{}, byID: map[string]*nullStatement{}}
	w := newWorkloadStatements(ks, table)
	blob := make([]byte, rowSize)
	h.add(w.insert, nil)
	h.add(w.counter, nil)
	h.add(w.read, [][][]byte{{blob}})
	h.add(w.scan, [][][]byte{{binary.BigEndian.AppendUint64(nil, 0), blob}})
	h.addSystem(addr.Unmap())
	return h
}

func (h *NullHandler) add(s statement, rows [][][]byte) {
	text := normalize(s.text)
	sum := md5.Sum([]byte(text))
	ns := &nullStatement{statement: s, id: sum[:], rows: rows}
	if s.result != nil && rows == nil {
		ns.rows = [][][]byte{}
	}
	h.byText[text] = ns
	h.byID[string(ns.id)] = ns
}

// addSystem adds the system tables drivers read to find the cluster's nodes,
// their tokens and the replication of keyspaces.
func (h *NullHandler) addSystem(addr netip.Addr) {
	text, inet, uid := cqltype.TextType, cqltype.InetType, cqltype.UUIDType
	intT, tokens := cqltype.IntType, cqltype.SetOf(cqltype.TextType, false)
	cols := func(ks, table string, nameTypes ...any) []wire.ColumnSpec {
		var c []wire.ColumnSpec
		for i := 0; i < len(nameTypes); i += 2 {
			c = append(c, wire.ColumnSpec{Keyspace: ks, Table: table, Name: nameTypes[i].(string), Type: nameTypes[i+1].(*cqltype.Type)})
		}
		return c
	}
	hostID, schemaID := uuid.NewSHA1(uuid.NameSpaceOID, []byte("sediment null host")), uuid.NewSHA1(uuid.NameSpaceOID, []byte("sediment null schema"))
	ip := addr.AsSlice()
	h.add(statement{
		text: "SELECT * FROM system.local WHERE key='local'",
		result: cols("system", "local",
			"key", text, "bootstrapped", text, "broadcast_address", inet, "cluster_name", text,
			"cql_version", text, "data_center", text, "host_id", uid, "listen_address", inet,
			"native_protocol_version", text, "partitioner", text, "rack", text,
			"release_version", text, "rpc_address", inet, "schema_version", uid, "tokens", tokens),
	}, [][][]byte{{
		[]byte("local"), []byte("COMPLETED"), ip, []byte("Sediment null"),
		[]byte(transport.CQLVersion), []byte("datacenter1"), hostID[:], ip,
		[]byte("4"), []byte("org.apache.cassandra.dht.Murmur3Partitioner"), []byte("rack1"),
		[]byte("4.0.0"), ip, schemaID[:], set([]byte("0")),
	}})
	h.add(statement{
		text:   "SELECT schema_version FROM system.local WHERE key='local'",
		result: cols("system", "local", "schema_version", uid),
	}, [][][]byte{{schemaID[:]}})
	h.add(statement{
		text: "SELECT * FROM system.peers",
		result: cols("system", "peers",
			"peer", inet, "data_center", text, "host_id", uid, "preferred_ip", inet, "rack", text,
			"release_version", text, "rpc_address", inet, "schema_version", uid, "tokens", tokens),
	}, nil)
	h.add(statement{
		text: "SELECT * FROM system.peers_v2",
		result: cols("system", "peers_v2",
			"peer", inet, "peer_port", intT, "data_center", text, "host_id", uid,
			"native_address", inet, "native_port", intT, "preferred_ip", inet, "preferred_port", intT,
			"rack", text, "release_version", text, "schema_version", uid, "tokens", tokens),
	}, nil)
	replication := cqltype.MapOf(text, text, false)
	h.add(statement{
		text:   "SELECT * FROM system_schema.keyspaces",
		result: cols("system_schema", "keyspaces", "keyspace_name", text, "durable_writes", cqltype.BooleanType, "replication", replication),
	}, nil)
	h.add(statement{
		text:   "SELECT durable_writes, replication FROM system_schema.keyspaces WHERE keyspace_name = ?",
		bound:  cols("system_schema", "keyspaces", "keyspace_name", text),
		pk:     []uint16{0},
		result: cols("system_schema", "keyspaces", "durable_writes", cqltype.BooleanType, "replication", replication),
	}, [][][]byte{{{1}, textMap(
		[]byte("class"), []byte("org.apache.cassandra.locator.SimpleStrategy"),
		[]byte("replication_factor"), []byte("1"),
	)}})
}

// set serializes a set: an int32 count, then each element as an int32
// length and its bytes.
func set(elems ...[]byte) []byte { return collection(len(elems), elems) }

// textMap serializes a map of alternating keys and values: the count of its
// entries, then each key and value as a set's elements are.
func textMap(kvs ...[]byte) []byte { return collection(len(kvs)/2, kvs) }

func collection(n int, elems [][]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(n))
	for _, e := range elems {
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

// normalize folds runs of white space into one space, so that statements
// match whatever their layout.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// Query answers a statement given as text.
func (h *NullHandler) Query(_ context.Context, _ *transport.Session, q *wire.Query) (wire.Result, error) {
	text := normalize(q.Query)
	if s := h.byText[text]; s != nil {
		return s.answer(q.Params)
	}
	verb, rest, _ := strings.Cut(text, " ")
	switch strings.ToUpper(verb) {
	case "USE":
		return &wire.SetKeyspace{Keyspace: strings.Trim(rest, `"`)}, nil
	case "CREATE":
		return &wire.Void{}, nil
	}
	return nil, wire.Errorf(wire.CodeInvalid, "loadgen: the null handler does not know the statement %q", q.Query)
}

// Prepare prepares a statement the handler knows.
func (h *NullHandler) Prepare(_ context.Context, _ *transport.Session, p *wire.Prepare) (*wire.Prepared, error) {
	s := h.byText[normalize(p.Query)]
	if s == nil {
		return nil, wire.Errorf(wire.CodeInvalid, "loadgen: the null handler does not know the statement %q", p.Query)
	}
	return &wire.Prepared{
		ID:     s.id,
		Bound:  wire.Metadata{Columns: s.bound, PKIndexes: s.pk},
		Result: wire.Metadata{Columns: s.result},
	}, nil
}

// Execute answers a prepared statement.
func (h *NullHandler) Execute(_ context.Context, _ *transport.Session, e *wire.Execute) (wire.Result, error) {
	s := h.byID[string(e.ID)]
	if s == nil {
		err := wire.Errorf(wire.CodeUnprepared, "loadgen: prepared statement %x is unknown", e.ID)
		err.ID = e.ID
		return nil, err
	}
	return s.answer(e.Params)
}

// Batch answers Void to a batch of statements the handler knows.
func (h *NullHandler) Batch(_ context.Context, _ *transport.Session, b *wire.Batch) (wire.Result, error) {
	for _, c := range b.Children {
		if c.ID != nil && h.byID[string(c.ID)] == nil {
			err := wire.Errorf(wire.CodeUnprepared, "loadgen: prepared statement %x is unknown", c.ID)
			err.ID = c.ID
			return nil, err
		}
	}
	return &wire.Void{}, nil
}

// answer returns the statement's result for the parameters p, after checking
// that they bind every marker.
func (s *nullStatement) answer(p wire.QueryParams) (wire.Result, error) {
	if len(p.Values) != len(s.bound) {
		return nil, wire.Errorf(wire.CodeInvalid, "there were %d markers(?) in CQL but %d bound variables", len(s.bound), len(p.Values))
	}
	if s.rows == nil {
		return &wire.Void{}, nil
	}
	return &wire.Rows{Metadata: wire.Metadata{Columns: s.result, NoMetadata: p.SkipMetadata}, Rows: s.rows}, nil
}

// NullServer is a CQL server on 127.0.0.1 answering with a NullHandler.
type NullServer struct {
	srv  *transport.Server
	addr string
	done chan struct{}
}

// StartNullServer serves h on a free port of 127.0.0.1 with the frontend's
// default configuration until Close.
func StartNullServer(h transport.Handler) (*NullServer, error) {
	var fc transport.Config
	fc.RegisterFlags(flag.NewFlagSet("cql", flag.ContinueOnError)) // the defaults
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	fc.ListenAddress = ln.Addr().String()
	srv, err := transport.New(fc, h, transport.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &NullServer{srv: srv, addr: ln.Addr().String(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		srv.Serve(ln)
	}()
	return s, nil
}

// Addr is the server's address, 127.0.0.1:port.
func (s *NullServer) Addr() string { return s.addr }

// Close stops the server and waits for it.
func (s *NullServer) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}
