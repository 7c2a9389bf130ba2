"""A first session through the DataStax Python driver (Debian's
python3-cassandra), as an application would have one: connect without
forcing a protocol version, create a schema, write and read with prepared
statements (UDTs as a registered class and as named tuples, frozen and
non-frozen collections), page, batch, a conditional INSERT, a counter,
ALTER TYPE, and read the schema back from cluster.metadata. At v5 it also
names the keyspace per statement (QUERY, PREPARE and BATCH) and sends and
reads a value larger than a v5 segment.

Usage: driver.py HOST PORT [VERSION]. Without VERSION the driver
negotiates, and must settle on v5. Prints OK and exits 0 when every check
holds.
"""

import sys
import uuid

from cassandra.cluster import Cluster
from cassandra.query import BatchStatement, SimpleStatement


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main(host, port, version=None):
    opts = {}
    if version is not None:
        opts["protocol_version"] = version
    cluster = Cluster([host], port=port, connect_timeout=20, control_connection_timeout=20, **opts)
    session = cluster.connect()
    session.default_timeout = 30
    want = version or 5
    check(cluster.protocol_version == want, "protocol v%d, want v%d" % (cluster.protocol_version, want))
    if cluster.protocol_version >= 5:
        keyspace_per_query(cluster, session)

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

    # Batch guardrails reach the driver as warnings: 50 rows of 132 bytes
    # (a 16-byte timeuuid clustering, a cell of 16 + 100) over two partitions pass the 5 KiB
    # warn threshold; an UNLOGGED batch over 11 partitions is warned about;
    # past 50 KiB the batch is refused.
    from cassandra import InvalidRequest
    from cassandra.query import BatchType
    ins_k = session.prepare("INSERT INTO events (user, at, kind) VALUES (?, ?, ?)")
    big = BatchStatement()
    for i in range(50):
        big.add(ins_k, ("w%d" % (i % 2), uuid.uuid1(), "x" * 100))
    fut = session.execute_async(big)
    fut.result()
    check(fut.warnings == ["Batch for [py.events] is of size 6600, exceeding specified threshold of 5120 by 1480."],
          "big batch warnings %r" % (fut.warnings,))
    spread = BatchStatement(batch_type=BatchType.UNLOGGED)
    for i in range(11):
        spread.add(ins_k, ("u%d" % i, uuid.uuid1(), "k"))
    rs = session.execute(spread)
    check(rs.response_future.warnings == [
        "Unlogged batch covering 11 partitions detected against table [py.events]. "
        "You should use a logged batch for atomicity, or asynchronous writes for performance."],
        "unlogged batch warnings %r" % (rs.response_future.warnings,))
    huge = BatchStatement()
    for i in range(500):
        huge.add(ins_k, ("h%d" % (i % 2), uuid.uuid1(), "x" * 100))
    try:
        session.execute(huge)
        check(False, "a 66000-byte batch was accepted")
    except InvalidRequest as e:
        check("Batch too large" in str(e), "huge batch error %r" % e)

    # A traced read: the answer names its tracing session, which the
    # driver reads back from system_traces with its events.
    rs = session.execute(sel, ("ada", ids[7]), trace=True)
    check(rs.one().kind == "k1", "traced read %r" % (rs,))
    trace = rs.get_query_trace(max_wait_sec=10)
    check(trace is not None and trace.duration is not None and trace.coordinator is not None,
          "trace %r" % (trace,))
    check(trace.request_type == "Execute CQL3 prepared query" and "query" in trace.parameters,
          "trace request %r %r" % (trace.request_type, trace.parameters))
    activities = [e.description for e in trace.events]
    check(any(a.startswith("Executing the prepared statement") for a in activities) and
          any(a.startswith("Read ") for a in activities), "trace events %r" % (activities,))

    # Range deletes with multi-column clustering bounds, one bound a whole
    # tuple marker, on clustering columns of mixed orders.
    session.execute("""CREATE TABLE IF NOT EXISTS grid (k int, a int, b int, v int, PRIMARY KEY (k, a, b))
        WITH CLUSTERING ORDER BY (a ASC, b DESC)""")
    ins_g = session.prepare("INSERT INTO grid (k, a, b, v) VALUES (0, ?, ?, 0)")
    for a in range(3):
        for b in range(3):
            session.execute(ins_g, (a, b))
    session.execute(session.prepare("DELETE FROM grid WHERE k = 0 AND (a, b) > ? AND (a, b) <= (?, ?)"), ((0, 1), 2, 0))
    left = sorted((r.a, r.b) for r in session.execute("SELECT a, b FROM grid WHERE k = 0"))
    check(left == [(0, 0), (0, 1), (2, 1), (2, 2)], "rows left after a tuple range delete %r" % (left,))

    # User types: a registered class on one session, named tuples on
    # another; frozen and non-frozen, nested in collections.
    session.execute("""CREATE TABLE IF NOT EXISTS people (
        id int PRIMARY KEY, home addr, past list<frozen<addr>>, fhome frozen<addr>)
        WITH default_time_to_live = 86400 AND comment = 'people' AND caching = {'keys': 'NONE'}""")

    class Addr(object):
        def __init__(self, street=None, zip=None):
            self.street, self.zip = street, zip

    cluster.register_user_type("py", "addr", Addr)
    ins_p = session.prepare("INSERT INTO people (id, home, past, fhome) VALUES (?, ?, ?, ?)")
    session.execute(ins_p, (1, Addr("main", 1), [Addr("old", 2), Addr("older", 3)], Addr("frozen", 4)))
    row = session.execute(session.prepare("SELECT home, past, fhome FROM people WHERE id = ?"), (1,)).one()
    check(isinstance(row.home, Addr) and row.home.street == "main" and row.home.zip == 1, "home %r" % (row.home,))
    check([(a.street, a.zip) for a in row.past] == [("old", 2), ("older", 3)], "past %r" % (row.past,))
    check(row.fhome.street == "frozen" and row.fhome.zip == 4, "fhome %r" % (row.fhome,))
    session.execute(session.prepare("UPDATE people SET home.zip = ? WHERE id = ?"), (9, 1))

    plain = Cluster([host], port=port, connect_timeout=20, control_connection_timeout=20)
    other = plain.connect("py")
    other.default_timeout = 30
    row = other.execute("SELECT home, fhome FROM people WHERE id = 1").one()
    check(row.home.street == "main" and row.home.zip == 9, "home as a named tuple %r" % (row.home,))
    check(tuple(row.fhome) == ("frozen", 4), "fhome as a named tuple %r" % (row.fhome,))

    # ALTER TYPE: the old row reads the new field as null; a new session
    # sees the new field.
    session.execute("ALTER TYPE addr ADD city text")
    cluster.refresh_schema_metadata()
    check(cluster.metadata.keyspaces["py"].user_types["addr"].field_names == ["street", "zip", "city"],
          "addr after ALTER TYPE ADD: %r" % cluster.metadata.keyspaces["py"].user_types["addr"].field_names)
    after = Cluster([host], port=port, connect_timeout=20, control_connection_timeout=20)
    fresh = after.connect("py")
    fresh.default_timeout = 30
    row = fresh.execute("SELECT home FROM people WHERE id = 1").one()
    check(row.home.street == "main" and row.home.city is None, "home after ALTER TYPE %r" % (row.home,))
    fresh.execute("INSERT INTO people (id, home) VALUES (2, {street: 's', zip: 2, city: 'c'})")
    row = fresh.execute("SELECT home FROM people WHERE id = 2").one()
    check(row.home.city == "c", "home with a city %r" % (row.home,))
    after.shutdown()
    plain.shutdown()

    # Collections, frozen and not, through prepared statements.
    session.execute("""CREATE TABLE IF NOT EXISTS colls (
        id int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>,
        fl frozen<list<int>>, fs frozen<set<int>>, fm frozen<map<int, text>>, ml map<text, frozen<list<int>>>)""")
    ins_c = session.prepare("INSERT INTO colls (id, l, s, m, fl, fs, fm, ml) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    session.execute(ins_c, (1, [3, 1, 3], {"b", "a"}, {"x": 1, "y": 2}, [5, 4], {7, 6}, {2: "two", 1: "one"}, {"k": [1, 2]}))
    upd = session.prepare("UPDATE colls SET l = l + ?, s = s - ?, m[?] = ? WHERE id = ?")
    session.execute(upd, ([4], {"a"}, "z", 26, 1))
    row = session.execute(session.prepare("SELECT l, s, m, fl, fs, fm, ml FROM colls WHERE id = ?"), (1,)).one()
    check(list(row.l) == [3, 1, 3, 4], "list %r" % (row.l,))
    check(set(row.s) == {"b"}, "set %r" % (row.s,))
    check(dict(row.m) == {"x": 1, "y": 2, "z": 26}, "map %r" % (row.m,))
    check(list(row.fl) == [5, 4] and sorted(row.fs) == [6, 7], "frozen list/set %r %r" % (row.fl, row.fs))
    check(list(row.fm.items()) == [(1, "one"), (2, "two")], "frozen map %r" % (row.fm,))
    check({k: list(v) for k, v in row.ml.items()} == {"k": [1, 2]}, "map of frozen lists %r" % (row.ml,))
    n = session.execute(session.prepare("SELECT id FROM colls WHERE fl = ? ALLOW FILTERING"), ([5, 4],)).all()
    check([r.id for r in n] == [1], "filter on a frozen list: %r" % (n,))

    # A conditional INSERT answers [applied], with the existing row when not.
    lwt = session.prepare("INSERT INTO colls (id, l) VALUES (?, ?) IF NOT EXISTS")
    r = session.execute(lwt, (2, [1])).one()
    check(r[0] is True, "first conditional insert %r" % (r,))
    r = session.execute(lwt, (2, [2]))
    check(r.was_applied is False and r.one().l == [1], "second conditional insert %r" % (r.one(),))

    # A counter.
    session.execute("CREATE TABLE IF NOT EXISTS hits (page text PRIMARY KEY, n counter)")
    inc = session.prepare("UPDATE hits SET n = n + ? WHERE page = ?")
    for _ in range(3):
        session.execute(inc, (2, "home"))
    session.execute("UPDATE hits SET n = n - 1 WHERE page = 'home'")
    n = session.execute("SELECT n FROM hits WHERE page = 'home'").one().n
    check(n == 5, "counter %d, want 5" % n)

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
    check("addr" in ks.user_types and ks.user_types["addr"].field_names == ["street", "zip", "city"],
          "user types %r" % ks.user_types)
    people = ks.tables["people"]
    check(people.options.get("default_time_to_live") == 86400, "default_time_to_live %r" % people.options.get("default_time_to_live"))
    check(people.options.get("comment") == "people", "people comment %r" % people.options.get("comment"))
    check(people.options.get("caching") == {"keys": "NONE", "rows_per_partition": "NONE"},
          "caching %r" % people.options.get("caching"))
    check(people.options.get("gc_grace_seconds") == 864000, "gc_grace_seconds %r" % people.options.get("gc_grace_seconds"))
    check(people.columns["home"].cql_type == "addr" and people.columns["fhome"].cql_type == "frozen<addr>",
          "UDT columns %r %r" % (people.columns["home"].cql_type, people.columns["fhome"].cql_type))
    ut = ks.user_types["addr"]
    check(ut.field_types == ["text", "int", "text"], "addr field types %r" % ut.field_types)
    check("CREATE TYPE py.addr" in ut.export_as_string(), "addr DDL:\n" + ut.export_as_string())
    ddl = t.export_as_string()
    check("CREATE TABLE py.events" in ddl and "CLUSTERING ORDER BY (at DESC)" in ddl, "DESCRIBE:\n" + ddl)

    # export_as_string (what cqlsh 5's DESCRIBE prints from the metadata)
    # of a keyspace whose table has every feature: compound partition key,
    # quoted names, mixed clustering order, static, frozen and non-frozen
    # UDTs and collections, options. Columns come in system_schema's
    # clustering order (by name), as from Cassandra 4.
    session.execute("CREATE KEYSPACE IF NOT EXISTS fullks WITH replication = "
                    "{'class': 'NetworkTopologyStrategy', 'dc1': 3} AND durable_writes = false")
    session.execute("CREATE TYPE IF NOT EXISTS fullks.pt (x int, y int)")
    session.execute("CREATE TYPE IF NOT EXISTS fullks.place (name text, at frozen<pt>, tags set<text>)")
    session.execute("""CREATE TABLE IF NOT EXISTS fullks."Things" (
        tenant int, "Region" text, at timeuuid, seq bigint,
        owner text static, home frozen<place>, spot pt, hist list<frozen<pt>>, attrs map<text, int>, "Note" text,
        PRIMARY KEY ((tenant, "Region"), at, seq))
        WITH CLUSTERING ORDER BY (at DESC, seq ASC)
        AND comment = 'every feature' AND default_time_to_live = 3600 AND gc_grace_seconds = 3600
        AND compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '64'}
        AND compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': '32'}
        AND caching = {'keys': 'ALL', 'rows_per_partition': '10'} AND bloom_filter_fp_chance = 0.05""")
    cluster.refresh_schema_metadata()
    want_table = """CREATE TABLE fullks."Things" (
    tenant int,
    "Region" text,
    at timeuuid,
    seq bigint,
    "Note" text,
    attrs map<text, int>,
    hist list<frozen<pt>>,
    home frozen<place>,
    owner text static,
    spot pt,
    PRIMARY KEY ((tenant, "Region"), at, seq)
) WITH CLUSTERING ORDER BY (at DESC, seq ASC)
    AND additional_write_policy = '99p'
    AND bloom_filter_fp_chance = 0.05
    AND caching = {'keys': 'ALL', 'rows_per_partition': '10'}
    AND comment = 'every feature'
    AND compaction = {'class': 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy', 'sstable_size_in_mb': '64'}
    AND compression = {'chunk_length_in_kb': '32', 'class': 'org.apache.cassandra.io.compress.ZstdCompressor'}
    AND crc_check_chance = 1.0
    AND default_time_to_live = 3600
    AND gc_grace_seconds = 3600
    AND max_index_interval = 2048
    AND memtable_flush_period_in_ms = 0
    AND min_index_interval = 128
    AND read_repair = 'BLOCKING'
    AND speculative_retry = '99p';"""
    fks = cluster.metadata.keyspaces["fullks"]
    got = fks.tables["Things"].export_as_string()
    check(got == want_table, "table export:\n%s\nwant:\n%s" % (got, want_table))
    want_ks = ("CREATE KEYSPACE fullks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': '3'}  "
               "AND durable_writes = false;\n\n"
               "CREATE TYPE fullks.pt (\n    x int,\n    y int\n);\n\n"
               "CREATE TYPE fullks.place (\n    name text,\n    at frozen<pt>,\n    tags frozen<set<text>>\n);\n\n"
               + want_table)
    got = fks.export_as_string()
    check(got == want_ks, "keyspace export:\n%s\nwant:\n%s" % (got, want_ks))

    hosts = cluster.metadata.all_hosts()
    check(len(hosts) == 1 and hosts[0].release_version.startswith("4."), "hosts %r" % hosts)

    cluster.shutdown()
    print("OK")


def keyspace_per_query(cluster, session):
    """v5 statements that name their keyspace, on a session that has none,
    and values larger than a segment (128 KiB) both ways."""
    from cassandra import InvalidRequest
    session.execute("CREATE KEYSPACE IF NOT EXISTS pyks WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    try:
        session.execute("CREATE TABLE IF NOT EXISTS kv (k int PRIMARY KEY, v text)")
        raise AssertionError("CREATE TABLE ran without a keyspace")
    except InvalidRequest as e:
        check("No keyspace has been specified" in str(e), "without a keyspace: %s" % e)
    session.execute(SimpleStatement("CREATE TABLE IF NOT EXISTS kv (k int PRIMARY KEY, v text)", keyspace="pyks"))
    ins = session.prepare("INSERT INTO kv (k, v) VALUES (?, ?)", keyspace="pyks")
    big = "segment " * 40000  # 320 KB
    session.execute(ins, (1, big))
    # The driver sends a batch's keyspace attribute with the v5 flag.
    batch = BatchStatement()
    batch.keyspace = "pyks"
    for k in range(2, 5):
        batch.add(SimpleStatement("INSERT INTO kv (k, v) VALUES (%s, %s)"), (k, "b%d" % k))
    session.execute(batch)
    session.execute(SimpleStatement("INSERT INTO kv (k, v) VALUES (%s, %s)", keyspace="pyks"), (5, big[5:]))
    # One answer of 640 KB: several segments that are not self-contained.
    rows = {r.k: r.v for r in session.execute(SimpleStatement("SELECT k, v FROM kv", keyspace="pyks"))}
    check(sorted(rows) == [1, 2, 3, 4, 5], "keys %r" % sorted(rows))
    check(rows[1] == big and rows[5] == big[5:] and all(rows[k] == "b%d" % k for k in (2, 3, 4)), "values changed")
    sel = session.prepare("SELECT v FROM kv WHERE k = ?", keyspace="pyks")
    check(session.execute(sel, (1,)).one().v == big, "large value through a prepared SELECT")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else None)
