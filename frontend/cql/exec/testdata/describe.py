"""DESCRIBE through the DataStax Python driver (Debian's python3-cassandra),
as cqlsh 6 sends it to a 4.0 server: the rows of DESCRIBE KEYSPACE, paged
and unpaged, and DESCRIBE CLUSTER.

Usage: describe.py HOST PORT EVENTS_LEN, against a server holding the Go
test's describeSchema; EVENTS_LEN is the length of the "Events" table's
CREATE statement. Prints OK and exits 0 when every check holds.
"""

import sys

from cassandra.cluster import Cluster
from cassandra.query import SimpleStatement


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main(host, port, events_len):
    cluster = Cluster([host], port=port, connect_timeout=20, control_connection_timeout=20)
    session = cluster.connect()
    session.default_timeout = 30

    rs = session.execute('DESCRIBE KEYSPACE "Desc"')
    check(rs.column_names == ["keyspace_name", "type", "name", "create_statement"],
          "columns %r" % rs.column_names)
    rows = list(rs)
    got = [(r.keyspace_name, r.type, r.name) for r in rows]
    want = [('"Desc"', "keyspace", '"Desc"'), ('"Desc"', "type", "point"), ('"Desc"', "type", "zone"),
            ('"Desc"', "type", "alpha"), ('"Desc"', "table", '"Events"'), ('"Desc"', "table", "kv")]
    check(got == want, "rows %r" % got)
    events = rows[4].create_statement
    check(events.startswith('CREATE TABLE "Desc"."Events" (\n    tenant int,\n'), events)
    check(events.endswith("    AND speculative_retry = '99p';"), events)
    check(len(events) == events_len, "length %d, want %d" % (len(events), events_len))

    paged = list(session.execute(SimpleStatement('DESCRIBE KEYSPACE "Desc"', fetch_size=2)))
    check([tuple(r) for r in paged] == [tuple(r) for r in rows], "paged rows differ")

    session.set_keyspace("Desc")
    tables = [r.name for r in session.execute("DESCRIBE TABLES")]
    check(tables == ['"Events"', "kv"], "tables %r" % tables)
    cl = session.execute("DESCRIBE CLUSTER").one()
    check(cl.partitioner == "Murmur3Partitioner", "partitioner %r" % cl.partitioner)
    check(len(cl.range_ownership) > 0, "range_ownership %r" % cl.range_ownership)

    cluster.shutdown()
    print("OK")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
