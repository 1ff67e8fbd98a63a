'use strict';
// Worker: claims jobs of one queue and runs handler(job) for each, up to
// `concurrency` at once, on one connection of its own.
//
// The loop: LISTEN "coord:<queue>" on connect (before the first claim);
// claim up to min(free slots, batch); when a claim finds nothing, sleep
// until a NOTIFY, coord.next_due(queue), a freed slot, stop(), or
// pollInterval.  A job still running watchCancelAfter s after its start:
// LISTEN "coord:job:<id>" and one heartbeat (a cancel that committed before
// the LISTEN shows as NULL); shorter jobs cost no statement for it.  Lease
// claims are heartbeated every `heartbeat` s; a NOTIFY "cancel", a
// heartbeat answering NULL, or (session-bound) the loss of the connection
// aborts job.signal.
// A finished job goes through _finishAndClaim, the one place that reports
// the outcome and claims the next job: coord.complete_and_claim /
// fail_and_claim (one statement, one commit) where the server has them,
// else complete or fail and then claim.  With concurrency > 1, jobs that
// finish while a statement is under way are completed together by the next
// one (one statement and one commit for them all; the freed slots are then
// claimed in one claim); any error there sends each job back through
// _finishAndClaim on its own.  Session-bound workers (or `prepare`) use named
// prepared statements for the statements of the loop.  A lost connection is reopened with
// exponential backoff; lease jobs held across it finish on the new one,
// session-bound ones were released by the server with the old session.
// stop() (and SIGTERM/SIGINT unless handleSignals is false): no new claims,
// held jobs finish and are reported, then run() resolves.
const { EventEmitter } = require('events');
const pg = require('pg');
const { pgConfig, checkServer } = require('./conn');
const os = require('os');
const { INTERVAL } = require('./client');
const { runInTrace } = require('./otel');
const {
  CoordError, ConnectionLostError, ClaimLostError, JobCancelledError, RetryAfter, wrapError,
} = require('./errors');

const WORKER_KEYS = new Set(['queue', 'handler', 'concurrency', 'sessionBound', 'batch', 'lease',
  'heartbeat', 'pollInterval', 'listen', 'watchCancel', 'watchCancelAfter', 'claimHost', 'partitionGroup',
  'partitionMember', 'partitionWeight', 'handleSignals',
  'reconnectDelay', 'maxReconnectDelay', 'useCompleteAndClaim', 'prepare']);

// default partition member names: host-pid-serial
let workerSerial = 0;

const JOB_COLUMNS = 'id, queue, payload, attempt, token, lease_until, key, group_key, host, run_at, trace';

