'use strict';
// S-package: `npm pack` builds the tarball offline; it installs into a fresh
// project (pg from npm, as examples/quickstart), loads with require and
// import, its declarations compile (tsc, when installed), and the docs'
// 15-line worker (docs/clients/node.md) runs from it.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync, spawn } = require('node:child_process');
const { freshDb, waitFor } = require('./helpers');

const PKG = path.join(__dirname, '..');
const DOC = path.join(PKG, '..', '..', 'docs', 'clients', 'node.md');
let app = null;
let tmp = null;
test.after(() => { if (tmp) fs.rmSync(tmp, { recursive: true, force: true }); });

function sh(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts });
}

function which(cmd) {
  try { return sh('sh', ['-c', `command -v ${cmd}`]).trim() || null; } catch { return null; }
}

test('S-package (pack): npm pack builds a tarball offline and it installs into a fresh project', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-coord-pack-'));
  tmp = dir;
  const out = sh('npm', ['pack', '--offline', '--silent', '--pack-destination', dir], { cwd: PKG }).trim().split('\n').pop();
  const tgz = path.join(dir, out);
  assert.ok(fs.existsSync(tgz), `tarball ${tgz}`);
  const listing = sh('tar', ['tzf', tgz]);
  for (const f of ['package/index.js', 'package/index.mjs', 'package/index.d.ts', 'package/lib/worker.js', 'package/package.json'])
    assert.ok(listing.includes(f), `${f} in the tarball`);
  assert.ok(!listing.includes('package/test/'), 'tests are not shipped');
  app = path.join(dir, 'app');
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
  sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--silent', tgz], { cwd: app });
  assert.ok(fs.existsSync(path.join(app, 'node_modules', 'pg-coord', 'index.js')));
});

test('S-package (load): require and import both load it', () => {
  assert.ok(app, 'installed by S-package (pack)');
  const cjs = sh(process.execPath, ['-e', "const c = require('pg-coord'); console.log(typeof c.Worker, typeof c.Client, typeof c.RetryAfter, c.REQUIRED_VERSION)"], { cwd: app }).trim();
  assert.equal(cjs, 'function function function 0.4.0');
  fs.writeFileSync(path.join(app, 'esm.mjs'),
    "import { Worker, Client, RetryAfter, CoordError } from 'pg-coord';\nimport lib from 'pg-coord';\n" +
    "console.log(typeof Worker, typeof Client, new RetryAfter(1) instanceof Error, lib.CoordError === CoordError);\n");
  const esm = sh(process.execPath, ['esm.mjs'], { cwd: app }).trim();
  assert.equal(esm, 'function function true true');
});

test('S-package (types): the declarations compile a TypeScript program and refuse wrong uses (tsc --strict)', () => {
  assert.ok(app, 'installed by S-package (pack)');
  const tsc = which('tsc');
  assert.ok(tsc, 'tsc not found (Debian: node-typescript; test/clients/node.sh installs it)');
  fs.copyFileSync(path.join(__dirname, 'fixtures', 'types-check.ts'), path.join(app, 'check.ts'));
  try {
    // node16: the resolution of Node itself (package.json exports); TypeScript 6
    // (Debian sid) refuses the older 'node' (node10) resolution
    sh(tsc, ['--noEmit', '--strict', '--target', 'es2020', '--module', 'node16', '--moduleResolution', 'node16',
      '--lib', 'es2022,dom', 'check.ts'], { cwd: app });
  } catch (e) {
    assert.fail(`tsc: ${e.stdout}${e.stderr}`);
  }
});

test('S-package (worker15): the docs\' 15-line worker runs from the installed tarball', async () => {
  assert.ok(app, 'installed by S-package (pack)');
  const md = fs.readFileSync(DOC, 'utf8');
  const m = md.match(/<!-- node-worker-15 -->\n```js\n([\s\S]*?)```/);
  assert.ok(m, 'docs/clients/node.md has the marked worker');
  const code = m[1];
  assert.ok(code.trim().split('\n').length <= 15, 'at most 15 lines');
  fs.writeFileSync(path.join(app, 'worker.js'), code);
  const db = await freshDb('worker15');
  try {
    const child = spawn(process.execPath, ['worker.js'], { cwd: app, env: { ...process.env, PGDATABASE: db.name }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    const exit = new Promise((r) => child.on('exit', (code) => r(code)));
    const ids = (await db.q("SELECT coord.enqueue('sums', jsonb_build_object('numbers', jsonb_build_array(g, g, 1))) AS id FROM generate_series(1, 5) g")).map((r) => r.id);
    const bad = (await db.one("SELECT coord.enqueue('sums', '{\"oops\": 1}', max_attempts => 1) AS id")).id;
    await waitFor('the jobs done', async () =>
      (await db.one("SELECT count(*)::int AS c FROM coord.jobs WHERE queue = 'sums' AND state IN ('done', 'dead')")).c === 6, 20);
    const res = await db.q('SELECT id, state, result FROM coord.jobs WHERE id = ANY ($1::bigint[]) ORDER BY id', [[...ids, bad]]);
    assert.deepEqual(res.slice(0, 5).map((r) => r.result.sum), [3, 5, 7, 9, 11]);
    assert.equal(res[5].state, 'dead');
    child.kill('SIGTERM');
    assert.equal(await exit, 0, out);
    assert.match(out, /drained/);
  } finally {
    await db.drop();
  }
});
