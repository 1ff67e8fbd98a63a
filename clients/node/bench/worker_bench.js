'use strict';
// jobs/s of pg-coord's Worker against a hand-written node-postgres loop
// doing the same SQL (claim, complete; session-bound), on the cluster of
// the PG* environment, database $BENCH_DB (pg_coord installed).
//   node bench/worker_bench.js [jobs=3000] [concurrency=1] [batch=1]
// Prints one line per loop: name, jobs, seconds, jobs/s, CPU ms per job of this process.
const pg = require('pg');
const { Worker } = require('..');

const N = Number(process.argv[2] || 3000);
const CONC = Number(process.argv[3] || 1);
const BATCH = Number(process.argv[4] || 1);
const database = process.env.BENCH_DB || 'coord_bench';

async function fill(c, queue) {
  await c.query("SELECT coord.enqueue_many($1, array_fill('{}'::jsonb, ARRAY[$2::int]))", [queue, N]);
}

async function measure(name, fn) {
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  await fn();
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(c0);
  console.log(`${name}\t${N}\t${s.toFixed(2)}\t${(N / s).toFixed(0)}\t${((cpu.user + cpu.system) / 1000 / N).toFixed(3)}`);
  return N / s;
}

async function handWritten(queue) {
  const c = new pg.Client({ database });
  await c.connect();
  let done = 0;
  while (done < N) {
    const { rows } = await c.query('SELECT id, token, payload FROM coord.claim($1, $2, session_bound => true)', [queue, BATCH]);
    for (const j of rows) {
      await c.query('SELECT coord.complete($1, $2, $3)', [j.id, j.token, { ok: true }]);
      done++;
    }
  }
  await c.end();
}

async function library(queue, fused) {
  let done = 0;
  let w;
  await new Promise((resolve, reject) => {
    w = new Worker({
      database, queue, concurrency: CONC, batch: BATCH, handleSignals: false, useCompleteAndClaim: fused,
      handler: () => ({ ok: true }),
    });
    w.on('completed', () => { if (++done === N) resolve(); });
    w.run().catch(reject);
  });
  await w.stop();
  return w.usesCompleteAndClaim;
}

(async () => {
  const admin = new pg.Client({ database });
  await admin.connect();
  for (const q of ['b_raw', 'b_lib', 'b_fused']) await fill(admin, q);
  console.log('loop\tjobs\tseconds\tjobs/s\tcpu_ms_per_job');
  const raw = await measure('hand-written claim+complete', () => handWritten('b_raw'));
  let fused;
  const lib = await measure('pg-coord Worker (claim-then-complete)', () => library('b_lib', false));
  const lf = await measure('pg-coord Worker (complete_and_claim if present)', async () => { fused = await library('b_fused', true); });
  console.log(`ratio library/hand-written ${(lib / raw).toFixed(2)}; one-commit ${(lf / raw).toFixed(2)} (${fused ? 'complete_and_claim' : 'not on this server'})`);
  await admin.end();
})().catch((e) => { console.error(e); process.exit(1); });
