'use strict';
// clients/scenarios.md, run by the Node library against a real cluster (the
// PG* environment: make test's private cluster).  Test names start with the
// scenario id, so both libraries' results line up.
const test = require('node:test');
const assert = require('node:assert/strict');
const {
  Client, Worker, RetryAfter, JobCancelledError, ConnectionLostError, CoordTimeoutError,
} = require('..');
const { freshDb, waitFor, spawnWorker } = require('./helpers');

async function runWorker(opts, body) {
  const w = new Worker({ handleSignals: false, pollInterval: 0.5, ...opts });
  const running = w.run();
  try {
    return await body(w);
  } finally {
    // a handler a failed test left waiting must fail the test, not hang the suite
    let t;
    const stuck = new Promise((_, reject) => { t = setTimeout(() => reject(new Error('the worker did not drain within 20 s')), 20000); });
    try {
      await Promise.race([w.stop().then(() => running), stuck]);
    } finally {
      clearTimeout(t);
    }
  }
}

test('S-results: jobs are done with their results, failures fail, an idle worker is woken by NOTIFY', async () => {
  const db = await freshDb('done');
  const client = new Client({ database: db.name });
  try {
    const ids = [];
    for (let i = 1; i <= 20; i++) ids.push(await client.enqueue('q', { n: i }));
    const bad = await client.enqueue('q', { boom: true }, { maxAttempts: 1 });
    await runWorker({
      database: db.name, queue: 'q', concurrency: 3, pollInterval: 30,
      handler: async (job) => {
        if (job.payload.boom) throw new Error('no good');
        return { square: job.payload.n * job.payload.n };
      },
    }, async () => {
      for (let i = 0; i < ids.length; i++) {
        const r = await client.awaitResult(ids[i], { timeout: 20 });
        assert.deepEqual(r, { state: 'done', result: { square: (i + 1) ** 2 }, error: null });
      }
      const r = await client.awaitResult(bad, { timeout: 20 });
      assert.equal(r.state, 'dead');
      assert.match(r.error, /no good/);
      const rows = await db.q('SELECT id, state, result FROM coord.jobs WHERE id = ANY ($1::bigint[]) ORDER BY id', [ids]);
      assert.deepEqual(rows.map((x) => x.result.square), ids.map((_, i) => (i + 1) ** 2));
      // idle now (its poll is 30 s): a new job is claimed at once, woken by NOTIFY
      await waitFor('the worker idle on LISTEN', async () =>
        (await db.one("SELECT count(*)::int AS c FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%coord.next_due%' AND state = 'idle'")).c === 1, 5);
      const t0 = Date.now();
      const late = await client.enqueue('q', { n: 100 });
      assert.deepEqual((await client.awaitResult(late, { timeout: 10 })).result, { square: 10000 });
      assert.ok(Date.now() - t0 < 2000, `woken ${Date.now() - t0} ms after the enqueue`);
    });
  } finally {
    await client.end();
    await db.drop();
  }
});

async function bothPaths(db, client, fused) {
  const queue = fused ? 'fused' : 'classic';
  const ids = [];
  for (let i = 1; i <= 20; i++) ids.push(await client.enqueue(queue, { n: i }));
  const bad = await client.enqueue(queue, { boom: 1 }, { maxAttempts: 1 });
  const snooze = await client.enqueue(queue, { snooze: 1 });
  let snoozed = 0;
  await runWorker({
    database: db.name, queue, useCompleteAndClaim: fused,
    handler: async (job) => {
      if (job.payload.boom) throw new Error('boom');
      if (job.payload.snooze && snoozed++ === 0) throw new RetryAfter(0.1);
      return { n: job.payload.n ?? 0 };
    },
  }, async (w) => {
    for (let i = 0; i < ids.length; i++)
      assert.deepEqual((await client.awaitResult(ids[i], { timeout: 20 })).result, { n: i + 1 });
    assert.equal((await client.awaitResult(bad, { timeout: 20 })).state, 'dead');
    assert.equal((await client.awaitResult(snooze, { timeout: 20 })).state, 'done');
    assert.equal(w.usesCompleteAndClaim, fused);
  });
}

// coord.complete_and_claim's contract (docs/jobs.md, One commit per job) in
// plpgsql, for a server that lacks it; the worker finds it in pg_proc.
const OUT_COLS = `id bigint, queue text, payload jsonb, attempt integer, token bigint,
               lease_until timestamptz, key text, group_key text, host text, run_at timestamptz`;
