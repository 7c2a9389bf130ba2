package exec

import (
	"context"
	"net"
	"net/netip"

	"github.com/sedimentdb/sediment/frontend/cql/ast"
	"github.com/sedimentdb/sediment/frontend/transport"
	"github.com/sedimentdb/sediment/frontend/wire"
)

var _ transport.Handler = (*Handler)(nil)

// Handler serves the native protocol server's requests with an Executor:
// it turns wire messages into the executor's parameters and its results and
// errors back into wire messages.
type Handler struct{ e *Executor }

// Handler returns the transport.Handler of the executor.
func (e *Executor) Handler() *Handler { return &Handler{e: e} }

// params converts a request's query parameters.
func params(q *wire.QueryParams) *Params {
	p := &Params{
		Names:             q.Names,
		PageSize:          int(q.PageSize),
		PagingState:       q.PagingState,
		Consistency:       uint16(q.Consistency),
		SerialConsistency: uint16(q.SerialConsistency),
		Keyspace:          q.Keyspace,
		NowInSeconds:      int64(q.NowInSeconds),
		HasNowInSeconds:   q.HasNowInSeconds,
	}
	if q.HasTimestamp {
		p.Timestamp = q.Timestamp
	}
	p.Values, p.Unset = splitValues(q.Values)
	return p
}

// splitValues separates wire values into bytes (nil for null) and unset
// flags.
func splitValues(vs []wire.Value) ([][]byte, []bool) {
	vals := make([][]byte, len(vs))
	unset := make([]bool, len(vs))
	for i, v := range vs {
		switch v.Kind {
		case wire.Unset:
			unset[i] = true
		case wire.Null:
		default:
			vals[i] = v.Bytes
			if vals[i] == nil {
				vals[i] = []byte{}
			}
		}
	}
	return vals, unset
}

// Query implements transport.Handler.
func (h *Handler) Query(ctx context.Context, s *transport.Session, q *wire.Query) (wire.Result, error) {
	p := params(&q.Params)
	res, err := h.e.Query(ctx, s, q.Query, p)
	return h.result(res, q.Params.SkipMetadata, err)
}

// Prepare implements transport.Handler.
func (h *Handler) Prepare(ctx context.Context, s *transport.Session, p *wire.Prepare) (*wire.Prepared, error) {
	pr, err := h.e.Prepare(ctx, s, p.Query, p.Keyspace)
	if err != nil {
		return nil, wireError(err)
	}
	return &wire.Prepared{
		ID:    pr.ID,
		Bound: wire.Metadata{Columns: pr.Binds, PKIndexes: pr.PKIndexes},
		// A statement without rows answers Cassandra's
		// ResultMetadata.EMPTY: no columns, flagged NO_METADATA.
		Result: wire.Metadata{Columns: pr.Columns, NoMetadata: len(pr.Columns) == 0},
	}, nil
}

// Execute implements transport.Handler.
func (h *Handler) Execute(ctx context.Context, s *transport.Session, x *wire.Execute) (wire.Result, error) {
	res, err := h.e.Execute(ctx, s, x.ID, params(&x.Params))
	changed := res != nil && res.MetadataChanged
	r, err := h.result(res, x.Params.SkipMetadata && !changed, err)
	if rows, ok := r.(*wire.Rows); ok && changed {
		// The server sends the columns, and from v5 their ID, though
		// the client asked to skip them.
		rows.Metadata.NewMetadataID = wire.MetadataID(nil, rows.Metadata.Columns)
	}
	return r, err
}

// Batch implements transport.Handler.
func (h *Handler) Batch(ctx context.Context, s *transport.Session, b *wire.Batch) (wire.Result, error) {
	req := &BatchRequest{
		Consistency:       uint16(b.Consistency),
		SerialConsistency: uint16(b.SerialConsistency),
		Keyspace:          b.Keyspace,
		NowInSeconds:      int64(b.NowInSeconds),
		HasNowInSeconds:   b.HasNowInSeconds,
	}
	switch b.Type {
	case wire.UnloggedBatch:
		req.Type = ast.BatchUnlogged
	case wire.CounterBatch:
		req.Type = ast.BatchCounter
	default:
		req.Type = ast.BatchLogged
	}
	if b.HasTimestamp {
		req.Timestamp = b.Timestamp
	}
	for _, c := range b.Children {
		vals, unset := splitValues(c.Values)
		req.Children = append(req.Children, BatchChild{Query: c.Query, ID: c.ID, Values: vals, Unset: unset})
	}
	res, err := h.e.Batch(ctx, s, req)
	return h.result(res, false, err)
}

// result converts an executor result to its wire message.
func (h *Handler) result(res *Result, skipMetadata bool, err error) (wire.Result, error) {
	if err != nil {
		return nil, wireError(err)
	}
	switch res.Kind {
	case ResultRows:
		return &wire.Rows{
			Metadata: wire.Metadata{Columns: res.Columns, PagingState: res.PagingState, NoMetadata: skipMetadata, ColumnCount: len(res.Columns)},
			Rows:     res.Rows,
		}, nil
	case ResultSetKeyspace:
		return &wire.SetKeyspace{Keyspace: res.Keyspace}, nil
	case ResultSchemaChange:
		sc := wireSchemaChange(res.Change)
		return &sc, nil
	}
	return &wire.Void{}, nil
}

func wireSchemaChange(c SchemaChange) wire.SchemaChange {
	return wire.SchemaChange{Change: c.Change, Target: c.Target, Keyspace: c.Keyspace, Name: c.Name, Args: c.Args}
}

// SchemaEvent returns the EVENT a schema change is pushed as.
func SchemaEvent(c SchemaChange) *wire.Event {
	return &wire.Event{Type: wire.SchemaChanged, Schema: wireSchemaChange(c)}
}

// addrPort parses a host:port CQL address for events and system tables.
func addrPort(hostport string) netip.AddrPort {
	if ap, err := netip.ParseAddrPort(hostport); err == nil {
		return ap
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.AddrPort{}
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}
	}
	a, _ := netip.AddrFromSlice(ips[0])
	pp, _ := netip.ParseAddrPort(net.JoinHostPort(a.Unmap().String(), port))
	return pp
}
