// A first session through the DataStax Node.js driver (cassandra-driver on
// npm; make tools installs it), as an application would have one: connect
// without forcing a protocol version, create a schema, write and read with
// prepared statements (every native type, a UDT, collections, a tuple),
// page automatically and by hand, batch, a conditional INSERT, a counter,
// and read the schema back from client.metadata; errors carry their CQL
// codes.
//
// Usage: node driver.js HOST PORT. Prints OK and exits 0 when every check
// holds.
'use strict';

const assert = require('assert');
const cassandra = require('cassandra-driver');

const { types } = cassandra;

// same reports whether a value read back equals the one written: the
// driver's types and Buffers by their equals, dates by their time, tuples
// by their values, the rest (numbers, strings, arrays, objects) by JSON.
function same(want, have) {
  if (want instanceof Date) {
    return have instanceof Date && want.getTime() === have.getTime();
  }
  if (want instanceof cassandra.types.Tuple) {
    return have instanceof cassandra.types.Tuple && JSON.stringify(want.values()) === JSON.stringify(have.values());
  }
  if (want !== null && typeof want.equals === 'function') {
    return have !== null && want.equals(have);
  }
  return JSON.stringify(want) === JSON.stringify(have);
}

async function main(host, port) {
  const client = new cassandra.Client({
    contactPoints: [`${host}:${port}`],
    localDataCenter: 'datacenter1',
    socketOptions: { connectTimeout: 20000, readTimeout: 30000 },
  });
  await client.connect();
  // Driver 4.10 speaks Cassandra's v1 to v4 and DSE's own versions, not v5
  // (lib/types/protocol-version.js): it opens with DSE_V2, is refused, and
  // settles on v4 whatever the server offers beyond.
  assert.strictEqual(client.controlConnection.protocolVersion, 4, 'negotiated protocol version');

  await client.execute("CREATE KEYSPACE IF NOT EXISTS js WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
  await client.execute('CREATE TYPE IF NOT EXISTS js.point (x double, y double, label text)');
  await client.execute(`CREATE TABLE IF NOT EXISTS js.every (
    k int, c timeuuid,
    a ascii, big bigint, b blob, bool boolean, d date, dec decimal, dbl double, dur duration, f float,
    ip inet, i int, si smallint, t text, tm time, ts timestamp, ti tinyint, u uuid, vi varint,
    l list<int>, s set<text>, m map<text, int>, tup tuple<int, text>, p frozen<point>,
    PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC) AND comment = 'from node'`);

  // Every native type, prepared, written and read back.
  const c = types.TimeUuid.now();
  const u = types.Uuid.random();
  const row = {
    k: 1, c, a: 'ascii', big: types.Long.fromString('-9223372036854775808'), b: Buffer.from([0xca, 0xfe]),
    bool: true, d: types.LocalDate.fromString('2026-11-30'), dec: types.BigDecimal.fromString('-12.345'),
    dbl: 1.5, dur: new types.Duration(1, 2, types.Long.fromNumber(3000000000)), f: 0.5,
    ip: types.InetAddress.fromString('10.1.2.3'), i: -7, si: 300, t: 'héllo', tm: types.LocalTime.fromString('12:34:56.789'),
    ts: new Date('2026-11-30T10:00:00.123Z'), ti: -3, u, vi: types.Integer.fromString('123456789012345678901234567890'),
    l: [3, 1, 2], s: ['a', 'b'], m: { one: 1 }, tup: new types.Tuple(7, 'seven'), p: { x: 1, y: -2, label: 'p' },
  };
  const cols = Object.keys(row);
  await client.execute(`INSERT INTO js.every (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`,
    cols.map((k) => row[k]), { prepare: true });
  const got = (await client.execute('SELECT * FROM js.every WHERE k = ? AND c = ?', [1, c], { prepare: true })).first();
  assert.ok(got, 'the row of every type');
  for (const k of cols) {
    assert.ok(same(row[k], got[k]), `column ${k}: wrote ${row[k]}, read ${got[k]}`);
  }

  const ins = 'INSERT INTO js.every (k, c, t) VALUES (?, ?, ?)';
  // 230 rows of one partition, paged automatically and by hand.
  for (let i = 0; i < 230; i++) {
    await client.execute(ins, [3, types.TimeUuid.now(), `r${i}`], { prepare: true });
  }
  let n = 0;
  for await (const r of client.stream('SELECT t FROM js.every WHERE k = ?', [3], { prepare: true, fetchSize: 40 })) {
    assert.ok(r.t.startsWith('r'));
    n++;
  }
  assert.strictEqual(n, 230, 'rows streamed in pages of 40');
  let pageState = null;
  let pages = 0;
  n = 0;
  do {
    const rs = await client.execute('SELECT t FROM js.every WHERE k = ?', [3], { prepare: true, fetchSize: 100, pageState });
    n += rs.rows.length;
    pages++;
    pageState = rs.pageState;
  } while (pageState);
  assert.strictEqual(n, 230, 'rows paged by hand');
  assert.strictEqual(pages, 3, 'pages of 100');

  // A logged batch over two partitions, and a counter.
  await client.batch([
    { query: ins, params: [4, types.TimeUuid.now(), 'b1'] },
    { query: ins, params: [5, types.TimeUuid.now(), 'b2'] },
  ], { prepare: true });
  const both = await client.execute('SELECT t FROM js.every WHERE k IN (4, 5)');
  assert.deepStrictEqual(both.rows.map((r) => r.t).sort(), ['b1', 'b2'], 'rows of the batch');
  await client.execute('CREATE TABLE IF NOT EXISTS js.hits (page text PRIMARY KEY, n counter)');
  for (let i = 0; i < 3; i++) {
    await client.execute('UPDATE js.hits SET n = n + ? WHERE page = ?', [types.Long.fromNumber(2), 'home'], { prepare: true });
  }
  const hits = (await client.execute("SELECT n FROM js.hits WHERE page = 'home'")).first().n;
  assert.strictEqual(hits.toNumber(), 6, 'the counter');

  // A conditional write: applied, then not, with the current values.
  const lwt = 'INSERT INTO js.every (k, c, t) VALUES (6, 50554d6e-29bb-11e5-b345-feff819cdc9f, ?) IF NOT EXISTS';
  assert.strictEqual((await client.execute(lwt, ['first'], { prepare: true })).wasApplied(), true);
  const again = await client.execute(lwt, ['second'], { prepare: true });
  assert.strictEqual(again.wasApplied(), false);
  assert.strictEqual(again.first().t, 'first', 'the current value of a failed condition');

  // TTL and WRITETIME.
  await client.execute('INSERT INTO js.every (k, c, t) VALUES (7, ?, ?) USING TTL 3600 AND TIMESTAMP 1000', [c, 'ttl'], { prepare: true });
  const tw = (await client.execute('SELECT TTL(t), WRITETIME(t) FROM js.every WHERE k = 7')).first();
  assert.ok(tw['ttl(t)'] > 3590 && tw['ttl(t)'] <= 3600, `TTL ${tw['ttl(t)']}`);
  assert.strictEqual(tw['writetime(t)'].toNumber(), 1000);

  // The schema, read back from system_schema by the driver.
  const table = await client.metadata.getTable('js', 'every');
  assert.deepStrictEqual(table.partitionKeys.map((col) => col.name), ['k']);
  assert.deepStrictEqual(table.clusteringKeys.map((col) => col.name), ['c']);
  assert.deepStrictEqual(table.clusteringOrder, ['DESC']);
  assert.strictEqual(table.comment, 'from node');
  assert.strictEqual(table.columns.length, 25);
  const point = await client.metadata.getUdt('js', 'point');
  assert.deepStrictEqual(point.fields.map((fld) => fld.name), ['x', 'y', 'label']);
  const ks = client.metadata.keyspaces.js;
  assert.strictEqual(ks.strategy, 'org.apache.cassandra.locator.SimpleStrategy');

  // Errors carry their codes, and the server keeps serving.
  const codes = cassandra.types.responseErrorCodes;
  const refused = async (query, code, what) => {
    try {
      await client.execute(query);
    } catch (e) {
      assert.strictEqual(e.code, code, `${what}: ${e.message}`);
      return;
    }
    assert.fail(`${what} was accepted`);
  };
  await refused('SELEC * FROM js.every', codes.syntaxError, 'a syntax error');
  await refused('SELECT nope FROM js.every', codes.invalid, 'an unknown column');
  await refused("CREATE KEYSPACE js WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", codes.alreadyExists, 'an existing keyspace');
  await refused("INSERT INTO js.every (k, c, i) VALUES (1, now(), 'text')", codes.invalid, 'a wrong type');

  await client.execute('DROP KEYSPACE js');
  await client.shutdown();
  console.log('OK');
}

main(process.argv[2], process.argv[3]).catch((e) => {
  console.error(e);
  process.exit(1);
});