const STAND_IN = ['complete', 'fail'].map((kind) => {
  const [first, call, args, claimArgs] = kind === 'complete'
    ? ['completed boolean', 'coord.complete($1, $2, $3)',
      `id bigint, token bigint, result jsonb DEFAULT NULL, n integer DEFAULT 1, lease interval DEFAULT '5 minutes',
       session_bound boolean DEFAULT false, host text DEFAULT NULL, partition_group text DEFAULT NULL`, '$4, $5, $7, $6, partition_group => $8']
    : ['state text', 'coord.fail($1, $2, $3, $4, $5)',
      `id bigint, token bigint, error text DEFAULT NULL, retry_after interval DEFAULT NULL, pause_key boolean DEFAULT false,
       n integer DEFAULT 1, lease interval DEFAULT '5 minutes', session_bound boolean DEFAULT false, host text DEFAULT NULL,
       partition_group text DEFAULT NULL`, '$6, $7, $9, $8, partition_group => $10'];
  const n = kind === 'complete' ? 8 : 10;
  const params = Array.from({ length: n }, (_, i) => `$${i + 1}`).join(', ');
  // plpgsql refuses an IN and an OUT parameter of one name: its body is a
  // helper with other OUT names, wrapped in a SQL function with the real ones
  return `
CREATE FUNCTION coord.${kind}_and_claim_impl(${args})
RETURNS TABLE (answer ${first.split(' ')[1]}, j coord.claimed_job) LANGUAGE plpgsql AS $f$
DECLARE a ${first.split(' ')[1]}; q text; got boolean := false; r coord.claimed_job;
BEGIN
  a := ${call};
  SELECT x.queue INTO q FROM coord.jobs x WHERE x.id = $1;
  FOR r IN SELECT * FROM coord.claim(q, ${claimArgs}) LOOP
    got := true; answer := a; j := r; RETURN NEXT;
  END LOOP;
  IF NOT got THEN answer := a; j := NULL; RETURN NEXT; END IF;
END $f$;
CREATE FUNCTION coord.${kind}_and_claim(${args})
RETURNS TABLE (${first}, ${OUT_COLS}) LANGUAGE sql AS $f$
  SELECT i.answer, (i.j).id, (i.j).queue, (i.j).payload, (i.j).attempt, (i.j).token, (i.j).lease_until,
         (i.j).key, (i.j).group_key, (i.j).host, (i.j).run_at
  FROM coord.${kind}_and_claim_impl(${params}) AS i
$f$;`;
}).join('\n');

test('S-one-commit: the single-job path with coord.complete_and_claim and with claim-then-complete', async () => {
  const db = await freshDb('onecommit');
  const client = new Client({ database: db.name });
  try {
    const has = (await db.one("SELECT count(*)::int AS c FROM pg_proc WHERE proname IN ('complete_and_claim', 'fail_and_claim') AND pronamespace = 'coord'::regnamespace")).c;
    if (has < 2) await db.q(STAND_IN);
    await bothPaths(db, client, false);
    await bothPaths(db, client, true);
  } finally {
    await client.end();
    await db.drop();
  }
});

