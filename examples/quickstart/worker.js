// pg_coord quick start: a worker in Node with the pg package (npm install
// here).  PG* environment variables say where to connect; argv: the queue,
// and how many jobs to take before exiting (0: run forever).
'use strict';
const { Client } = require('pg');
const [queue, stopAfter] = [process.argv[2], Number(process.argv[3])];

(async () => {
  const client = new Client();
  await client.connect();
  let wake = () => {};
  client.on('notification', () => wake());
  await client.query(`LISTEN "coord:${queue}"`);        // LISTEN before the first claim
  let job = null;
  for (let done = 0; stopAfter === 0 || done < stopAfter;) {
    if (job === null || job.id === null) {               // nothing in hand: claim, or wait
      ({ rows: [job = null] } = await client.query('SELECT id, token, payload FROM coord.claim($1)', [queue]));
      if (job === null)                                  // wait for a NOTIFY, or poll after 1 s
        await new Promise((resolve) => { wake = resolve; setTimeout(resolve, 1000); });
      continue;
    }
    done++;
    const more = done === stopAfter ? 0 : 1;             // claim no job it will not do
    let result;
    try {
      result = { sum: job.payload.numbers.reduce((a, b) => a + b, 0) };           // the work
    } catch (e) {                                        // scheduled again later, or dead
      ({ rows: [job] } = await client.query('SELECT id, token, payload FROM coord.fail_and_claim($1, $2, $3, n => $4)',
                                            [job.id, job.token, String(e), more]));
      continue;
    }
    // done, and the next job claimed, in one statement and one commit
    ({ rows: [job] } = await client.query('SELECT id, token, payload FROM coord.complete_and_claim($1, $2, $3, n => $4)',
                                          [job.id, job.token, result, more]));
  }
  await client.end();
})().catch((e) => { console.error(e); process.exit(1); });
