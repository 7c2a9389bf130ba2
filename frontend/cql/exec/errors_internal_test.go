package exec

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sedimentdb/sediment/frontend/engine"
	"github.com/sedimentdb/sediment/frontend/wire"
	"github.com/sedimentdb/sediment/ingest/rpc"
	"github.com/sedimentdb/sediment/internal/storage"
)

// TestErrorCodes: the engine's errors reach clients as the protocol's
// codes, wrapped or not, with the fields each code carries.
func TestErrorCodes(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("shard 3: %w", err) }
	for _, tc := range []struct {
		name      string
		err       error
		code      wire.ErrorCode
		writeType string
		msg       string
	}{
		{"overloaded", wrap(storage.ErrOverloaded), wire.ErrorCode(CodeOverloaded), "", "Server is overloaded"},
		{"no owner", wrap(engine.ErrNoOwner), wire.ErrorCode(CodeUnavailable), "", "Cannot achieve consistency level"},
		{"rpc unavailable", wrap(storage.ErrUnavailable), wire.ErrorCode(CodeUnavailable), "", "Cannot achieve consistency level"},
		{"fenced", wrap(storage.ErrFenced), wire.ErrorCode(CodeUnavailable), "", "Cannot achieve consistency level"},
		{"write timeout", applyError(wrap(context.DeadlineExceeded), writeUnloggedBatch), wire.ErrorCode(CodeWriteTimeout), writeUnloggedBatch, "Operation timed out"},
		{"write conn lost", applyError(wrap(rpc.ErrConnLost), writeBatch), wire.ErrorCode(CodeWriteTimeout), writeBatch, "Operation timed out"},
		{"too large", applyError(wrap(storage.ErrTooLarge), writeBatch), wire.ErrorCode(CodeInvalid), "", "Mutation is too large"},
		{"read timeout", readError(wrap(context.DeadlineExceeded)), wire.ErrorCode(CodeReadTimeout), "", "Operation timed out"},
		{"read overloaded", readError(wrap(storage.ErrOverloaded)), wire.ErrorCode(CodeOverloaded), "", "Server is overloaded"},
		{"other", errors.New("disk on fire"), wire.ErrorCode(CodeServer), "", ""},
	} {
		var we *wire.Error
		if !errors.As(wireError(tc.err), &we) {
			t.Fatalf("%s: not a *wire.Error", tc.name)
		}
		if we.Code != tc.code || we.WriteType != tc.writeType || len(we.Message) < len(tc.msg) || we.Message[:len(tc.msg)] != tc.msg {
			t.Errorf("%s: %+v, want code %#x write type %q message %q...", tc.name, we, tc.code, tc.writeType, tc.msg)
		}
		if tc.code == wire.ErrorCode(CodeUnavailable) && (we.Consistency != wire.One || we.Required != 1) {
			t.Errorf("%s: Unavailable fields %+v", tc.name, we)
		}
	}
}