async function exactlyOnceKill(sessionBound) {
  const db = await freshDb(sessionBound ? 'kill_sb' : 'kill_lease');
  const lease = 2;
  try {
    await db.q('CREATE TABLE side (job_id bigint, attempt int, worker int, at timestamptz DEFAULT clock_timestamp())');
    await db.q('GRANT ALL ON side TO PUBLIC');
    const n = 12;
    await db.q("SELECT coord.enqueue('k', jsonb_build_object('i', g)) FROM generate_series(1, $1) g", [n]);
    const env = { DB: db.name, QUEUE: 'k', SESSION_BOUND: sessionBound ? '1' : '0', LEASE: String(lease), CONCURRENCY: '2' };
    const a = spawnWorker({ ...env, WORK_MS: '300' });
    // kill it while it holds jobs, after it has finished some
    await waitFor('worker A to finish a job and hold others', async () =>
      (await db.one('SELECT count(*)::int AS c FROM side')).c >= 2 &&
      (await db.one("SELECT count(*)::int AS c FROM coord.jobs WHERE queue = 'k' AND state = 'running'")).c >= 1);
    const before = await db.q(`SELECT id FROM coord.jobs WHERE queue = 'k' AND state = 'running'`);
    a.kill('SIGKILL');
    const killedAt = Date.now();
    await a.exit;
    const heldIds = before.map((r) => r.id);
    assert.ok(heldIds.length >= 1, 'worker A held a job when killed');
    // (a session-bound claim is gone by now; a lease claim is running until its lease ends)
    const held = await db.q(`SELECT id, lease_until FROM coord.jobs WHERE id = ANY ($1::bigint[]) AND state = 'running'`, [heldIds]);
    if (!sessionBound) assert.ok(held.length >= 1, 'a lease claim outlives its worker');
    if (sessionBound) {
      // claimable again at once: no lease to wait out
      await waitFor('the killed worker\'s jobs to be claimable', async () =>
        (await db.one("SELECT count(*)::int AS c FROM coord.jobs WHERE id = ANY ($1::bigint[]) AND state = 'running'", [heldIds])).c === 0, 5);
      assert.ok(Date.now() - killedAt < lease * 1000, 'released before a lease would have ended');
    }
    const b = spawnWorker({ ...env, WORK_MS: '20' });
    try {
      await waitFor('every job done', async () =>
        (await db.one("SELECT count(*)::int AS c FROM coord.jobs WHERE queue = 'k' AND state = 'done'")).c === n, 30);
    } finally {
      b.kill('SIGTERM');
      await b.exit;
    }
    const rows = await db.q('SELECT job_id, count(*)::int AS c, max(at) AS at FROM side GROUP BY job_id');
    assert.equal(rows.length, n, 'every job wrote its side-table row');
    assert.ok(rows.every((r) => r.c === 1), `each exactly once: ${JSON.stringify(rows.filter((r) => r.c !== 1))}`);
    if (!sessionBound) {
      // a lease claim is re-run only after its lease
      for (const h of held) {
        const r = rows.find((x) => x.job_id === h.id || String(x.job_id) === String(h.id));
        assert.ok(r.at >= h.lease_until, `job ${h.id} re-run at ${r.at.toISOString()}, its lease ended ${h.lease_until.toISOString()}`);
      }
    }
  } finally {
    await db.drop();
  }
}

test('S-exactly-once-kill-session: session-bound worker SIGKILLed mid-job, jobs re-run at once, each done once', () => exactlyOnceKill(true));
test('S-exactly-once-kill-lease: lease worker SIGKILLed mid-job, jobs re-run after the lease, each done once', () => exactlyOnceKill(false));

test('S-drain: SIGTERM finishes held jobs, claims no more, exits 0', async () => {
  const db = await freshDb('drain');
  try {
    await db.q('CREATE TABLE side (job_id bigint, attempt int, worker int, at timestamptz DEFAULT clock_timestamp())');
    await db.q("SELECT coord.enqueue('d', '{}') FROM generate_series(1, 6)");
    const w = spawnWorker({ DB: db.name, QUEUE: 'd', CONCURRENCY: '2', WORK_MS: '1000' });
    await waitFor('two jobs running', async () =>
      (await db.one("SELECT count(*)::int AS c FROM coord.jobs WHERE queue = 'd' AND state = 'running'")).c === 2);
    const held = (await db.q("SELECT id FROM coord.jobs WHERE queue = 'd' AND state = 'running' ORDER BY id")).map((r) => r.id);
    w.kill('SIGTERM');
    const { code } = await w.exit;
    assert.equal(code, 0, w.output());
    assert.match(w.output(), /drained/);
    const done = (await db.q("SELECT id FROM coord.jobs WHERE queue = 'd' AND state = 'done' ORDER BY id")).map((r) => r.id);
    assert.deepEqual(done, held, 'exactly the held jobs finished');
    const c = await db.one("SELECT count(*)::int AS c FROM coord.jobs WHERE queue = 'd' AND state = 'ready' AND attempt = 0");
    assert.equal(c.c, 4, 'no new claims after SIGTERM');
  } finally {
    await db.drop();
  }
});

