'use strict';
// Connections: pg's Client/Pool with bigint (int8) read as a JS number (job
// ids and tokens stay far below 2^53), and the check that pg_coord is
// installed and new enough.
const pg = require('pg');
const { wrapError, ExtensionMissingError, VersionMismatchError } = require('./errors');

const REQUIRED_VERSION = '0.4.0';

function parseInt8(v) {
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : BigInt(v);
}

const types = {
  getTypeParser(oid, format) {
    if (oid === 20 && format !== 'binary') return parseInt8;
    return pg.types.getTypeParser(oid, format);
  },
};

function pgConfig(config) {
  return { ...config, types: config.types || types };
}

function versionTuple(v) {
  return String(v).split('.').map((x) => parseInt(x, 10) || 0);
}
function versionLess(a, b) {
  const x = versionTuple(a), y = versionTuple(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if ((x[i] || 0) !== (y[i] || 0)) return (x[i] || 0) < (y[i] || 0);
  }
  return false;
}

// What the server offers: the installed version, and whether the one-commit
// coord.complete_and_claim and fail_and_claim (0.4.0, DESIGN 3.10) exist
// and may be called.
const PROBE = `
SELECT (SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_coord') AS version,
       (SELECT count(DISTINCT p.proname) = 2 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'coord' AND p.proname IN ('complete_and_claim', 'fail_and_claim')
           AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE')) AS fused`;

/** Runs the probe on `q` (a pg Client or Pool); throws ExtensionMissingError / VersionMismatchError. */
async function checkServer(q) {
  let rows;
  try {
    ({ rows } = await q.query(PROBE));
  } catch (e) {
    throw wrapError(e);
  }
  const { version, fused } = rows[0];
  if (version == null) {
    // let the server say it, with its SQLSTATE (3F000: schema "coord" does not exist)
    try {
      await q.query('SELECT NULL::coord.claimed_job');
    } catch (e) {
      const w = wrapError(e);
      if (w.sqlstate === '08006') throw w;
      throw new ExtensionMissingError(
        `pg_coord is not installed in this database: ${e.message}`,
        { sqlstate: w.sqlstate, hint: 'CREATE EXTENSION pg_coord (as a superuser), or connect to the database that has it.', cause: e });
    }
    throw new ExtensionMissingError('pg_coord is not installed in this database', { sqlstate: '42704' });
  }
  if (versionLess(version, REQUIRED_VERSION)) {
    throw new VersionMismatchError(
      `pg_coord ${version} is installed; pg-coord needs ${REQUIRED_VERSION} or later`,
      { sqlstate: '0A000', installed: version, required: REQUIRED_VERSION,
        hint: 'ALTER EXTENSION pg_coord UPDATE (after installing the new version on the server).' });
  }
  return { version, fused: !!fused };
}

module.exports = { pgConfig, checkServer, REQUIRED_VERSION, versionLess };
