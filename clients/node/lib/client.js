'use strict';
// Client: producers and coordination.  A pg.Pool underneath: one-shot calls
// (enqueue, cancel, ...) take any connection; awaitResult takes one for its
// wait; lock / campaign / semaphore / join hold one connection for as long as
// they hold (session-scoped on the server: the connection's end releases
// them, which is also what happens when it is lost).
const pg = require('pg');
const { pgConfig, checkServer } = require('./conn');
const {
  CoordError, CoordTimeoutError, ClaimLostError, ConnectionLostError, wrapError, isConnectionError,
} = require('./errors');
const { otel, currentTraceparent } = require('./otel');

const ENQUEUE_OPTIONS = {
  runAt: ['run_at', 'timestamptz'],
  priority: ['priority', 'integer'],
  key: ['key', 'text'],
  host: ['host', 'text'],
  maxAttempts: ['max_attempts', 'integer'],
  groupKey: ['group_key', 'text'],
  limitKey: ['limit_key', 'text'],
  maxSnoozes: ['max_snoozes', 'integer'],
  expiresAt: ['expires_at', 'timestamptz'],
  after: ['after', 'bigint[]'],
  onParentFailure: ['on_parent_failure', 'text'],
  batch: ['batch', 'bigint'],
  trace: ['trace', 'text'],
};
const MANY_OPTIONS = new Set(['runAt', 'priority', 'host', 'maxAttempts', 'limitKey', 'maxSnoozes',
  'expiresAt', 'after', 'onParentFailure', 'batch', 'trace']);

/** options with OpenTelemetry's active traceparent as trace, unless a trace is given (null: none). */
function withTrace(options) {
  if (!otel() || (options != null && 'trace' in options)) return options;
  const tp = currentTraceparent();
  return tp ? { ...(options || {}), trace: tp } : options;
}

function snake(k) {
  return ENQUEUE_OPTIONS[k] ? ENQUEUE_OPTIONS[k][0] : k.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
}