test('S-retry-after: RetryAfter snoozes the job (no attempt used) and pauses its limit key', async () => {
  const db = await freshDb('retry');
  const client = new Client({ database: db.name });
  try {
    const id = await client.enqueue('r', { url: 'x' }, { limitKey: 'example.com' });
    const calls = [];
    await runWorker({
      database: db.name, queue: 'r', pollInterval: 5,
      handler: async (job) => {
        calls.push({ attempt: job.attempt, at: Date.now() });
        if (calls.length === 1) throw new RetryAfter(1.5, { pauseKey: true });
        return { ok: calls.length };
      },
    }, async () => {
      await waitFor('the first attempt', () => calls.length >= 1);
      await waitFor('the snooze', async () => (await db.one('SELECT state FROM coord.jobs WHERE id = $1', [id])).state === 'scheduled', 5);
      const lim = await waitFor('the key paused', async () =>
        (await db.one("SELECT paused_until FROM coord.limits WHERE queue = 'r' AND limit_key = 'example.com' AND paused_until > now()")));
      assert.ok(lim.paused_until instanceof Date);
      const r = await client.awaitResult(id, { timeout: 10 });
      assert.deepEqual(r.result, { ok: 2 });
      // woken by next_due, not the 5 s poll
      const gap = calls[1].at - calls[0].at;
      assert.ok(gap >= 1000 && gap < 4500, `re-run ${gap} ms later`);
      const j = await db.one('SELECT snoozes, attempt FROM coord.jobs WHERE id = $1', [id]);
      assert.equal(j.snoozes, 1);
      assert.deepEqual(calls.map((c) => c.attempt), [1, 1], 'a retry_after uses up no attempt');
    });
  } finally {
    await client.end();
    await db.drop();
  }
});

test('S-flow: a flow; the child reads its parents\' results', async () => {
  const db = await freshDb('flow');
  const client = new Client({ database: db.name });
  try {
    const ids = await client.enqueueFlow([
      { name: 'a', queue: 'f', payload: { x: 1 } },
      { name: 'b', queue: 'f', payload: { x: 2 } },
      { name: 'sum', queue: 'f', payload: {}, after: ['a', 'b'] },
    ]);
    assert.deepEqual(Object.keys(ids).sort(), ['a', 'b', 'sum']);
    await runWorker({
      database: db.name, queue: 'f', concurrency: 2,
      handler: async (job) => {
        if (job.payload.x) return { v: job.payload.x * 10 };
        const parents = await job.parentResults();
        assert.deepEqual(parents.map((p) => p.parentId).sort((p, q) => p - q), [ids.a, ids.b].sort((p, q) => p - q));
        return { sum: parents.reduce((s, p) => s + p.result.v, 0), states: parents.map((p) => p.state) };
      },
    }, async () => {
      const r = await client.awaitResult(ids.sum, { timeout: 20 });
      assert.deepEqual(r.result, { sum: 30, states: ['done', 'done'] });
    });
  } finally {
    await client.end();
    await db.drop();
  }
});

test('S-cancel: coord.cancel of a running job aborts job.signal; its late completion does not count', async () => {
  const db = await freshDb('cancel');
  const client = new Client({ database: db.name });
  try {
    const id = await client.enqueue('c', {});
    let started = false, reason = null, abortedAt = 0, lost = null;
    await runWorker({
      database: db.name, queue: 'c',
      handler: (job) => new Promise((resolve) => {
        started = true;
        setTimeout(() => resolve({ never: 'told' }), 8000);     // a cancel that never arrives fails, not hangs
        job.signal.addEventListener('abort', () => {
          reason = job.signal.reason; abortedAt = Date.now();
          resolve({ late: true });            // finishes anyway: must not count
        });
      }),
    }, async (w) => {
      w.on('lost', (job) => { lost = job.id; });
      await waitFor('the handler to start', () => started);
      const t0 = Date.now();
      assert.equal(await client.cancel(id), true);
      await waitFor('the signal to abort', () => reason !== null, 5);
      assert.ok(reason instanceof JobCancelledError, String(reason));
      assert.ok(abortedAt - t0 < 2000, `told ${abortedAt - t0} ms after the cancel`);
      await waitFor('the late completion to be refused', () => lost === id, 5);
      const r = await client.awaitResult(id, { timeout: 5 });
      assert.equal(r.state, 'cancelled');
      assert.equal(r.result, null);
    });
  } finally {
    await client.end();
    await db.drop();
  }
});

test('S-await: awaitResult times out with state null, returns a done job\'s result and a dead one\'s error', async () => {
  const db = await freshDb('await');
  const client = new Client({ database: db.name });
  try {
    const id = await client.enqueue('a', { v: 7 });
    const t0 = Date.now();
    const early = await client.awaitResult(id, { timeout: 0.3 });
    assert.deepEqual(early, { state: null, result: null, error: null });
    assert.ok(Date.now() - t0 >= 250);
    const waiting = client.awaitResult(id, { timeout: 20 });
    const dies = await client.enqueue('a', { die: true }, { maxAttempts: 1 });
    await runWorker({
      database: db.name, queue: 'a',
      handler: async (job) => { if (job.payload.die) throw new Error('it died'); return { got: job.payload.v }; },
    }, async () => {
      assert.deepEqual(await waiting, { state: 'done', result: { got: 7 }, error: null });
      const d = await client.awaitResult(dies, { timeout: 20 });
      assert.equal(d.state, 'dead');
      assert.equal(d.result, null);
      assert.match(d.error, /it died/);
    });
  } finally {
    await client.end();
    await db.drop();
  }
});

