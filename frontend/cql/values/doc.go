// Package values turns CQL terms into serialized values and serialized values
// into JSON and text, the way Cassandra 4 does.
//
// Every value is in its native protocol v4 serialized form (see package
// cqltype); nil is null. Four conversions are covered:
//
//	Encode     literal term (cql/ast) + type  -> serialized value
//	FromJSON   JSON value + type              -> serialized value
//	ToJSON     serialized value + type        -> JSON (toJson, SELECT JSON)
//	Text       serialized value + type        -> text (CAST(x AS text), messages)
//
// Literals and their types follow Cassandra's Constants.Literal: a literal
// of one lexical kind fits only some types.
//
//	literal kind   fits
//	-------------  ------------------------------------------------------------
//	'string'       ascii, text, inet, date, time, timestamp
//	integer        tinyint, smallint, int, bigint, varint, counter, float,
//	               double, decimal, date, time, timestamp, duration
//	float          float, double, decimal (NaN and Infinity: float, double)
//	true/false     boolean
//	uuid           uuid, timeuuid (version 1 only)
//	0x...          blob
//	duration       duration
//
// Text forms the parsers accept (as Cassandra's fromString does):
//
//	type       accepted text
//	---------  ---------------------------------------------------------------
//	date       yyyy-mm-dd as ISO_LOCAL_DATE reads it strictly (-yyyy and
//	           +yyyyy.. for other years), or the raw unsigned day number
//	           (2^31 = epoch)
//	time       hh:mm:ss[.f{1,9}], or nanoseconds since midnight
//	timestamp  yyyy-mm-dd[( |T)hh:mm[:ss[.SSS]]][zone], ms since the epoch,
//	           or now; zone is Z, +hh, +hhmm or +hh:mm (also -), or after a
//	           space UTC, GMT or GMT+hh:mm; no zone means UTC; SSS counts
//	           milliseconds as Java's SimpleDateFormat does (.5 is 5 ms);
//	           every number may have any count of digits (2024-1-2 3:4:5)
//	duration   1y2mo3w4d5h6m7s8ms9us10ns (also µs), P1Y2M3DT4H5M6S, P2W,
//	           P0001-02-03T04:05:06, each with an optional leading minus
//	inet       IPv4 dotted quad or IPv6, also [in brackets] (IPv4-mapped
//	           IPv6 becomes IPv4)
//
// # Errors
//
// A term that does not fit its type yields an *Error. Cassandra names the
// receiver of a bad literal in its message ("Invalid STRING constant (foo)
// for \"k\" of type int", "Invalid list literal for k: value 'x' is not of
// type int"). Encode does not know the column, so the executor names it:
//
//	v, err := values.Encode(col.Type, term, resolve)
//	var verr *values.Error
//	if errors.As(err, &verr) {
//		return invalid(verr.Message(col.Name)) // Invalid request, code 0x2200
//	}
//
// Errors returned by resolve are passed through unchanged.
package values
