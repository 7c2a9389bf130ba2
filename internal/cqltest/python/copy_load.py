"""A COPY FROM-like load through the DataStax Python driver: what cqlsh's
COPY does (prepared INSERTs sent concurrently over several connections,
each failed write retried with backoff, as its MAXATTEMPTS does), without
cqlsh, which this machine lacks.

Usage: copy_load.py HOST PORT KEYSPACE TABLE ROWS CONNECTIONS CONCURRENCY.
The table must be (id int PRIMARY KEY, v text). Prints one line of JSON:
rows written, errors seen by kind, retries; exits 1 if a row could not be
written after every attempt.
"""

import json
import sys
import threading
import time

from cassandra.cluster import Cluster, NoHostAvailable
from cassandra.policies import FallthroughRetryPolicy

MAX_ATTEMPTS = 30


def main(host, port, keyspace, table, rows, connections, concurrency):
    errors = {}
    lock = threading.Lock()
    failed = []
    sessions = []
    for _ in range(connections):
        # Errors come back to the loader, which retries them itself as
        # COPY does, rather than the driver's policy.
        c = Cluster([host], port=port, connect_timeout=20, control_connection_timeout=20,
                    default_retry_policy=FallthroughRetryPolicy())
        s = c.connect(keyspace)
        s.default_timeout = 30
        sessions.append((c, s, s.prepare("INSERT INTO %s (id, v) VALUES (?, ?)" % table)))
    sem = threading.Semaphore(concurrency)
    done = threading.Event()
    pending = [rows]
    retries = [0]

    def finish():
        sem.release()
        with lock:
            pending[0] -= 1
            if pending[0] == 0:
                done.set()

    def send(i, attempt):
        _, s, ps = sessions[i % len(sessions)]
        f = s.execute_async(ps, (i, "value %d" % i))
        f.add_callbacks(lambda _: finish(), lambda e: failed_write(i, attempt, e))

    def failed_write(i, attempt, e):
        kind = type(e).__name__
        if isinstance(e, NoHostAvailable):
            kind = "NoHostAvailable:" + ",".join(type(x).__name__ for x in e.errors.values())
        with lock:
            errors[kind] = errors.get(kind, 0) + 1
            retries[0] += 1
        if attempt + 1 >= MAX_ATTEMPTS:
            with lock:
                failed.append((i, repr(e)))
            finish()
            return
        # Back off, as COPY does, then try again from another thread.
        t = threading.Timer(min(0.01 * (2 ** attempt), 1.0), send, (i, attempt + 1))
        t.daemon = True
        t.start()

    start = time.time()
    for i in range(rows):
        sem.acquire()
        send(i, 0)
    done.wait()
    seconds = time.time() - start
    for c, _, _ in sessions:
        c.shutdown()
    print(json.dumps({"rows": rows, "failed": len(failed), "first_failures": failed[:3],
                      "errors": errors, "retries": retries[0], "seconds": seconds}))
    return 1 if failed else 0


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(a[0], int(a[1]), a[2], a[3], int(a[4]), int(a[5]), int(a[6])))
