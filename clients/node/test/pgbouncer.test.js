'use strict';
// S-pgbouncer-lease: a lease-claim worker (no LISTEN) through a real
// PgBouncer in transaction mode with one server connection (test/clients/
// node.sh starts it: PGB_HOST, PGB_PORT, PGB_DB), pg with its defaults; two
// workers and a producer share that one server connection.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Client, Worker } = require('..');
const { admin, waitFor } = require('./helpers');

test('S-pgbouncer-lease: lease workers (and a lease lock) through PgBouncer in transaction mode do every job once', async (t) => {
  const { PGB_HOST, PGB_PORT, PGB_DB } = process.env;
  if (!PGB_HOST) return t.skip('no PgBouncer: run test/clients/node.sh');
  const via = { host: PGB_HOST, port: Number(PGB_PORT), database: PGB_DB };
  const direct = await admin(PGB_DB);
  const client = new Client({ ...via, max: 2 });
  const workers = [];
  try {
    await direct.query('CREATE TABLE IF NOT EXISTS pgb_side (job_id bigint, worker int)');
    const ids = await client.enqueueMany('pgb', Array.from({ length: 20 }, (_, i) => ({ i })));
    for (let w = 1; w <= 2; w++) {
      const worker = new Worker({
        ...via, queue: 'pgb', concurrency: 2, sessionBound: false, listen: false, lease: 5, heartbeat: 0.2,
        pollInterval: 0.2, handleSignals: false,
        async handler(job) {
          await new Promise((r) => setTimeout(r, 50));
          await job.progress({ w });
          return job.transaction(async (tx) => {
            await tx.query('INSERT INTO pgb_side VALUES ($1, $2)', [job.id, w]);
            return { i: job.payload.i, w };
          });
        },
      });
      workers.push({ worker, running: worker.run() });
    }
    await waitFor('every job done', async () =>
      (await direct.query("SELECT count(*)::int AS c FROM coord.jobs WHERE queue = 'pgb' AND state = 'done'")).rows[0].c === ids.length, 30);
    const { rows } = await direct.query('SELECT job_id, count(*)::int AS c FROM pgb_side GROUP BY job_id');
    assert.equal(rows.length, ids.length);
    assert.ok(rows.every((r) => r.c === 1), 'each job once');
    const res = await direct.query('SELECT result FROM coord.jobs WHERE id = ANY ($1::bigint[]) ORDER BY id', [ids]);
    assert.deepEqual(res.rows.map((r) => r.result.i), ids.map((_, i) => i));
    assert.equal(new Set(res.rows.map((r) => r.result.w)).size >= 1, true);
    // a lease lock works through the pooler too
    assert.equal(typeof (await client.leaseLock('/pgb/lease', async ({ token }) => token, { ttl: 5 })), 'number');
  } finally {
    for (const { worker, running } of workers) { await worker.stop(); await running.catch(() => {}); }
    await client.end();
    await direct.end();
  }
});
