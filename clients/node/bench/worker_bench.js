'use strict';
// pg-coord's Worker and Client.enqueue against hand-written node-postgres
// loops doing the same SQL, on the cluster of the PG* environment, database
// $BENCH_DB (pg_coord installed).  Run by bench/clients/node.sh (make bench).
//
// Sides (each pair alternates which goes first, round by round):
//   worker_single / raw_single        concurrency 1: coord.complete_and_claim(n => 1)
//                                     per job (the raw loop starts with one claim)
//   worker_onecommit / worker_claim_then_complete
//                                     the single-job Worker (concurrency 1; above 1
//                                     jobs finishing together complete in one
//                                     statement either way) with and without
//                                     coord.complete_and_claim (useCompleteAndClaim):
//                                     one statement and commit per job, or two
//   worker_batch / raw_batch          claims of BATCH jobs; raw: coord.claim(n) then
//                                     coord.complete_many(ids, tokens) per batch
//   enqueue_client / enqueue_raw      Client.enqueue against pg.Pool.query of the
//                                     same SELECT coord.enqueue($1, $2::jsonb)
// A first round (up to 1,000 jobs a side) warms the code up (JIT) and is not
// printed.  Handlers return nothing, session-bound claims, empty payloads.  The Worker
// reads every column of coord.claimed_job (its Job has them), the raw loops
// id, token and payload; the Worker sends a handler's undefined as JSON null
// to complete_and_claim, the raw loop NULL.
//
// Prints on stdout the lines of bench/run.sh's clients convention: first
// ratio|SIDE|BASELINE|MIN_RATIO|TEXT per comparison, then one line per round
// and side, SIDE|JOBS_PER_S|CPU_US_PER_JOB|CLIENT_US|SERVER_US: CPU per job
// of this process (user + system) plus that of the server backend the side
// used (/proc/<pid>/stat; 0 when unreadable), from the first job in hand
// (or enqueue) to the n-th done.
// Environment: BENCH_DB (coord_bench), CLIENTS_ROUNDS (3), CLIENTS_JOBS (600:
// a single-job or enqueue side and round), CLIENTS_BATCH_JOBS (6000),
// NODE_BENCH_BATCH (100), NODE_BENCH_SIDES (a comma list; all).
const fs = require('fs');
const pg = require('pg');
const { Worker, Client } = require('..');

const database = process.env.BENCH_DB || 'coord_bench';
const ROUNDS = Number(process.env.CLIENTS_ROUNDS || 3);
const N1 = Number(process.env.CLIENTS_JOBS || 600);
const NB = Number(process.env.CLIENTS_BATCH_JOBS || 6000);
const NE = N1;
const BATCH = Number(process.env.NODE_BENCH_BATCH || 100);
const ONLY = process.env.NODE_BENCH_SIDES ? new Set(process.env.NODE_BENCH_SIDES.split(',')) : null;

// CPU (µs, user + system) a backend has used so far; null when /proc is not readable
const TICK_US = 1e6 / 100;
function backendCpu(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_US;
  } catch (e) {
    return null;
  }
}

let admin;
function report(side, n, s, cpu, server) {
  const client = (cpu.user + cpu.system) / n, srv = server == null ? 0 : server / n;
  console.log(`${side}|${(n / s).toFixed(1)}|${(client + srv).toFixed(1)}|${client.toFixed(1)}|${srv.toFixed(1)}`);
  console.error(`# ${side}: ${n} jobs in ${s.toFixed(2)} s`);
}
async function fill(queue, n) {
  for (let left = n; left > 0; left -= 10000)
    await admin.query("SELECT count(*) FROM coord.enqueue_many($1, array_fill('{}'::jsonb, ARRAY[$2::int]))", [queue, Math.min(left, 10000)]);
}

// Timing starts with the first job in hand (connect, the Worker's server
// check and LISTEN, and the first claim are left out on both sides) and ends
// with the n-th job finished; CPU likewise (the backend's from /proc).
function mark(pid) {
  return { t0: process.hrtime.bigint(), c0: process.cpuUsage(), s0: backendCpu(pid), pid };
}
async function measure(side, n, fn, print = true) {
  const r = await fn();
  const s = Number(process.hrtime.bigint() - r.m.t0) / 1e9;
  const cpu = process.cpuUsage(r.m.c0);
  const s1 = backendCpu(r.m.pid);
  await r.end();
  if (print) report(side, n, s, cpu, s1 == null || r.m.s0 == null ? null : s1 - r.m.s0);
}

async function rawConn() {
  const c = new pg.Client({ database });
  await c.connect();
  return c;
}

// raw_single: the one-commit loop by hand (what a handler needs: id, token, payload)
async function rawSingle(queue, n) {
  const c = await rawConn();
  let { rows } = await c.query('SELECT id, token, payload FROM coord.claim($1, 1, session_bound => true)', [queue]);
  const m = mark(c.processID);
  let done = 0;
  while (rows.length && rows[0].id != null) {
    const j = rows[0];
    ({ rows } = await c.query('SELECT completed, id, token, payload FROM coord.complete_and_claim($1, $2, NULL, n => 1, session_bound => true)',
      [j.id, j.token]));
    if (rows[0].completed) done++;
    if (done === n) break;
  }
  if (done !== n) throw new Error(`raw_single: ${done} of ${n} jobs`);
  return { m, end: () => c.end() };
}

