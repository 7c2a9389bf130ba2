package exec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/internal/storage"
)

// TestStorageErrorCodes: each storage error class, wrapped as it arises,
// reaches clients of a read, a write and a truncation as its CQL code, with
// the fields that code carries; an error of no class stays internal.
func TestStorageErrorCodes(t *testing.T) {
	const (
		overloaded = "Server is overloaded"
		noOwner    = "Cannot achieve consistency level"
		timedOut   = "Operation timed out"
		truncate   = "Error during truncate"
	)
	type want struct {
		code wire.ErrorCode
		msg  string // a prefix of the message
	}
	for _, tc := range []struct {
		name                   string
		err                    error
		read, write, truncated want
	}{
		{"overloaded", storage.ErrOverloaded,
			want{wire.CodeOverloaded, overloaded}, want{wire.CodeOverloaded, overloaded}, want{wire.CodeOverloaded, overloaded}},
		{"unavailable", storage.ErrUnavailable,
			want{wire.CodeUnavailable, noOwner}, want{wire.CodeUnavailable, noOwner}, want{wire.CodeUnavailable, noOwner}},
		{"no owner", engine.ErrNoOwner,
			want{wire.CodeUnavailable, noOwner}, want{wire.CodeUnavailable, noOwner}, want{wire.CodeUnavailable, noOwner}},
		{"fenced", storage.ErrFenced,
			want{wire.CodeUnavailable, noOwner}, want{wire.CodeUnavailable, noOwner}, want{wire.CodeUnavailable, noOwner}},
		{"flush raced", storage.ErrFlushRaced,
			want{wire.CodeUnavailable, noOwner}, want{wire.CodeUnavailable, noOwner}, want{wire.CodeUnavailable, noOwner}},
		{"timeout", storage.ErrTimeout,
			want{wire.CodeReadTimeout, timedOut}, want{wire.CodeWriteTimeout, timedOut}, want{wire.CodeTruncate, truncate}},
		{"deadline", context.DeadlineExceeded,
			want{wire.CodeReadTimeout, timedOut}, want{wire.CodeWriteTimeout, timedOut}, want{wire.CodeTruncate, truncate}},
		{"too large", fmt.Errorf("%w: 40000000 bytes, at most 16777215", storage.ErrTooLarge),
			want{wire.CodeInvalid, "Mutation is too large"}, want{wire.CodeInvalid, "Mutation is too large"}, want{wire.CodeInvalid, "Mutation is too large"}},
		{"invalid mutation", storage.ErrInvalidMutation,
			want{wire.CodeServer, "shard 3: storage: invalid mutation"}, want{wire.CodeServer, "shard 3: storage: invalid mutation"}, want{wire.CodeTruncate, truncate}},
		{"closed", storage.ErrClosed,
			want{wire.CodeServer, "shard 3: storage: node closed"}, want{wire.CodeServer, "shard 3: storage: node closed"}, want{wire.CodeTruncate, truncate}},
		{"other", errors.New("disk on fire"),
			want{wire.CodeServer, "shard 3: disk on fire"}, want{wire.CodeServer, "shard 3: disk on fire"}, want{wire.CodeTruncate, truncate}},
	} {
		err := fmt.Errorf("shard 3: %w", tc.err)
		for _, c := range []struct {
			op        string
			got       *Error
			want      want
			writeType string
		}{
			{"read", toError(err), tc.read, ""},
			{"write", writeError(err, wire.WriteUnloggedBatch), tc.write, wire.WriteUnloggedBatch},
			{"truncate", truncateError(err), tc.truncated, ""},
		} {
			var we *wire.Error
			out := wireError(c.got)
			if c.want.code == wire.CodeServer {
				// An internal error's text never reaches the client:
				// the transport logs it and sends the connection and
				// stream to find it by.
				if errors.As(out, &we) || !errors.Is(out, tc.err) || !strings.HasPrefix(out.Error(), c.want.msg) {
					t.Errorf("%s %s: %v, want the internal error %q for the transport to log", tc.name, c.op, out, c.want.msg)
				}
				continue
			}
			if !errors.As(out, &we) {
				t.Fatalf("%s %s: not a *wire.Error", tc.name, c.op)
			}
			if we.Code != c.want.code || !strings.HasPrefix(we.Message, c.want.msg) {
				t.Errorf("%s %s: %v %q, want %v %q...", tc.name, c.op, we.Code, we.Message, c.want.code, c.want.msg)
			}
			if !errors.Is(c.got, tc.err) {
				t.Errorf("%s %s: the cause is lost: %v", tc.name, c.op, c.got.Cause)
			}
			switch we.Code {
			case wire.CodeUnavailable:
				if we.Consistency != wire.One || we.Required != 1 || we.Alive != 0 {
					t.Errorf("%s %s: Unavailable fields %+v", tc.name, c.op, we)
				}
			case wire.CodeWriteTimeout:
				if we.Consistency != wire.One || we.BlockFor != 1 || we.Received != 0 || we.WriteType != c.writeType {
					t.Errorf("%s %s: Write_timeout fields %+v", tc.name, c.op, we)
				}
			case wire.CodeReadTimeout:
				if we.Consistency != wire.One || we.BlockFor != 1 || we.Received != 0 || we.DataPresent {
					t.Errorf("%s %s: Read_timeout fields %+v", tc.name, c.op, we)
				}
			}
		}
	}
}