/** Seconds (a number) as an interval parameter; null/undefined stays NULL. */
function seconds(v, what) {
  if (v == null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
    throw new TypeError(`${what} must be a number of seconds >= 0`);
  return v;
}
const INTERVAL = (n) => `($${n}::float8 * interval '1 second')`;

function namedArgs(options, allowed, start) {
  const parts = [], params = [];
  for (const [k, v] of Object.entries(options || {})) {
    if (v === undefined) continue;
    const spec = ENQUEUE_OPTIONS[k];
    if (!spec || (allowed && !allowed.has(k))) throw new TypeError(`unknown enqueue option ${k}`);
    params.push(v);
    parts.push(`${spec[0]} => $${start + params.length}::${spec[1]}`);
  }
  return { sql: parts.map((p) => ', ' + p).join(''), params };
}

class Client {
  /** @param config pg's client/pool config, e.g. {connectionString}; PG* environment variables apply. */
  constructor(config = {}) {
    this._pool = new pg.Pool(pgConfig(config));
    // a pooled idle connection that dies must not crash the process
    this._pool.on('error', () => {});
    this._ready = null;
    this._checked = false;
    this.serverVersion = null;
  }

  async _check() {
    if (this._checked) return this._ready;
    if (!this._ready) {
      this._ready = checkServer(this._pool).then((s) => { this.serverVersion = s.version; this._checked = true; return s; });
      this._ready.catch(() => { this._ready = null; });
    }
    return this._ready;
  }

  /** Runs one statement on any pooled connection; errors are CoordErrors. */
  async query(sql, params) {
    if (!this._checked) await this._check();
    try {
      return await this._pool.query(sql, params);
    } catch (e) {
      throw wrapError(e);
    }
  }

  /** coord.enqueue: the job's id. payload is any JSON value; options camelCase (runAt, key, after, ...). */
  async enqueue(queue, payload = {}, options = undefined) {
    const json = JSON.stringify(payload === undefined ? {} : payload);
    options = withTrace(options);
    if (options == null) {
      const { rows } = await this.query('SELECT coord.enqueue($1, $2::jsonb) AS id', [queue, json]);
      return rows[0].id;
    }
    const a = namedArgs(options, null, 2);
    const { rows } = await this.query(`SELECT coord.enqueue($1, $2::jsonb${a.sql}) AS id`, [queue, json, ...a.params]);
    return rows[0].id;
  }

  /** coord.enqueue_many: the ids, in the order of payloads. */
  async enqueueMany(queue, payloads, options = {}) {
    const a = namedArgs(withTrace(options), MANY_OPTIONS, 2);
    const { rows } = await this.query(`SELECT id FROM coord.enqueue_many($1, $2::jsonb[]${a.sql}) AS id`,
      [queue, payloads.map((p) => JSON.stringify(p)), ...a.params]);
    return rows.map((r) => r.id);
  }

  /**
   * coord.enqueue_flow: nodes [{name, queue, payload, after: [names], ...options}]
   * (options camelCase as for enqueue); returns {name: id}.
   */
  async enqueueFlow(nodes) {
    const tp = otel() ? currentTraceparent() : null;
    const conv = nodes.map((n) => {
      const o = tp && !('trace' in n) ? { trace: tp } : {};
      for (const [k, v] of Object.entries(n)) if (v !== undefined) o[snake(k)] = v;
      return o;
    });
    const { rows } = await this.query('SELECT coord.enqueue_flow($1::jsonb) AS ids', [JSON.stringify(conv)]);
    return rows[0].ids;
  }

  /**
   * coord.await: waits until the job has finished; {state, result, error}.
   * With {timeout} (seconds) state is null when it passed first.
   */
  async awaitResult(id, { timeout } = {}) {
    const { rows } = await this.query(`SELECT state, result, error FROM coord.await($1, ${INTERVAL(2)})`,
      [id, seconds(timeout, 'timeout')]);
    return rows[0];
  }

  /** coord.cancel: true when the job was cancelled (a running one's worker is told at once). */
  async cancel(id) {
    const { rows } = await this.query('SELECT coord.cancel($1) AS ok', [id]);
    return rows[0].ok;
  }

  /** coord.job_state: 'ready', 'running', 'done', ... or null once purged. */
  async jobState(id) {
    const { rows } = await this.query('SELECT coord.job_state($1) AS s', [id]);
    return rows[0].s;
  }

  // A connection of the pool held for a session-scoped hold.  `signal` is
  // aborted when the connection is lost (the hold is gone with it).
  async _session() {
    await this._check();
    let conn;
    try {
      conn = await this._pool.connect();
    } catch (e) {
      throw wrapError(e);
    }
    const ac = new AbortController();
    const onLost = (e) => {
      if (!ac.signal.aborted)
        ac.abort(new ConnectionLostError(`connection lost: ${e ? e.message : 'ended'}`, { sqlstate: '08006', cause: e }));
    };
    conn.on('error', onLost);
    conn.on('end', onLost);
    const q = async (sql, params) => {
      try {
        return await conn.query(sql, params);
      } catch (e) {
        throw wrapError(e);
      }
    };
    const release = (broken) => {
      conn.removeListener('error', onLost);
      conn.removeListener('end', onLost);
      conn.release(broken || ac.signal.aborted ? true : undefined);
    };
    return { conn, q, signal: ac.signal, release };
  }

  // Shared shape of lock / campaign / semaphore: acquire on a held
  // connection, run fn, release whatever happens; a lost connection means
  // the hold is gone: fn sees handle.signal aborted, and the call throws
  // ConnectionLostError if fn did not throw first.
  async _hold(acquire, release, fn) {
    const s = await this._session();
    let handle;
    try {
      handle = await acquire(s.q);
    } catch (e) {
      s.release(isConnectionError(e));
      throw e;
    }
    if (handle == null) {
      s.release(false);
      return { acquired: false };
    }
    handle.signal = s.signal;
    let result, failed = false, err;
    try {
      result = await fn(handle);
    } catch (e) {
      failed = true; err = e;
    }
    let releaseErr = null;
    if (!s.signal.aborted) {
      try {
        await release(s.q, handle);
      } catch (e) {
        releaseErr = e;
      }
    }
    const lost = s.signal.aborted ? s.signal.reason : (releaseErr && isConnectionError(releaseErr) ? releaseErr : null);
    s.release(!!lost || !!releaseErr);
    if (failed) throw err;
    if (lost) throw lost instanceof CoordError ? lost : wrapError(lost);
    if (releaseErr) throw wrapError(releaseErr);
    return { acquired: true, result };
  }

  /**
   * A session lock on `path` (coord.lock) for the duration of fn(handle);
   * unlocked when fn settles, also when it throws.  {timeout} seconds (no
   * limit by default), {shared}.  CoordTimeoutError when not obtained in time.
   * handle: {path, signal} (signal aborts if the connection, and so the lock, is lost).
   */
  async lock(path, fn, { timeout, shared = false } = {}) {
    const r = await this._hold(
      async (q) => ((await q(`SELECT coord.lock($1, ${INTERVAL(2)}, $3) AS ok`, [path, seconds(timeout, 'timeout'), !!shared])).rows[0].ok ? { path } : null),
      async (q) => { await q('SELECT coord.unlock($1, $2)', [path, !!shared]); },
      fn);
    if (!r.acquired) throw new CoordTimeoutError(`lock ${path} not obtained within ${timeout} s`);
    return r.result;
  }

  /**
   * Leads election `election` for the duration of fn({term, signal})
   * (coord.campaign; resigns when fn settles).  {value, timeout}.
   */
  async campaign(election, fn, { value = null, timeout } = {}) {
    const r = await this._hold(
      async (q) => {
        const term = (await q(`SELECT coord.campaign($1, $2, ${INTERVAL(3)}) AS term`, [election, value, seconds(timeout, 'timeout')])).rows[0].term;
        return term == null ? null : { election, term };
      },
      async (q) => { await q('SELECT coord.resign($1)', [election]); },
      fn);
    if (!r.acquired) throw new CoordTimeoutError(`election ${election} not won within ${timeout} s`);
    return r.result;
  }

  /** The current leader of an election: {value, pid, since, term} or null. */
  async leader(election) {
    const { rows } = await this.query('SELECT value, pid, since, term FROM coord.leader($1)', [election]);
    return rows[0] || null;
  }

  /**
   * One of `permits` permits of the semaphore at `path` for the duration of
   * fn({permit, signal}) (coord.acquire_permit / release_permit).  {timeout}.
   */
  async semaphore(path, permits, fn, { timeout } = {}) {
    const r = await this._hold(
      async (q) => {
        const permit = (await q(`SELECT coord.acquire_permit($1, $2, ${INTERVAL(3)}) AS permit`, [path, permits, seconds(timeout, 'timeout')])).rows[0].permit;
        return permit == null ? null : { path, permit };
      },
      async (q) => { await q('SELECT coord.release_permit($1)', [path]); },
      fn);
    if (!r.acquired) throw new CoordTimeoutError(`no permit of ${path} within ${timeout} s`);
    return r.result;
  }

  /**
   * A lease lock (coord.lease_lock: a row with a TTL; works through
   * transaction poolers) for the duration of fn({path, token, signal}),
   * renewed every ttl/3; signal aborts if a renewal finds it lost.
   * CoordTimeoutError when another lease is live ({wait} seconds: retry until then).
   */
  async leaseLock(path, fn, { ttl = 30, holder = null, wait = 0 } = {}) {
    seconds(ttl, 'ttl');
    const deadline = Date.now() + seconds(wait, 'wait') * 1000;
    let token;
    for (;;) {
      token = (await this.query(`SELECT coord.lease_lock($1, ${INTERVAL(2)}, $3) AS t`, [path, ttl, holder])).rows[0].t;
      if (token != null || Date.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, Math.min(200, Math.max(10, deadline - Date.now()))));
    }
    if (token == null) throw new CoordTimeoutError(`lease ${path} is held by another holder`);
    const ac = new AbortController();
    const timer = setInterval(async () => {
      try {
        const until = (await this.query(`SELECT coord.renew($1, $2, ${INTERVAL(3)}) AS u`, [path, token, ttl])).rows[0].u;
        if (until == null && !ac.signal.aborted) ac.abort(new ClaimLostError(`lease ${path} was lost`));
      } catch (e) { /* a failed renewal is retried at the next tick; the TTL decides */ }
    }, Math.max(50, (ttl * 1000) / 3));
    try {
      return await fn({ path, token, signal: ac.signal });
    } finally {
      clearInterval(timer);
      try {
        await this.query('SELECT coord.lease_unlock($1, $2)', [path, token]);
      } catch (e) { /* the TTL ends it */ }
    }
  }

  /**
   * Joins partition group `group` as `member` on a connection of its own
   * (membership is bound to that session).  Returns a Membership:
   * .segments (owned at the join), owned(), leave() (also [Symbol.asyncDispose]),
   * .signal (aborted if the connection, and so the membership, is lost).
   */
  async join(group, member, { weight = 1, meta, segments, assignor } = {}) {
    const s = await this._session();
    let rows;
    try {
      ({ rows } = await s.q('SELECT coord.join($1, $2, $3, $4::jsonb, $5, $6) AS segs',
        [group, member, weight, JSON.stringify(meta || {}), segments ?? null, assignor ?? null]));
    } catch (e) {
      s.release(true);
      throw e;
    }
    return new Membership(group, member, rows[0].segs, s);
  }

  /** Closes the pool (waits for held connections to be released). */
  async end() {
    if (this._ended) return;
    this._ended = true;
    await this._pool.end();
  }
}

class Membership {
  constructor(group, member, segments, session) {
    this.group = group;
    this.member = member;
    this.segments = segments;
    this.signal = session.signal;
    this._s = session;
    this._left = false;
  }

  /** coord.owned: the segments owned now (takes what became free, lets go of what moved). */
  async owned() {
    if (this._left) throw new CoordError(`left partition group ${this.group}`);
    const { rows } = await this._s.q('SELECT coord.owned($1) AS segs', [this.group]);
    this.segments = rows[0].segs;
    return this.segments;
  }

  /** coord.leave, and the connection goes back to the pool. */
  async leave() {
    if (this._left) return;
    this._left = true;
    let err = null;
    if (!this._s.signal.aborted) {
      try { await this._s.q('SELECT coord.leave($1)', [this.group]); } catch (e) { err = e; }
    }
    this._s.release(!!err);
  }
}
if (typeof Symbol.asyncDispose === 'symbol')
  Membership.prototype[Symbol.asyncDispose] = function () { return this.leave(); };

module.exports = { Client, Membership, INTERVAL, seconds };