// raw_batch: claim BATCH, complete_many
async function rawBatch(queue, n) {
  const c = await rawConn();
  let m = null, done = 0;
  while (done < n) {
    const { rows } = await c.query('SELECT id, token, payload FROM coord.claim($1, $2, session_bound => true)', [queue, BATCH]);
    if (!m) m = mark(c.processID);
    if (!rows.length) throw new Error(`raw_batch: queue empty after ${done} of ${n}`);
    const r = await c.query('SELECT coord.complete_many($1, $2) AS n', [rows.map((j) => j.id), rows.map((j) => j.token)]);
    done += r.rows[0].n;
  }
  return { m, end: () => c.end() };
}

async function worker(queue, n, options) {
  let w, m = null, done = 0;
  await new Promise((resolve, reject) => {
    w = new Worker({
      database, queue, handleSignals: false, ...options,
      handler: () => { if (!m) m = mark(w._conn.processID); },
    });
    w.on('completed', () => { if (++done === n) resolve(); });
    w.run().catch(reject);
  });
  return { m, end: () => w.stop() };
}

async function enqueueClient(queue, n) {
  const client = new Client({ database, max: 1 });
  await client.enqueue(queue, {});            // connect + the server check, outside the count
  const pid = (await client.query('SELECT pg_backend_pid() AS p')).rows[0].p;
  const m = mark(pid);
  for (let i = 0; i < n; i++) await client.enqueue(queue, { i });
  return { m, end: () => client.end() };
}

async function enqueueRaw(queue, n) {
  const pool = new pg.Pool({ database, max: 1 });
  await pool.query('SELECT coord.enqueue($1, $2::jsonb) AS id', [queue, {}]);
  const pid = (await pool.query('SELECT pg_backend_pid() AS p')).rows[0].p;
  const m = mark(pid);
  for (let i = 0; i < n; i++) await pool.query('SELECT coord.enqueue($1, $2::jsonb) AS id', [queue, { i }]);
  return { m, end: () => pool.end() };
}

// [side, jobs per round, run(n)]
const PAIRS = [
  [['worker_single', N1, (n) => worker('nb_ws', n, { concurrency: 1, batch: 1 })],
    ['raw_single', N1, (n) => rawSingle('nb_rs', n)]],
  [['worker_onecommit', N1, (n) => worker('nb_oc', n, { concurrency: 1, batch: 1 })],
    ['worker_claim_then_complete', N1, (n) => worker('nb_ctc', n, { concurrency: 1, batch: 1, useCompleteAndClaim: false })]],
  [['worker_batch', NB, (n) => worker('nb_wb', n, { concurrency: BATCH, batch: BATCH })],
    ['raw_batch', NB, (n) => rawBatch('nb_rb', n)]],
];
const ENQ = [['enqueue_client', NE, (n) => enqueueClient('nb_ec', n)], ['enqueue_raw', NE, (n) => enqueueRaw('nb_er', n)]];
const QUEUE = { worker_single: 'nb_ws', raw_single: 'nb_rs', worker_onecommit: 'nb_oc', worker_claim_then_complete: 'nb_ctc',
  worker_batch: 'nb_wb', raw_batch: 'nb_rb', enqueue_client: 'nb_ec', enqueue_raw: 'nb_er' };

(async () => {
  admin = new pg.Client({ database });
  await admin.connect();
  console.log('ratio|worker_single|raw_single|0.9|Node Worker, single-job (complete_and_claim), against a hand-written pg loop of the same statement');
  console.log('ratio|worker_onecommit|worker_claim_then_complete|1.3|Node Worker, single-job: one commit per job (complete_and_claim) against complete then claim');
  console.log(`ratio|worker_batch|raw_batch|0.9|Node Worker, batched (claims of ${BATCH}), against a hand-written claim + complete_many loop`);
  console.log('ratio|enqueue_client|enqueue_raw|0.91|Node Client.enqueue against pg.Pool.query of the same SELECT coord.enqueue (within 1.1x)');
  // round -1 warms up both sides' code (JIT) and is not printed: with fewer
  // jobs, the side that came first in round 0 was still the slower one
  for (let round = -1; round < ROUNDS; round++) {
    const scale = (n) => (round < 0 ? Math.min(n, 1000) : n);
    for (const pair of PAIRS) {
      for (const [side, n, fn] of round % 2 ? [...pair].reverse() : pair) {
        if (ONLY && !ONLY.has(side)) continue;
        await fill(QUEUE[side], scale(n));
        await admin.query('CHECKPOINT').catch(() => {});
        await measure(side, scale(n), () => fn(scale(n)), round >= 0);
      }
    }
    for (const [side, n, fn] of round % 2 ? [...ENQ].reverse() : ENQ) {
      if (ONLY && !ONLY.has(side)) continue;
      await measure(side, scale(n), () => fn(scale(n)), round >= 0);
    }
  }
  await admin.end();
})().catch((e) => { console.error(e); process.exit(1); });
