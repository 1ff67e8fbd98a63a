#!/usr/bin/env node
// S4 mail runner (Node, pg): the same runner as runner.py, in JavaScript.
//
//   node runner.js -n NAME [-m session|lease] [-l LEASE] [-b BATCH] [-s SEND_MS]
//                  [-S STALL_S] [-c COUNT] [-e] [-p POLL_S] [-q QUEUE]
//
// Loops: claim (coord.claim, recorded in s4.claims by the same statement) ->
// "send" (sleep SEND_MS +-50%, then STALL_S more with -S) -> in ONE
// transaction INSERT INTO s4.sent + coord.complete(id, token), COMMIT if
// complete answered true, else ROLLBACK (the claim is no longer ours).
// session mode: the claim ends with this runner's session, so the jobs of a
// runner that dies are claimable again at once.  lease mode: the claim lasts
// LEASE.  Idle runners wait on LISTEN "coord:<queue>" and poll every POLL_S
// seconds.  -e: exit once the queue has no ready, scheduled or running job;
// -c: exit after COUNT jobs.  Connects with the PG* environment variables.
'use strict';
const { Client } = require('pg');

function parseArgs(argv) {
  const a = { mode: 'session', lease: '30 seconds', batch: 1, sendMs: 20, stallS: 0,
              count: 0, exitEmpty: false, pollS: 1.0, queue: 'mail' };
  const opts = { '-n': ['name', String], '-m': ['mode', String], '-l': ['lease', String],
                 '-b': ['batch', Number], '-s': ['sendMs', Number], '-S': ['stallS', Number],
                 '-c': ['count', Number], '-p': ['pollS', Number], '-q': ['queue', String] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '-e') { a.exitEmpty = true; continue; }
    const o = opts[argv[i]];
    if (!o || i + 1 >= argv.length) throw new Error(`usage: runner.js -n NAME [options]; bad argument ${argv[i]}`);
    a[o[0]] = o[1](argv[++i]);
  }
  if (!a.name) throw new Error('usage: runner.js -n NAME [options]');
  if (a.mode !== 'session' && a.mode !== 'lease') throw new Error('-m: session or lease');
  return a;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const hms = (d) => d.toTimeString().slice(0, 8) + '.' + String(d.getMilliseconds()).padStart(3, '0');

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const log = (msg) => console.log(`${hms(new Date())} ${args.name} [node/${args.mode}] ${msg}`);

  const client = new Client({ application_name: 's4:runner:' + args.name });
  await client.connect();
  // a NOTIFY ends the idle wait early
  let wake = null;
  client.on('notification', () => { if (wake) wake(); });
  await client.query(`LISTEN "coord:${args.queue.replace(/"/g, '""')}"`);
  const sessionBound = args.mode === 'session';
  let sent = 0, lost = 0;
  const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  log(`started (pid ${pid})`);

  while (!args.count || sent + lost < args.count) {
    const n = args.count ? Math.min(args.batch, args.count - sent - lost) : args.batch;
    const res = await client.query(
      `WITH c AS (SELECT * FROM coord.claim($1::text, $2::integer, $3::interval, session_bound => $4::boolean))
       INSERT INTO s4.claims (job_id, mail_no, runner, mode, token, lease_until)
       SELECT id, (payload->>'n')::integer, $5::text, $6::text, token, lease_until FROM c
       RETURNING job_id, mail_no, token, lease_until`,
      [args.queue, n, args.lease, sessionBound, args.name, args.mode]);
    // bigint columns arrive as strings: keep them so (no precision loss)
    const jobs = res.rows.sort((x, y) => (BigInt(x.job_id) < BigInt(y.job_id) ? -1 : 1));
    if (jobs.length === 0) {
      if (args.exitEmpty) {
        const r = await client.query(
          `SELECT COALESCE(sum(ready + scheduled + running), 0)::bigint AS left
             FROM coord.queue_stats WHERE queue = $1::text`, [args.queue]);
        if (r.rows[0].left === '0') break;
      }
      await new Promise((resolve) => {
        const t = setTimeout(resolve, args.pollS * 1000);
        wake = () => { clearTimeout(t); resolve(); };
      });
      wake = null;
      continue;
    }
    log('claimed ' + jobs.map((j) => `job ${j.job_id} (mail ${j.mail_no}, token ${j.token})`).join(', ')
        + (sessionBound ? '' : `, lease until ${hms(j0lease(jobs))}`));
    for (const j of jobs) {
      await sleep(args.sendMs * (0.5 + Math.random()));   // the SMTP conversation
      if (args.stallS) {
        log(`job ${j.job_id}: stalling ${args.stallS} s before completing`);
        await sleep(args.stallS * 1000);
      }
      await client.query('BEGIN');
      let ok = false;
      try {
        await client.query(
          'INSERT INTO s4.sent (job_id, mail_no, runner, token) VALUES ($1::bigint, $2::integer, $3::text, $4::bigint)',
          [j.job_id, j.mail_no, args.name, j.token]);
        ok = (await client.query('SELECT coord.complete($1::bigint, $2::bigint) AS ok',
                                 [j.job_id, j.token])).rows[0].ok;
      } finally {
        await client.query(ok ? 'COMMIT' : 'ROLLBACK');
      }
      if (ok) {
        sent++;
        log(`sent mail ${j.mail_no} (job ${j.job_id}, token ${j.token}): complete -> true, committed`);
      } else {
        lost++;
        log(`job ${j.job_id} (mail ${j.mail_no}, token ${j.token}): complete -> false,`
            + ' the claim is no longer ours: rolled back');
      }
    }
  }
  log(`finished: ${sent} sent, ${lost} lost claims`);
  await client.end();
}

function j0lease(jobs) { return new Date(jobs[0].lease_until); }

main().catch((e) => {
  console.error(`ERROR: ${e.message}`);
  process.exit(1);
});
