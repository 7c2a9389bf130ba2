package manifest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
)

// kindRequests is the bucket of operators' requests to the cluster,
// "<cluster>_requests":
//
//	key          document
//	c.<table>    CompactionRequest: a major compaction of the table
//
// It is made by the first request, not by Open: clusters nobody asked
// anything of do not carry it, and readers treat its absence as no
// requests. Requests are not archived: they are instructions to running
// processes, not state to rebuild.
const kindRequests = "requests"

// CompactionRequest asks the compaction planner for a major compaction of
// one table: every range merged into one level's disjoint run. One request
// per table is kept; a new one replaces it, done or not. A done request
// stays, with DoneAt, until the next one or until the planner deletes it a
// while after it finished, so that the operator who asked sees it end.
type CompactionRequest struct {
	ID          uuid.UUID `json:"id"`
	Table       uuid.UUID `json:"table"`
	RequestedAt time.Time `json:"requested_at"`
	// DoneAt is when the planner found every range compacted; zero while
	// pending.
	DoneAt time.Time `json:"done_at,omitzero"`
}

// Done reports whether the planner finished the request.
func (r CompactionRequest) Done() bool { return !r.DoneAt.IsZero() }

func compactionRequestKey(table uuid.UUID) string { return "c." + table.String() }

// requestsBucket returns the requests bucket, created if create is set;
// without create it returns nil if the bucket does not exist.
func (m *Manifest) requestsBucket(ctx context.Context, create bool) (*bucket, error) {
	name := m.cluster + "_" + kindRequests
	if create {
		return openBucket(ctx, m.js, name, kindRequests, m.opts.Replicas)
	}
	kv, err := m.js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifest: open bucket %s: %w", name, err)
	}
	return newBucket(ctx, m.js, kv, name, false)
}

// RequestCompaction records a new major compaction request of table,
// replacing the table's previous one, and returns it.
func (m *Manifest) RequestCompaction(ctx context.Context, table uuid.UUID) (CompactionRequest, error) {
	if table == uuid.Nil {
		return CompactionRequest{}, fmt.Errorf("%w: a compaction request needs a table", ErrInvalid)
	}
	b, err := m.requestsBucket(ctx, true)
	if err != nil {
		return CompactionRequest{}, err
	}
	req := CompactionRequest{ID: uuid.New(), Table: table, RequestedAt: m.opts.Now().UTC()}
	err = mutateJSON(ctx, m, b, compactionRequestKey(table), func(*CompactionRequest) (*CompactionRequest, error) {
		return &req, nil
	})
	return req, err
}

// CompactionRequest returns table's request, done or not; ErrNotFound if
// there is none.
func (m *Manifest) CompactionRequest(ctx context.Context, table uuid.UUID) (CompactionRequest, error) {
	b, err := m.requestsBucket(ctx, false)
	if err != nil {
		return CompactionRequest{}, err
	}
	var r *CompactionRequest
	if b != nil {
		if r, err = getJSON[CompactionRequest](ctx, b, compactionRequestKey(table)); err != nil {
			return CompactionRequest{}, err
		}
	}
	if r == nil {
		return CompactionRequest{}, fmt.Errorf("%w: compaction request of table %s", ErrNotFound, table)
	}
	if r.Table != table {
		return CompactionRequest{}, fmt.Errorf("%w: request of table %s under the key of %s", ErrCorrupt, r.Table, table)
	}
	return *r, nil
}

// CompactionRequests returns every compaction request, done or not, by
// table.
func (m *Manifest) CompactionRequests(ctx context.Context) ([]CompactionRequest, error) {
	b, err := m.requestsBucket(ctx, false)
	if err != nil || b == nil {
		return nil, err
	}
	docs, err := list(ctx, b)
	if err != nil {
		return nil, err
	}
	out := make([]CompactionRequest, 0, len(docs))
	for k, raw := range docs {
		var r CompactionRequest
		if err := decodeDoc(raw, &r); err != nil {
			return nil, fmt.Errorf("%s/%s: %w", b.name, k, err)
		}
		if k != compactionRequestKey(r.Table) {
			return nil, fmt.Errorf("%w: %s/%s holds a request of table %s", ErrCorrupt, b.name, k, r.Table)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b CompactionRequest) int { return strings.Compare(a.Table.String(), b.Table.String()) })
	return out, nil
}

// FinishCompactionRequest marks request id of table done, now. It does
// nothing if the table's request is another one (a newer request replaced
// it) or is already done.
func (m *Manifest) FinishCompactionRequest(ctx context.Context, table, id uuid.UUID) error {
	return m.changeRequest(ctx, table, id, func(r *CompactionRequest) (*CompactionRequest, error) {
		if r.Done() {
			return nil, errUnchanged
		}
		next := *r
		next.DoneAt = m.opts.Now().UTC()
		return &next, nil
	})
}

// DeleteCompactionRequest deletes request id of table; it does nothing if
// the table's request is another one.
func (m *Manifest) DeleteCompactionRequest(ctx context.Context, table, id uuid.UUID) error {
	return m.changeRequest(ctx, table, id, func(*CompactionRequest) (*CompactionRequest, error) { return nil, nil })
}

// changeRequest applies fn to request id of table, unless the table's
// request is another one: a planner acting on what it read must not
// finish or delete a request made since.
func (m *Manifest) changeRequest(ctx context.Context, table, id uuid.UUID, fn func(*CompactionRequest) (*CompactionRequest, error)) error {
	b, err := m.requestsBucket(ctx, false)
	if err != nil || b == nil {
		return err
	}
	return mutateJSON(ctx, m, b, compactionRequestKey(table), func(cur *CompactionRequest) (*CompactionRequest, error) {
		if cur == nil || cur.ID != id {
			return nil, errUnchanged
		}
		return fn(cur)
	})
}