test('S-steps: a re-run skips the steps done before', async () => {
  const db = await freshDb('steps');
  const client = new Client({ database: db.name });
  try {
    const id = await client.enqueue('s', {});
    const ran = { charge: 0, receipt: 0 };
    let attempts = 0;
    await runWorker({
      database: db.name, queue: 's',
      handler: async (job) => {
        attempts++;
        const charge = await job.step('charge', async () => { ran.charge++; return { chargeId: 'ch_1' }; });
        if (attempts === 1) throw new RetryAfter(0.2);
        const receipt = await job.step('receipt', async () => { ran.receipt++; return { mail: 'sent' }; });
        return { charge, receipt };
      },
    }, async () => {
      const r = await client.awaitResult(id, { timeout: 20 });
      assert.deepEqual(r.result, { charge: { chargeId: 'ch_1' }, receipt: { mail: 'sent' } });
    });
    assert.equal(attempts, 2);
    assert.deepEqual(ran, { charge: 1, receipt: 1 });
  } finally {
    await client.end();
    await db.drop();
  }
});

test('S-progress: job.progress shows in coord.jobs while the job runs', async () => {
  const db = await freshDb('progress');
  const client = new Client({ database: db.name });
  try {
    const id = await client.enqueue('p', {});
    let release;
    const gate = new Promise((r) => { release = r; });
    await runWorker({
      database: db.name, queue: 'p',
      handler: async (job) => {
        assert.equal(await job.progress({ done: 40, of: 100 }), true);
        await gate;
        return 'ok';
      },
    }, async () => {
      const row = await waitFor('the progress', async () =>
        (await db.one("SELECT state, progress FROM coord.jobs WHERE id = $1 AND progress IS NOT NULL", [id])));
      assert.deepEqual(row, { state: 'running', progress: { done: 40, of: 100 } });
      release();
      assert.equal((await client.awaitResult(id, { timeout: 10 })).result, 'ok');
    });
  } finally {
    await client.end();
    await db.drop();
  }
});

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const TP2 = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

test('S-trace: a traceparent given to enqueue is stored and is the job\'s job.trace', async () => {
  const db = await freshDb('trace');
  const client = new Client({ database: db.name });
  try {
    const traced = await client.enqueue('t', {}, { trace: TP });
    const plain = await client.enqueue('t', {});
    await assert.rejects(client.enqueue('t', {}, { trace: '00-nope' }), (e) => e.code === '22023');
    assert.equal((await db.one('SELECT trace FROM coord.jobs WHERE id = $1', [traced])).trace, TP);
    const seen = new Map();
    await runWorker({
      database: db.name, queue: 't',
      handler: async (job) => { seen.set(String(job.id), job.trace); },
    }, async () => {
      await waitFor('both jobs done', async () =>
        (await db.one("SELECT count(*)::int AS n FROM coord.jobs WHERE id IN ($1, $2) AND state = 'done'", [traced, plain])).n === 2);
    });
    assert.deepEqual(Object.fromEntries(seen), { [String(traced)]: TP, [String(plain)]: null });
  } finally {
    await client.end();
    await db.drop();
  }
});

// @opentelemetry/api is not in Debian: a stand-in with its API's shape
// (context.active / with on AsyncLocalStorage, propagation.inject / extract),
// found by require through NODE_PATH.
const FAKE_OTEL = `'use strict';
const { AsyncLocalStorage } = require('async_hooks');
const als = new AsyncLocalStorage();
const ROOT = { traceparent: null };
module.exports = {
  context: { active: () => als.getStore() || ROOT, with: (ctx, fn, thisArg, ...args) => als.run(ctx, () => fn.apply(thisArg, args)) },
  propagation: {
    inject: (ctx, carrier) => { if (ctx.traceparent) carrier.traceparent = ctx.traceparent; },
    extract: (ctx, carrier) => ({ traceparent: carrier.traceparent || null }),
  },
};
`;