const ALONE = Symbol('alone');
// _byId's keys: the id as read (a number), or its text if it is a BigInt
const idKey = (id) => typeof id === 'number' ? id : String(id);
const quoteIdent = (s) => '"' + String(s).replace(/"/g, '""') + '"';
const isInt = (v) => typeof v === 'number' ? Number.isSafeInteger(v) : typeof v === 'bigint';

function errorText(e) {
  if (e instanceof Error) return e.name && e.name !== 'Error' ? `${e.name}: ${e.message}` : e.message;
  return String(e);
}

class Job {
  constructor(worker, row) {
    this.id = row.id;
    this.queue = row.queue;
    this.payload = row.payload;
    this.attempt = row.attempt;
    this.token = row.token;
    this.leaseUntil = row.lease_until;
    this.key = row.key;
    this.groupKey = row.group_key;
    this.host = row.host;
    this.runAt = row.run_at;
    this.trace = row.trace;       // the W3C traceparent it was enqueued with, or null
    this._w = worker;
    this._ac = null;              // made when first asked for: most jobs never look
    this._finished = false;
    this._lost = false;
  }

  /** Aborted when the job is cancelled or its claim is lost; reason: JobCancelledError / ClaimLostError / ConnectionLostError. */
  get signal() {
    if (!this._ac) this._ac = new AbortController();
    return this._ac.signal;
  }

  _abort(reason) {
    if (!this.signal.aborted) this._ac.abort(reason);
  }

  get cancelled() {
    return this._ac != null && this._ac.signal.aborted;
  }

  /** coord.progress: reports progress (any JSON); false when the claim is no longer ours. */
  async progress(progress) {
    const { rows } = await this._w._q('SELECT coord.progress($1, $2, $3::jsonb) AS ok',
      [this.id, this.token, JSON.stringify(progress)]);
    if (!rows[0].ok) this._abort(new ClaimLostError(`job ${this.id}: claim lost (cancelled, or lease expired)`));
    return rows[0].ok;
  }

  /**
   * A durable step: the result an earlier attempt recorded for `name`, else
   * fn()'s, recorded (coord.step / step_done).  ClaimLostError if the claim
   * is no longer ours when recording.
   */
  async step(name, fn) {
    const { rows } = await this._w._q('SELECT r IS NULL AS missing, r FROM coord.step($1, $2, $3) AS r',
      [this.id, this.token, name]);
    if (!rows[0].missing) return rows[0].r;
    const result = await fn();
    const done = await this._w._q('SELECT coord.step_done($1, $2, $3, $4::jsonb) AS ok',
      [this.id, this.token, name, JSON.stringify(result === undefined ? null : result)]);
    if (!done.rows[0].ok) {
      const e = new ClaimLostError(`job ${this.id}: step ${name} not recorded: the claim is no longer ours`);
      this._abort(e);
      throw e;
    }
    return result;
  }

  /** coord.parent_results: [{parentId, state, result}] of this job's parents (after). */
  async parentResults() {
    const { rows } = await this._w._q('SELECT parent_id, state, result FROM coord.parent_results($1, $2) ORDER BY parent_id',
      [this.id, this.token]);
    return rows.map((r) => ({ parentId: r.parent_id, state: r.state, result: r.result }));
  }

  /**
   * Runs fn(tx) in a transaction on the worker's connection that also
   * completes the job with fn's return value (coord.complete): the writes
   * and the completion commit together, or not at all.  If the claim is no
   * longer ours the transaction rolls back and ClaimLostError is thrown.
   * tx.query(sql, params) as pg's.  Keep it short: the worker's other
   * statements wait for it.
   */
  async transaction(fn) {
    if (this._finished) throw new CoordError(`job ${this.id} is finished already`);
    return this._w._transaction(async (tx) => {
      const result = await fn(tx);
      const { rows } = await tx.query('SELECT coord.complete($1, $2, $3::jsonb) AS ok',
        [this.id, this.token, JSON.stringify(result === undefined ? null : result)]);
      if (!rows[0].ok) {
        this._lost = true;
        throw new ClaimLostError(`job ${this.id}: not completed, the claim is no longer ours`);
      }
      return result;
    }).then((result) => {
      this._finished = true;
      this._w.emit('completed', this, result);
      return result;
    });
  }
}

class Worker extends EventEmitter {
  constructor(options = {}) {
    super();
    const cfg = {};
    for (const [k, v] of Object.entries(options)) if (!WORKER_KEYS.has(k)) cfg[k] = v;
    const {
      queue, handler, concurrency = 1, sessionBound = true, batch = 10, lease = 300, heartbeat,
      pollInterval = 5, listen = true, watchCancel = true, watchCancelAfter = 0.05, claimHost = null, partitionGroup = null,
      partitionMember = null, partitionWeight = 1,
      handleSignals = true, reconnectDelay = 0.1, maxReconnectDelay = 10, useCompleteAndClaim = true,
      prepare = sessionBound,
    } = options;
    if (typeof queue !== 'string' || queue === '') throw new TypeError('Worker: queue must be a non-empty string');
    if (typeof handler !== 'function') throw new TypeError('Worker: handler must be a function');
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new TypeError('Worker: concurrency must be an integer >= 1');
    if (!Number.isInteger(batch) || batch < 1) throw new TypeError('Worker: batch must be an integer >= 1');
    for (const [name, v] of [['lease', lease], ['pollInterval', pollInterval], ['reconnectDelay', reconnectDelay], ['maxReconnectDelay', maxReconnectDelay]])
      if (typeof v !== 'number' || !(v > 0)) throw new TypeError(`Worker: ${name} must be a number of seconds > 0`);
    this.queue = queue;
    this.handler = handler;
    this.concurrency = concurrency;
    this.sessionBound = !!sessionBound;
    this.batch = batch;
    this.lease = lease;
    this.heartbeat = heartbeat ?? lease / 3;
    this.pollInterval = pollInterval;
    this.listen = !!listen;
    this.watchCancel = !!watchCancel && this.listen;
    this.watchCancelAfter = watchCancelAfter;
    this.claimHost = claimHost;
    this.partitionGroup = partitionGroup;
    // the member this worker's session joins the group as (membership is the
    // session's: it joins again on every new connection)
    this.partitionMember = partitionMember ?? `${os.hostname()}-${process.pid}-${++workerSerial}`;
    this.partitionWeight = partitionWeight;
    this.handleSignals = !!handleSignals;
    this.reconnectDelay = reconnectDelay;
    this.maxReconnectDelay = maxReconnectDelay;
    this._useFused = !!useCompleteAndClaim;
    // named prepared statements: not through a transaction pooler (lease claims' case)
    this.prepare = !!prepare;
    this._names = new Map();
    this._doneQ = [];
    this._flushPending = false;
    this._watchTimer = null;
    this._pgConfig = cfg;
    this._conn = null;
    this._connWaiters = [];
    this._active = new Set();
    this._byId = new Map();
    this._unlisten = [];
    this._stopping = false;
    this._running = null;
    this._wake = null;
    this._notified = false;
    this._chain = Promise.resolve();
    this._fused = false;
    this.serverVersion = null;
  }

  /** Whether finishing a job and claiming the next is one statement (coord.complete_and_claim). */
  get usesCompleteAndClaim() {
    return this._fused;
  }

  /** Runs until stop() (or SIGTERM/SIGINT); resolves once every held job is finished and reported. */
  run() {
    if (this._running) return Promise.reject(new CoordError('Worker.run: already running'));
    this._stopping = false;
    this._everConnected = false;
    this._running = this._run().finally(() => { this._running = null; });
    return this._running;
  }

  /** Stops claiming; held jobs finish; resolves when run() does. */
  stop() {
    this._stopping = true;
    this._wakeUp();
    return this._running ? this._running.then(() => {}, () => {}) : Promise.resolve();
  }

  async _run() {
    const offSignals = this._installSignals();
    let failure = null;
    try {
      await this._connectWithBackoff();
      while (!this._stopping || this._active.size > 0) {
        try {
          await this._tick();
        } catch (e) {
          const w = wrapError(e);
          if (!(w instanceof ConnectionLostError)) throw w;
          this._dropConnection(this._conn, w);
          if (this._stopping && this._active.size === 0) break;
          await this._connectWithBackoff();
        }
      }
    } catch (e) {
      failure = wrapError(e);
      // fatal (permission, extension, ...): no new claims; let held jobs end
      this._stopping = true;
      while (this._active.size > 0) await this._sleep(Date.now() + 1000);
    } finally {
      offSignals();
      if (this._watchTimer) clearTimeout(this._watchTimer);
      this._watchTimer = null;
      const conn = this._conn;
      this._conn = null;
      if (conn) await conn.end().catch(() => {});
      for (const w of this._connWaiters.splice(0)) w(false);
    }
    if (failure) throw failure;
  }

  _installSignals() {
    if (!this.handleSignals) return () => {};
    const handler = (sig) => {
      if (!this._stopping) {
        this.emit('stopping', sig);
        this.stop();
        return;
      }
      // a second signal: the default action (exit); claims end with the process
      process.removeListener('SIGTERM', handler);
      process.removeListener('SIGINT', handler);
      process.kill(process.pid, sig);
    };
    process.on('SIGTERM', handler);
    process.on('SIGINT', handler);
    return () => {
      process.removeListener('SIGTERM', handler);
      process.removeListener('SIGINT', handler);
    };
  }

  // --- connection -----------------------------------------------------------

  async _connect() {
    const conn = new pg.Client(pgConfig(this._pgConfig));
    conn.on('error', (e) => this._dropConnection(conn, wrapError(e)));
    conn.on('end', () => this._dropConnection(conn, new ConnectionLostError('connection ended', { sqlstate: '08006' })));
    conn.on('notification', (m) => this._onNotification(m));
    try {
      await conn.connect();
      const s = await checkServer(conn);
      this.serverVersion = s.version;
      this._fused = s.fused && this._useFused;
      if (this.listen) await conn.query(`LISTEN ${quoteIdent('coord:' + this.queue)}`);
      if (this.partitionGroup !== null)
        await conn.query('SELECT coord.join($1, $2, $3::float8)', [this.partitionGroup, this.partitionMember, this.partitionWeight]);
      // held jobs' channels again (a new session listens on nothing)
      if (this.watchCancel) {
        const again = [...this._active].filter((j) => j._watched && !this.sessionBound).map((j) => `LISTEN ${quoteIdent('coord:job:' + j.id)}`);
        if (again.length) await conn.query(again.join('; '));
      }
    } catch (e) {
      conn.removeAllListeners('end');
      conn.on('error', () => {});
      conn.end().catch(() => {});
      throw wrapError(e);
    }
    this._unlisten = [];
    this._conn = conn;
    for (const w of this._connWaiters.splice(0)) w(true);
  }

  async _connectWithBackoff() {
    let delay = this.reconnectDelay;
    for (let tries = 0; ; tries++) {
      try {
        await this._connect();
        if (this._everConnected) this.emit('reconnected');
        this._everConnected = true;
        return;
      } catch (e) {
        if (!(e instanceof ConnectionLostError)) throw e;
        if (this._stopping && this._active.size === 0) return;
        this.emit('reconnecting', e, delay);
        await this._sleep(Date.now() + delay * 1000 * (0.5 + Math.random() / 2));
        delay = Math.min(this.maxReconnectDelay, delay * 2);
      }
    }
  }

  _dropConnection(conn, err) {
    if (!conn || conn !== this._conn) return;
    this._conn = null;
    conn.removeAllListeners('end');
    conn.on('error', () => {});
    conn.end().catch(() => {});
    this.emit('disconnected', err);
    // a session-bound claim ended with its session: the job is someone else's now
    if (this.sessionBound) {
      for (const j of this._active) {
        j._lost = true;
        j._abort(new ConnectionLostError(`job ${j.id}: the connection was lost, and with it the session-bound claim`, { sqlstate: '08006', cause: err }));
      }
    }
    this._wakeUp();
  }

  // resolves true once connected, false if it gives up (deadline or run() ends)
  _whenConnected(deadlineMs) {
    if (this._conn) return Promise.resolve(true);
    return new Promise((resolve) => {
      let t = null;
      const w = (ok) => { if (t) clearTimeout(t); resolve(ok); };
      this._connWaiters.push(w);
      if (deadlineMs != null) t = setTimeout(() => {
        const i = this._connWaiters.indexOf(w);
        if (i >= 0) this._connWaiters.splice(i, 1);
        resolve(false);
      }, Math.max(0, deadlineMs - Date.now()));
    });
  }

  // Statements on the worker's one connection run one at a time, in order
  // (pg 8 deprecates overlapping queries on a client); a job.transaction
  // holds the connection from BEGIN to COMMIT.
  _serial(fn) {
    const run = this._chain.then(() => {
      const conn = this._conn;
      if (!conn) throw new ConnectionLostError('not connected', { sqlstate: '08003' });
      return fn(conn);
    });
    this._chain = run.then(() => {}, () => {});
    return run;
  }

  async _query(conn, sql, params, prepared) {
    try {
      if (prepared && this.prepare) {
        let name = this._names.get(sql);
        if (!name) this._names.set(sql, name = `pg_coord_${this._names.size + 1}`);
        return await conn.query({ name, text: sql, values: params });
      }
      return await conn.query(sql, params);
    } catch (e) {
      const w = wrapError(e);
      if (w instanceof ConnectionLostError) this._dropConnection(conn, w);
      throw w;
    }
  }

  /** One statement on the worker's connection (prepared: a named prepared statement when this.prepare). */
  _q(sql, params, prepared = false) {
    return this._serial((conn) => this._query(conn, sql, params, prepared));
  }

  _transaction(fn) {
    return this._serial(async (conn) => {
      const tx = { query: (sql, params) => this._query(conn, sql, params) };
      await tx.query('BEGIN');
      try {
        const r = await fn(tx);
        await tx.query('COMMIT');
        return r;
      } catch (e) {
        await conn.query('ROLLBACK').catch(() => {});
        throw e;
      }
    });
  }

  // --- the loop -------------------------------------------------------------

  _onNotification(m) {
    if (m.channel === 'coord:' + this.queue) {
      this._notified = true;
      this._wakeUp();
    } else if (m.channel.startsWith('coord:job:') && m.payload === 'cancel') {
      const k = m.channel.slice('coord:job:'.length), n = Number(k);
      const job = this._byId.get(Number.isSafeInteger(n) ? n : k);
      if (job) job._abort(new JobCancelledError(`job ${job.id} was cancelled`));
    }
  }

  _wakeUp() {
    if (this._wake) {
      const w = this._wake;
      this._wake = null;
      w();
    }
  }

  // sleeps until untilMs or a wake-up (NOTIFY, a freed slot, stop())
  _sleep(untilMs) {
    return new Promise((resolve) => {
      const t = setTimeout(() => { if (this._wake === done) this._wake = null; resolve(); }, Math.max(0, untilMs - Date.now()));
      const done = () => { clearTimeout(t); resolve(); };
      this._wake = done;
    });
  }

  async _tick() {
    if (!this._conn) throw new ConnectionLostError('not connected', { sqlstate: '08003' });
    const free = this.concurrency - this._active.size;
    if (this._stopping || free <= 0) {
      await this._flushUnlisten();
      if (this._stopping && this._active.size === 0) return;
      await this._sleep(Date.now() + this.pollInterval * 1000);
      return;
    }
    this._notified = false;
    const want = Math.min(free, this.batch);
    const jobs = await this._claim(want);
    for (const j of jobs) this._start(j);
    if (jobs.length > 0) return;
    // idle: wait for a NOTIFY (unless one came meanwhile), the next due time, or the poll
    if (this._notified || this._stopping) return;
    await this._flushUnlisten();
    let until = Date.now() + this.pollInterval * 1000;
    const { rows } = await this._q('SELECT coord.next_due($1) AS d', [this.queue], true);
    if (rows[0].d instanceof Date) until = Math.min(until, Math.max(Date.now() + 10, rows[0].d.getTime()));
    if (this._notified || this._stopping) return;
    await this._sleep(until);
  }

  _claimArgs(start) {
    return {
      sql: `lease => ${INTERVAL(start)}, session_bound => $${start + 1}, host => $${start + 2}, partition_group => $${start + 3}`,
      params: [this.lease, this.sessionBound, this.claimHost, this.partitionGroup],
    };
  }

  async _claim(n) {
    const a = this._claimArgs(3);
    const { rows } = await this._q(`SELECT ${JOB_COLUMNS} FROM coord.claim($1, $2, ${a.sql})`, [this.queue, n, ...a.params], true);
    return this._claimed(rows);
  }

  // the claimed rows as Jobs
  _claimed(rows) {
    const jobs = rows.filter((r) => r.id != null).map((r) => new Job(this, r));
    for (const j of jobs) this._byId.set(idKey(j.id), j);
    return jobs;
  }

  // Watches a job that is still running `watchCancelAfter` s after it
  // started: LISTEN on its channel, then one heartbeat (a cancel that
  // committed before the LISTEN answers NULL).  Jobs that end sooner cost
  // no statement for it.
  async _watch(job) {
    if (job._done || !this._conn || !isInt(job.id) || !isInt(job.token)) return;
    job._watched = true;
    const sql = [...this._unlisten.splice(0).map((c) => `UNLISTEN ${quoteIdent(c)}`),
      `LISTEN ${quoteIdent('coord:job:' + job.id)}`,
      `SELECT coord.heartbeat(${job.id}::bigint, ${job.token}::bigint) IS NULL AS gone`].join('; ');
    try {
      const res = await this._q(sql);
      const last = Array.isArray(res) ? res[res.length - 1] : res;
      if (last.rows[0].gone && !job._done) job._abort(new JobCancelledError(`job ${job.id} was cancelled (or its claim lost)`));
    } catch (e) { /* connection trouble: the loop reconnects */ }
  }

  // One timer for the worker, not one per job: it watches the jobs that have
  // run watchCancelAfter s, and is set again for the next one due.
  _armWatch(ms) {
    this._watchTimer = setTimeout(() => {
      this._watchTimer = null;
      const after = this.watchCancelAfter * 1000, now = Date.now();
      let next = Infinity;
      for (const j of this._active) {
        if (j._done || j._watched || j._t0 == null) continue;
        if (j._t0 + after <= now) this._watch(j);
        else next = Math.min(next, j._t0 + after);
      }
      if (next !== Infinity) this._armWatch(next - now);
    }, Math.max(0, ms));
  }

  async _flushUnlisten() {
    if (!this._unlisten.length || !this._conn) return;
    const chans = this._unlisten.splice(0);
    try {
      await this._q(chans.map((c) => `UNLISTEN ${quoteIdent(c)}`).join('; '));
    } catch (e) {
      if (!(e instanceof ConnectionLostError)) throw e;
    }
  }

  _start(job) {
    this._active.add(job);
    this._runJob(job).catch((e) => this._warn(e));
  }

  async _runJob(job) {
    let next = [];
    let timer = null;
    try {
      if (!this.sessionBound || !this.listen) {
        timer = setInterval(() => this._heartbeat(job), Math.max(50, this.heartbeat * 1000));
      }
      if (this.watchCancel) {
        job._t0 = Date.now();
        if (!this._watchTimer) this._armWatch(this.watchCancelAfter * 1000);
      }
      let outcome;
      try {
        const result = await (job.trace ? runInTrace(job.trace, () => this.handler(job)) : this.handler(job));
        outcome = { kind: 'complete', result };
      } catch (e) {
        outcome = e instanceof RetryAfter ? { kind: 'retry', error: e.message, seconds: e.seconds, pauseKey: e.pauseKey }
          : { kind: 'fail', error: errorText(e), cause: e };
      }
      job._done = true;
      if (timer) clearInterval(timer);
      timer = null;
      if (!job._finished && !job._lost) {
        next = this.concurrency > 1 && outcome.kind === 'complete' ? await this._completeTogether(job, outcome) : ALONE;
        if (next === ALONE) next = await this._finish(job, outcome);
      }
      else if (job._lost) this.emit('lost', job);
    } finally {
      job._done = true;
      if (timer) clearInterval(timer);
      this._active.delete(job);
      this._byId.delete(idKey(job.id));
      if (job._watched) this._unlisten.push('coord:job:' + job.id);
      for (const n of next) this._start(n);
      if (next.length === 0) this._wakeUp();
    }
  }

  async _heartbeat(job) {
    if (!this._conn || job._finished) return;
    try {
      const { rows } = await this._q(`SELECT coord.heartbeat($1, $2, ${INTERVAL(3)}) AS u`, [job.id, job.token, this.lease]);
      if (rows[0].u == null) {
        job._lost = true;
        job._abort(new ClaimLostError(`job ${job.id}: claim lost (cancelled, or lease expired)`));
      } else {
        job.leaseUntil = rows[0].u;
      }
    } catch (e) { /* connection trouble: the loop reconnects; the next beat tries again */ }
  }

  // Completes `job` together with the other jobs that finish before the
  // worker's connection is free (one statement, one commit); [] once
  // reported, or ALONE: report it on its own (_finish) — a batch of one (the
  // one-commit complete_and_claim does better), or the batch failed (a lost
  // connection, a result the server refuses, ...): each job then gets the
  // single path's handling of that.
  _completeTogether(job, outcome) {
    return new Promise((resolve) => {
      this._doneQ.push({ job, outcome, resolve });
      if (this._flushPending) return;
      this._flushPending = true;
      // after this turn of the event loop: the jobs finishing in it join
      setImmediate(() => {
        this._serial((conn) => this._flushDone(conn)).catch(() => {
          this._flushPending = false;
          for (const d of this._doneQ.splice(0)) d.resolve(ALONE);
        });
      });
    });
  }

  async _flushDone(conn) {
    this._flushPending = false;
    const batch = this._doneQ.splice(0);
    if (batch.length <= 1) {
      for (const d of batch) d.resolve(ALONE);
      return;
    }
    let answers;
    try {
      const ids = batch.map((d) => d.job.id), tokens = batch.map((d) => d.job.token);
      if (batch.every((d) => d.outcome.result == null)) {
        // coord.complete_many counts; when some claim was not ours any more,
        // coord.claim_state tells which were completed by this statement
        const { rows } = await this._query(conn, 'SELECT coord.complete_many($1, $2) AS n', [ids, tokens], true);
        if (rows[0].n === batch.length) {
          answers = batch.map(() => true);
        } else {
          const r = await this._query(conn, "SELECT coord.claim_state(u.i, u.t) IS NOT DISTINCT FROM 'done' AS ok "
            + 'FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS u(i, t, o) ORDER BY u.o', [ids, tokens], true);
          answers = r.rows.map((x) => x.ok);
        }
      } else {
        const results = batch.map((d) => JSON.stringify(d.outcome.result === undefined ? null : d.outcome.result));
        const r = await this._query(conn, 'SELECT coord.complete(u.i, u.t, u.r) AS ok '
          + 'FROM unnest($1::bigint[], $2::bigint[], $3::jsonb[]) WITH ORDINALITY AS u(i, t, r, o) ORDER BY u.o',
        [ids, tokens, results], true);
        answers = r.rows.map((x) => x.ok);
      }
    } catch (e) {
      for (const d of batch) d.resolve(ALONE);
      return;
    }
    batch.forEach((d, i) => {
      this._reported(d.job, d.outcome, answers[i]);
      d.resolve([]);
    });
  }

  // Reports the outcome, retrying on a new connection after a lost one while
  // the claim can still be ours; the jobs claimed along (to start).
  async _finish(job, outcome) {
    for (;;) {
      const n = this._stopping ? 0 : 1;
      try {
        return await this._finishAndClaim(job, outcome, n);
      } catch (e) {
        const w = wrapError(e);
        if (!(w instanceof ConnectionLostError)) {
          // the outcome cannot be reported as it is (a result JSON cannot
          // hold, a retry_after past coord.max_retry_after, ...): fail the
          // job with that error rather than hold it
          this._warn(w);
          if (outcome.kind === 'fail') throw w;
          outcome = { kind: 'fail', error: `could not report the job's outcome: ${errorText(w)}`, cause: w };
          continue;
        }
        if (this.sessionBound) { this.emit('lost', job); return []; }
        const deadline = job.leaseUntil instanceof Date ? job.leaseUntil.getTime() : Date.now() + this.lease * 1000;
        if (!(await this._whenConnected(deadline))) { this.emit('lost', job); return []; }
      }
    }
  }

  /**
   * THE single-job step: report `outcome` of `job` and claim up to `n` more
   * of the queue.  With coord.complete_and_claim / fail_and_claim on the
   * server (0.4.0, detected in pg_proc at connect), one statement and one
   * commit; else complete or fail, then claim.
   */
  async _finishAndClaim(job, outcome, n) {
    if (this._fused && n > 0) return this._fusedFinish(job, outcome, n);
    let answer;
    if (outcome.kind === 'complete') {
      const { rows } = await this._q('SELECT coord.complete($1, $2, $3::jsonb) AS a',
        [job.id, job.token, JSON.stringify(outcome.result === undefined ? null : outcome.result)], true);
      answer = rows[0].a;
    } else if (outcome.kind === 'retry') {
      const { rows } = await this._q(`SELECT coord.fail($1, $2, $3, ${INTERVAL(4)}, pause_key => $5) AS a`,
        [job.id, job.token, outcome.error, outcome.seconds, outcome.pauseKey], true);
      answer = rows[0].a;
    } else {
      const { rows } = await this._q('SELECT coord.fail($1, $2, $3) AS a', [job.id, job.token, outcome.error], true);
      answer = rows[0].a;
    }
    this._reported(job, outcome, answer);
    return n > 0 && !this._stopping ? this._claim(n) : [];
  }

  async _fusedFinish(job, outcome, n) {
    const a = this._claimArgs(outcome.kind === 'complete' ? 5 : outcome.kind === 'retry' ? 7 : 5);
    let res;
    if (outcome.kind === 'complete') {
      res = await this._q(`SELECT * FROM coord.complete_and_claim($1, $2, $3::jsonb, n => $4, ${a.sql})`,
        [job.id, job.token, JSON.stringify(outcome.result === undefined ? null : outcome.result), n, ...a.params], true);
    } else if (outcome.kind === 'retry') {
      res = await this._q(`SELECT * FROM coord.fail_and_claim($1, $2, $3, ${INTERVAL(4)}, $5, n => $6, ${a.sql})`,
        [job.id, job.token, outcome.error, outcome.seconds, outcome.pauseKey, n, ...a.params], true);
    } else {
      res = await this._q(`SELECT * FROM coord.fail_and_claim($1, $2, $3, NULL, false, n => $4, ${a.sql})`,
        [job.id, job.token, outcome.error, n, ...a.params], true);
    }
    // each row: the finish's answer (completed / state) first, then coord.claimed_job's columns
    // (NULL in the one row returned when nothing was claimed)
    const first = res.fields[0].name;
    this._reported(job, outcome, res.rows.length ? res.rows[0][first] : null);
    return this._claimed(res.rows);
  }

  // 'warning' listeners get what went wrong in the background; without one it goes to stderr
  _warn(e) {
    const w = wrapError(e);
    if (this.listenerCount('warning') > 0) this.emit('warning', w);
    else console.warn(`pg-coord worker (${this.queue}): ${w.message}`);
  }

  _reported(job, outcome, answer) {
    job._finished = true;
    const counted = outcome.kind === 'complete' ? answer === true : answer != null;
    if (!counted) {
      this.emit('lost', job);
    } else if (outcome.kind === 'complete') {
      this.emit('completed', job, outcome.result);
    } else if (outcome.kind === 'retry') {
      this.emit('snoozed', job, outcome.seconds);
    } else {
      this.emit('failed', job, outcome.cause, answer);
    }
  }
}

module.exports = { Worker, Job };
