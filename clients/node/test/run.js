'use strict';
// Runs every clients/node test file with node --test, TAP on stdout (one
// "ok N - S-..." line per test for test/run.sh's count), one file at a time;
// exits with node --test's status.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const files = fs.readdirSync(__dirname).filter((f) => f.endsWith('.test.js')).sort().map((f) => path.join(__dirname, f));
// bounded: a run that hangs (a handler a failed test left waiting keeps its
// file's process alive) is killed after 4 minutes and fails
const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', '--test-concurrency=1', ...files],
  { stdio: 'inherit', cwd: path.join(__dirname, '..'), timeout: 240000, killSignal: 'SIGKILL' });
if (r.status === null) console.log(`not ok 999 - clients/node tests killed after 240 s (${r.signal || r.error})`);
process.exit(r.status === null ? 1 : r.status);
