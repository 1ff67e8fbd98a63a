'use strict';
// S-errors-*: typed errors with the SQLSTATE and the server's message, never a bare pg error.
const test = require('node:test');
const assert = require('node:assert/strict');
const {
  Client, Worker, CoordError, PermissionDeniedError, ExtensionMissingError, VersionMismatchError,
  ConnectionLostError,
} = require('..');
const { freshDb, admin } = require('./helpers');

test('S-errors (permission): a role without coord_worker gets PermissionDeniedError 42501', async () => {
  const db = await freshDb('perm');
  const role = `coord_node_noperm_${process.pid}`;
  await db.q(`DROP ROLE IF EXISTS ${role}`);
  await db.q(`CREATE ROLE ${role} LOGIN`);
  const client = new Client({ database: db.name, user: role });
  try {
    const e = await client.enqueue('q', {}).then(() => null, (x) => x);
    assert.ok(e instanceof PermissionDeniedError, String(e));
    assert.ok(e instanceof CoordError);
    assert.equal(e.sqlstate, '42501');
    assert.equal(e.code, '42501');
    assert.match(e.message, /permission denied/);
    const w = new Worker({ database: db.name, user: role, queue: 'q', handler: () => null, handleSignals: false });
    await assert.rejects(w.run(), (x) => x instanceof PermissionDeniedError && x.sqlstate === '42501');
  } finally {
    await client.end();
    await db.drop();
    const r = await admin();
    await r.query(`DROP ROLE IF EXISTS ${role}`);
    await r.end();
  }
});

test('S-errors (missing-extension): a database without pg_coord gives ExtensionMissingError', async () => {
  const db = await freshDb('noext', { extension: false });
  const client = new Client({ database: db.name });
  try {
    const e = await client.enqueue('q', {}).then(() => null, (x) => x);
    assert.ok(e instanceof ExtensionMissingError, String(e));
    assert.equal(e.sqlstate, '3F000');
    assert.match(e.message, /schema "coord" does not exist/);
    const w = new Worker({ database: db.name, queue: 'q', handler: () => null, handleSignals: false });
    await assert.rejects(w.run(), ExtensionMissingError);
  } finally {
    await client.end();
    await db.drop();
  }
});

test('S-errors (version-mismatch): pg_coord 0.3.0 gives VersionMismatchError', async () => {
  const db = await freshDb('oldver', { version: '0.3.0' });
  const client = new Client({ database: db.name });
  try {
    const e = await client.enqueue('q', {}).then(() => null, (x) => x);
    assert.ok(e instanceof VersionMismatchError, String(e));
    assert.equal(e.installed, '0.3.0');
    assert.equal(e.required, '0.4.0');
    assert.ok(e.sqlstate);
    assert.match(e.message, /0\.3\.0 is installed/);
    // a function the old version lacks, called directly: the server's 42883
    await db.q('SELECT 1');
    const raw = await client._pool.query('SELECT coord.await(1)').then(() => null, (x) => x);
    const { wrapError } = require('../lib/errors');
    const w = wrapError(raw);
    assert.ok(w instanceof VersionMismatchError && w.sqlstate === '42883', String(w));
  } finally {
    await client.end();
    await db.drop();
  }
});

test('S-errors (connection-lost): a terminated connection gives ConnectionLostError with the server\'s message', async () => {
  const db = await freshDb('lost');
  const client = new Client({ database: db.name, application_name: 'lost_client' });
  try {
    const id = await client.enqueue('q', {});
    const waiting = client.awaitResult(id).then(() => null, (x) => x);
    for (let i = 0; i < 200; i++) {
      const r = await db.q("SELECT pg_terminate_backend(pid) AS t FROM pg_stat_activity WHERE application_name = 'lost_client' AND wait_event IS NOT NULL AND query LIKE '%coord.await%'");
      if (r.length) break;
      await new Promise((res) => setTimeout(res, 20));
    }
    const e = await waiting;
    assert.ok(e instanceof ConnectionLostError, String(e));
    assert.equal(e.sqlstate, '57P01');
    assert.match(e.message, /terminating connection due to administrator command/);
    // and the client goes on with a new connection
    assert.equal(typeof (await client.enqueue('q', {})), 'number');
  } finally {
    await client.end();
    await db.drop();
  }
});

test('S-errors (server-error): another server error keeps its SQLSTATE and message', async () => {
  const db = await freshDb('sqlerr');
  const client = new Client({ database: db.name });
  try {
    const e = await client.enqueueFlow([{ name: 'a', queue: 'q', after: ['nope'] }]).then(() => null, (x) => x);
    assert.ok(e instanceof CoordError, String(e));
    assert.equal(e.sqlstate, '22023');
    assert.ok(e.cause && e.cause.code === '22023', 'the pg error is the cause');
  } finally {
    await client.end();
    await db.drop();
  }
});
