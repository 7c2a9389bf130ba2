"""A first session through the DataStax Python driver (Debian's
python3-cassandra), as an application would have one: connect without
forcing a protocol version, create a schema, write and read with prepared
statements, page, batch, and read the schema back from cluster.metadata.

Usage: driver.py HOST PORT. Prints OK and exits 0 when every check holds.
"""

import sys
import uuid

from cassandra.cluster import Cluster
from cassandra.query import BatchStatement, SimpleStatement


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main(host, port):
    cluster = Cluster([host], port=port, connect_timeout=20, control_connection_timeout=20)
    session = cluster.connect()
    session.default_timeout = 30
    check(cluster.protocol_version == 4, "negotiated protocol v%d, want v4" % cluster.protocol_version)

    session.execute("CREATE KEYSPACE IF NOT EXISTS py WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.set_keyspace("py")
    session.execute("CREATE TYPE IF NOT EXISTS addr (street text, zip int)")
    session.execute("""CREATE TABLE IF NOT EXISTS events (
        user text, at timeuuid, kind text, tags set<text>, attrs map<text, int>, home frozen<addr>,
        PRIMARY KEY (user, at)) WITH CLUSTERING ORDER BY (at DESC) AND comment = 'from python'""")

    # Prepared writes and reads.
    ins = session.prepare("INSERT INTO events (user, at, kind, tags, attrs) VALUES (?, ?, ?, ?, ?)")
    check(ins.routing_key_indexes == [0], "routing key indexes %r" % ins.routing_key_indexes)
    ids = [uuid.uuid1() for _ in range(120)]
    for i, at in enumerate(ids):
        session.execute(ins, ("ada", at, "k%d" % (i % 3), {"t%d" % i}, {"n": i}))
    sel = session.prepare("SELECT kind, tags, attrs FROM events WHERE user = ? AND at = ?")
    row = session.execute(sel, ("ada", ids[7])).one()
    check(row is not None and row.kind == "k1" and row.tags == {"t7"} and row.attrs == {"n": 7},
          "row 7 read back as %r" % (row,))

    # Paging: 120 rows in pages of 25, newest first (DESC clustering).
    stmt = SimpleStatement("SELECT at FROM events WHERE user = %s", fetch_size=25)
    got = [r.at for r in session.execute(stmt, ("ada",))]
    check(len(got) == 120, "paged %d rows, want 120" % len(got))
    check(got == sorted(ids, key=lambda u: u.time, reverse=True), "rows not in DESC timeuuid order")

    # A batch.
    batch = BatchStatement()
    for i in range(5):
        batch.add(ins, ("bob", uuid.uuid1(), "b", set(), {}))
    session.execute(batch)
    n = session.execute("SELECT count(*) FROM events WHERE user = 'bob'").one()[0]
    check(n == 5, "bob has %d events after the batch, want 5" % n)

    # Schema metadata, read from system_schema.
    cluster.refresh_schema_metadata()
    ks = cluster.metadata.keyspaces["py"]
    check(ks.replication_strategy.replication_factor == 1, "replication %r" % ks.replication_strategy)
    t = ks.tables["events"]
    check([c.name for c in t.partition_key] == ["user"], "partition key %r" % t.partition_key)
    check([c.name for c in t.clustering_key] == ["at"], "clustering key %r" % t.clustering_key)
    check(t.clustering_key[0].is_reversed, "clustering order not DESC")
    check(t.columns["attrs"].cql_type == "map<text, int>", "attrs type %r" % t.columns["attrs"].cql_type)
    check(t.options.get("comment") == "from python", "comment %r" % t.options.get("comment"))
    check("addr" in ks.user_types and ks.user_types["addr"].field_names == ["street", "zip"],
          "user types %r" % ks.user_types)
    ddl = t.export_as_string()
    check("CREATE TABLE py.events" in ddl and "CLUSTERING ORDER BY (at DESC)" in ddl, "DESCRIBE:\n" + ddl)
    hosts = cluster.metadata.all_hosts()
    check(len(hosts) == 1 and hosts[0].release_version.startswith("4."), "hosts %r" % hosts)

    cluster.shutdown()
    print("OK")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
