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
  for (let done = 0; stopAfter === 0 || done < stopAfter;) {
    const { rows } = await client.query('SELECT id, token, payload FROM coord.claim($1, 10)', [queue]);
    for (const job of rows) {
      try {
        const result = { sum: job.payload.numbers.reduce((a, b) => a + b, 0) };   // the work
        await client.query('SELECT coord.complete($1, $2, $3)', [job.id, job.token, result]);
      } catch (e) {                                      // scheduled again later, or dead
        await client.query('SELECT coord.fail($1, $2, $3)', [job.id, job.token, String(e)]);
      }
      done++;
    }
    if (rows.length === 0)                               // wait for a NOTIFY, or poll after 1 s
      await new Promise((resolve) => { wake = resolve; setTimeout(resolve, 1000); });
  }
  await client.end();
})().catch((e) => { console.error(e); process.exit(1); });