test('S-trace (OpenTelemetry): enqueue sends the active context\'s traceparent, the handler runs in the job\'s', async () => {
  const fs = require('fs'), os = require('os'), path = require('path'), Module = require('module');
  const otel = require('../lib/otel');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-coord-otel-'));
  fs.mkdirSync(path.join(dir, '@opentelemetry', 'api'), { recursive: true });
  fs.writeFileSync(path.join(dir, '@opentelemetry', 'api', 'index.js'), FAKE_OTEL);
  const oldPath = process.env.NODE_PATH;
  process.env.NODE_PATH = [dir, oldPath].filter(Boolean).join(path.delimiter);
  Module._initPaths();
  otel._resetOtel();
  const db = await freshDb('otel');
  const client = new Client({ database: db.name });
  try {
    const api = require('@opentelemetry/api');
    const [injected, explicit, untraced, many] = await api.context.with({ traceparent: TP }, async () => [
      await client.enqueue('o', {}),
      await client.enqueue('o', {}, { trace: TP2 }),
      await client.enqueue('o', {}, { trace: null }),
      (await client.enqueueMany('o', [{}]))[0],
    ]);
    const outside = await client.enqueue('o', {});
    const ids = [injected, explicit, untraced, many, outside];
    const rows = await db.q('SELECT id, trace FROM coord.jobs WHERE id = ANY($1) ORDER BY id', [ids]);
    assert.deepEqual(rows.map((r) => r.trace), [TP, TP2, null, TP, null]);
    const seen = new Map();
    await runWorker({
      database: db.name, queue: 'o', concurrency: 2,
      handler: async (job) => {
        await new Promise((r) => setTimeout(r, 5));  // the context survives an await
        seen.set(String(job.id), api.context.active().traceparent);
      },
    }, async () => {
      await waitFor('the jobs done', async () =>
        (await db.one("SELECT count(*)::int AS n FROM coord.jobs WHERE id = ANY($1) AND state = 'done'", [ids])).n === 5);
    });
    assert.deepEqual(ids.map((id) => seen.get(String(id))), [TP, TP2, null, TP, null]);
  } finally {
    await client.end();
    await db.drop();
    if (oldPath === undefined) delete process.env.NODE_PATH; else process.env.NODE_PATH = oldPath;
    Module._initPaths();
    otel._resetOtel();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// lock / election / semaphore: released when fn throws, and when the connection is lost
async function holdScenario(tag, hold, heldNow) {
  const db = await freshDb(tag);
  const client = new Client({ database: db.name });
  try {
    await assert.rejects(hold(client, async () => {
      assert.equal(await heldNow(db), true);
      throw new Error('boom');
    }), /boom/);
    assert.equal(await heldNow(db), false, 'released after the exception');
    let handle;
    const lost = hold(client, async (h) => {
      handle = h;
      const pid = await heldNow(db, true);
      await db.q('SELECT pg_terminate_backend($1)', [pid]);
      await waitFor('the handle to learn', () => h.signal.aborted, 5);
      return 'went on';
    });
    await assert.rejects(lost, (e) => e instanceof ConnectionLostError && e.sqlstate !== null);
    assert.ok(handle.signal.reason instanceof ConnectionLostError);
    await waitFor('the hold to be gone', async () => !(await heldNow(db)), 5);
    // and it can be taken again
    assert.equal(await hold(client, async () => 'again'), 'again');
  } finally {
    await client.end();
    await db.drop();
  }
}

test('S-lock-release: client.lock released on an exception and on connection loss', () =>
  holdScenario('lock', (c, fn) => c.lock('/jobs/report', fn, { timeout: 5 }),
    async (db, pid) => {
      const r = await db.one("SELECT pid FROM coord.locks WHERE path = '/jobs/report' AND granted");
      return pid ? r.pid : !!r;
    }));

test('S-election-release: client.campaign resigns on an exception and on connection loss', () =>
  holdScenario('election', (c, fn) => c.campaign('scheduler', fn, { value: 'me', timeout: 5 }),
    async (db, pid) => {
      const r = await db.one("SELECT pid FROM coord.leader('scheduler')");
      return pid ? r.pid : !!r;
    }));

test('S-semaphore-release: client.semaphore releases its permit on an exception and on connection loss', () =>
  holdScenario('semaphore', (c, fn) => c.semaphore('/smtp/mx1', 1, fn, { timeout: 5 }),
    async (db, pid) => {
      const r = await db.one("SELECT pid FROM coord.semaphores WHERE path = '/smtp/mx1' AND pid IS NOT NULL");
      return pid ? r.pid : !!r;
    }));

test('N-unreportable: an outcome the server refuses fails the job instead of holding it', async () => {
  const db = await freshDb('unreportable');
  const client = new Client({ database: db.name });
  try {
    const big = await client.enqueue('u', { big: true }, { maxAttempts: 1 });
    const long = await client.enqueue('u', { long: true }, { maxAttempts: 1 });
    const warnings = [];
    await runWorker({
      database: db.name, queue: 'u',
      handler: async (job) => {
        if (job.payload.big) return { n: 1n };                   // JSON cannot hold a BigInt
        throw new RetryAfter(10 * 24 * 3600);                     // past coord.max_retry_after: 22023
      },
    }, async (w) => {
      w.on('warning', (e) => warnings.push(e));
      const b = await client.awaitResult(big, { timeout: 10 });
      assert.equal(b.state, 'dead');
      assert.match(b.error, /could not report/);
      const l = await client.awaitResult(long, { timeout: 10 });
      assert.equal(l.state, 'dead');
      assert.match(l.error, /could not report/);
    });
    assert.ok(warnings.some((e) => e.sqlstate === '22023'), 'the server\'s 22023 reached the warning listener');
  } finally {
    await client.end();
    await db.drop();
  }
});

test('N-lease-lock: leaseLock holds a token, refuses a second holder, renews, and lets go on an exception', async () => {
  const db = await freshDb('leaselock');
  const client = new Client({ database: db.name });
  try {
    const tokens = [];
    await assert.rejects(client.leaseLock('/cron/nightly', async ({ token, signal }) => {
      tokens.push(token);
      await assert.rejects(client.leaseLock('/cron/nightly', async () => 1), CoordTimeoutError);
      // renewed: its end moves on, past the first 1 s TTL
      const first = (await db.one("SELECT expires_at FROM coord.leases WHERE path = '/cron/nightly' AND live")).expires_at;
      await waitFor('a renewal past the first TTL', async () =>
        (await db.one("SELECT count(*)::int AS c FROM coord.leases WHERE path = '/cron/nightly' AND live AND expires_at > $1::timestamptz + interval '0.5 s'", [first])).c === 1, 5);
      assert.equal(signal.aborted, false);
      throw new Error('boom');
    }, { ttl: 1 }), /boom/);
    const t2 = await client.leaseLock('/cron/nightly', async ({ token }) => token, { ttl: 1 });
    assert.ok(t2 > tokens[0], 'a newer fencing token');
  } finally {
    await client.end();
    await db.drop();
  }
});

test('N-lock-timeout: a lock held elsewhere times out with CoordTimeoutError', async () => {
  const db = await freshDb('locktimeout');
  const client = new Client({ database: db.name });
  try {
    await db.q("SELECT coord.lock('/busy')");
    await assert.rejects(client.lock('/busy', async () => 1, { timeout: 0.2 }), CoordTimeoutError);
  } finally {
    await client.end();
    await db.drop();
  }
});

test('N-partition-group: a worker with partitionGroup joins the group on its connection (again after a reconnect) and claims its segments\' jobs', async () => {
  const db = await freshDb('partgroup');
  const client = new Client({ database: db.name });
  try {
    await runWorker({
      database: db.name, queue: 'pgq', partitionGroup: 'pgw', partitionMember: 'm1', reconnectDelay: 0.05,
      application_name: 'pg_worker', handler: async (job) => job.payload,
    }, async (w) => {
      assert.deepEqual((await client.awaitResult(await client.enqueue('pgq', { n: 1 }), { timeout: 10 })).result, { n: 1 });
      assert.equal((await db.one("SELECT count(*)::int AS c FROM coord.members WHERE partition_group = 'pgw' AND member = 'm1' AND alive")).c, 1);
      let reconnected = false;
      w.once('reconnected', () => { reconnected = true; });
      await db.q("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pg_worker'");
      await waitFor('the worker to reconnect', async () => reconnected, 10);
      assert.deepEqual((await client.awaitResult(await client.enqueue('pgq', { n: 2 }), { timeout: 10 })).result, { n: 2 });
    });
  } finally {
    await client.end();
    await db.drop();
  }
});

test('N-worker-reconnect: a worker whose connection is terminated reconnects and goes on', async () => {
  const db = await freshDb('reconnect');
  const client = new Client({ database: db.name });
  try {
    await runWorker({ database: db.name, queue: 'rc', reconnectDelay: 0.05, application_name: 'rc_worker', handler: async (job) => job.payload }, async (w) => {
      assert.deepEqual((await client.awaitResult(await client.enqueue('rc', { n: 1 }), { timeout: 10 })).result, { n: 1 });
      let reconnected = false;
      w.once('reconnected', () => { reconnected = true; });
      await db.q("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rc_worker'");
      await waitFor('the worker to reconnect', async () => reconnected, 10);
      assert.deepEqual((await client.awaitResult(await client.enqueue('rc', { n: 2 }), { timeout: 10 })).result, { n: 2 });
    });
  } finally {
    await client.end();
    await db.drop();
  }
});

for (const sessionBound of [false, true]) {
  const kind = sessionBound ? 'session-bound' : 'lease';
  test(`N-reconnect-held-jobs (${kind}): a job held when the connection is terminated ${sessionBound ? 'is given up (signal aborted) and re-run' : 'is reported on the new connection'}`, async () => {
    const db = await freshDb('reheld_' + kind);
    const client = new Client({ database: db.name });
    try {
      const id = await client.enqueue('rh', {});
      const seen = [];
      let release, firstReason;
      const gate = new Promise((r) => { release = r; });
      await runWorker({
        database: db.name, queue: 'rh', sessionBound, lease: 30, reconnectDelay: 0.05, application_name: 'rh_worker',
        handler: async (job) => {
          seen.push(job.attempt);
          if (seen.length === 1) {
            await gate;
            firstReason = job.signal.reason ?? null;
            return { attempt: job.attempt, aborted: job.signal.aborted };
          }
          return { attempt: job.attempt };
        },
      }, async () => {
        await waitFor('the handler to start', () => seen.length === 1);
        const old = (await db.one("SELECT array_agg(pid) AS p FROM pg_stat_activity WHERE application_name = 'rh_worker'")).p;
        await db.q("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rh_worker'");
        // the worker learns of it at its next statement, or the socket's end:
        // a connection that is not one of the terminated ones (they may still
        // be listed for a moment while they exit)
        await waitFor('a new connection', async () =>
          (await db.one("SELECT count(*)::int AS c FROM pg_stat_activity WHERE application_name = 'rh_worker' "
                        + 'AND pid <> ALL ($1::int[])', [old])).c === 1, 10);
        release();
        const r = await client.awaitResult(id, { timeout: 10 });
        assert.equal(r.state, 'done');
        if (sessionBound) {
          assert.deepEqual([r.result, seen], [{ attempt: 2 }, [1, 2]]);
          assert.ok(firstReason instanceof ConnectionLostError, `the first run's signal: ${firstReason}`);
        } else {
          assert.deepEqual([r.result, seen, firstReason], [{ attempt: 1, aborted: false }, [1], null]);
        }
      });
    } finally {
      await client.end();
      await db.drop();
    }
  });
}

// concurrency > 1: jobs that finish together are completed by one statement
// (complete_many without results, coord.complete over the batch with them);
// a job whose claim was taken away meanwhile is 'lost', the others count
for (const withResults of [false, true]) {
  test(`N-batch-complete (${withResults ? 'results' : 'no results'}): jobs finishing together are completed in one statement; a cancelled one among them is lost`, async () => {
    const db = await freshDb('batchc');
    const client = new Client({ database: db.name });
    const N = 12;
    try {
      const ids = await client.enqueueMany('b', Array.from({ length: N }, (_, i) => ({ i })));
      let started = 0, open;
      const gate = new Promise((r) => { open = r; });
      const completed = [], lost = [];
      let finishStatements = 0;
      await runWorker({
        database: db.name, queue: 'b', concurrency: N, batch: N, watchCancel: false,
        handler: async (job) => { started++; await gate; return withResults ? { i: job.payload.i } : undefined; },
      }, async (w) => {
        const q = w._query.bind(w);
        w._query = (conn, sql, params, prepared) => {
          if (/coord\.(complete|complete_many|complete_and_claim)\(/.test(sql)) finishStatements++;
          return q(conn, sql, params, prepared);
        };
        w.on('completed', (job) => completed.push(job.id));
        w.on('lost', (job) => lost.push(job.id));
        await waitFor('every handler to start', () => started === N);
        assert.equal(await client.cancel(ids[3]), true);
        open();
        await waitFor('every job reported', () => completed.length + lost.length === N);
      });
      assert.deepEqual(lost, [ids[3]]);
      assert.equal(completed.length, N - 1);
      assert.ok(finishStatements <= 3, `${finishStatements} statements completed ${N} jobs`);
      for (const [k, id] of ids.entries()) {
        const r = await client.awaitResult(id, { timeout: 5 });
        assert.equal(r.state, k === 3 ? 'cancelled' : 'done', `job ${id}`);
        assert.deepEqual(r.result, k === 3 || !withResults ? null : { i: k }, `job ${id}`);
      }
    } finally {
      await client.end();
      await db.drop();
    }
  });
}
