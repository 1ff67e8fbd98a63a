'use strict';
// Shared by the scenario tests: a fresh database with pg_coord per test, an
// admin connection (the PG* environment of make test's private cluster),
// waiting for a condition with a deadline (never a fixed sleep), and
// worker child processes (test/fixtures/worker.js) to kill.
const { spawn } = require('node:child_process');
const path = require('node:path');
const pg = require('pg');

let seq = 0;

async function admin(database = 'postgres') {
  const c = new pg.Client({ database });
  await c.connect();
  return c;
}

/** A fresh database with pg_coord; returns {name, q(sql, params) -> rows, drop()} on an admin connection. */
async function freshDb(tag, { extension = true, version } = {}) {
  const name = `coord_node_${tag.replace(/[^a-z0-9]+/gi, '_').toLowerCase()}_${process.pid}_${seq++}`;
  const root = await admin();
  await root.query(`DROP DATABASE IF EXISTS ${name}`);
  await root.query(`CREATE DATABASE ${name}`);
  await root.end();
  const c = await admin(name);
  c.on('error', () => {});
  if (extension) await c.query(`CREATE EXTENSION pg_coord${version ? ` VERSION '${version}'` : ''}`);
  return {
    name,
    conn: c,
    async q(sql, params) { return (await c.query(sql, params)).rows; },
    async one(sql, params) { return (await c.query(sql, params)).rows[0]; },
    async drop() {
      await c.end().catch(() => {});
      const r = await admin();
      await r.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await r.end();
    },
  };
}

/** Polls fn() until it returns a truthy value; throws after `seconds`. */
async function waitFor(what, fn, seconds = 20, everyMs = 20) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Starts test/fixtures/worker.js with `env` (DB, QUEUE, ...); .exit resolves to {code, signal}. */
function spawnWorker(env) {
  const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'worker.js')], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  child.exit = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  child.output = () => out;
  return child;
}

module.exports = { admin, freshDb, waitFor, spawnWorker };
