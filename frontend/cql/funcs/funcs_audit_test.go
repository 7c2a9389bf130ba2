package funcs

import (
	"testing"

	"github.com/sedimentdb/sediment/internal/cqltype"
)

// TestEmptyTemporalAudit: the time conversions return null for an empty
// value, which timeuuid and timestamp columns can hold, as Cassandra 4's
// TimeFcts do; they do not fail on its length.
func TestEmptyTemporalAudit(t *testing.T) {
	for _, c := range []struct {
		name string
		arg  *cqltype.Type
	}{
		{"todate", cqltype.TimeuuidType}, {"totimestamp", cqltype.TimeuuidType}, {"tounixtimestamp", cqltype.TimeuuidType},
		{"dateof", cqltype.TimeuuidType}, {"unixtimestampof", cqltype.TimeuuidType},
		{"todate", cqltype.TimestampType}, {"tounixtimestamp", cqltype.TimestampType},
		{"mintimeuuid", cqltype.TimestampType}, {"maxtimeuuid", cqltype.TimestampType},
		{"totimestamp", cqltype.DateType}, {"tounixtimestamp", cqltype.DateType},
	} {
		f, err := Lookup("", c.name, []Arg{{Type: c.arg}})
		if err != nil {
			t.Fatal(err)
		}
		if v, err := f.Call([][]byte{{}}); err != nil || v != nil {
			t.Errorf("%s(empty %s) = %x, %v; want null", c.name, c.arg, v, err)
		}
	}
	// A value of another wrong length is still refused.
	f, _ := Lookup("", "todate", []Arg{{Type: cqltype.TimeuuidType}})
	if _, err := f.Call([][]byte{{1, 2}}); err == nil {
		t.Error("todate of a 2-byte timeuuid: no error")
	}
}
