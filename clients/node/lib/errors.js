'use strict';
// Typed errors: every error pg-coord throws is a CoordError (or RetryAfter,
// which a handler throws, not the library).  A server error keeps its
// SQLSTATE (.sqlstate, also .code as pg names it) and the server's message,
// detail and hint; the pg error is .cause.

class CoordError extends Error {
  constructor(message, { sqlstate = null, detail, hint, cause } = {}) {
    super(message, cause !== undefined ? { cause } : undefined);
    this.name = 'CoordError';
    this.sqlstate = sqlstate;
    this.code = sqlstate;
    if (detail) this.detail = detail;
    if (hint) this.hint = hint;
  }
}

/** 42501: the role lacks a privilege (e.g. not a member of coord_worker). */
class PermissionDeniedError extends CoordError {
  constructor(message, opts) { super(message, opts); this.name = 'PermissionDeniedError'; }
}

/** pg_coord is not installed in the database connected to (3F000, 42704). */
class ExtensionMissingError extends CoordError {
  constructor(message, opts) { super(message, opts); this.name = 'ExtensionMissingError'; }
}

/** The installed pg_coord is older than this library needs (42883, or found at connect). */
class VersionMismatchError extends CoordError {
  constructor(message, opts = {}) {
    super(message, opts);
    this.name = 'VersionMismatchError';
    this.installed = opts.installed ?? null;
    this.required = opts.required ?? null;
  }
}

/** The connection to the server broke (SQLSTATE class 08, 57P01-57P03, or a socket error: 08006). */
class ConnectionLostError extends CoordError {
  constructor(message, opts) { super(message, opts); this.name = 'ConnectionLostError'; }
}

/** lock / campaign / semaphore / leaseLock not obtained within its timeout (sqlstate 55P03; Python: CoordTimeout). */
class CoordTimeoutError extends CoordError {
  constructor(message, opts = {}) { super(message, { sqlstate: '55P03', ...opts }); this.name = 'CoordTimeoutError'; }
}

/** The job's claim is no longer this worker's (cancelled, lease lost, session ended). */
class ClaimLostError extends CoordError {
  constructor(message, opts) { super(message, opts); this.name = 'ClaimLostError'; }
}

/** The job was cancelled (coord.cancel): the reason of job.signal. */
class JobCancelledError extends ClaimLostError {
  constructor(message, opts) { super(message, opts); this.name = 'JobCancelledError'; }
}

/**
 * Thrown by a handler: snooze the job for `seconds` (coord.fail(...,
 * retry_after)); uses no attempt.  With pauseKey the job's limit_key is
 * paused for every claimer (the HTTP 429 case).
 */
class RetryAfter extends Error {
  constructor(seconds, { pauseKey = false, error } = {}) {
    super(error ?? `retry after ${seconds} s`);
    if (!(typeof seconds === 'number' && seconds >= 0 && Number.isFinite(seconds)))
      throw new TypeError('RetryAfter: seconds must be a finite number >= 0');
    this.name = 'RetryAfter';
    this.seconds = seconds;
    this.pauseKey = !!pauseKey;
  }
}

const LOST_MESSAGES = /Connection terminated|connection error|not queryable|Client was closed|ECONNRESET|ECONNREFUSED|EPIPE|ENOENT|ETIMEDOUT|socket hang up|Connection ended/i;

function isConnectionError(e) {
  if (e instanceof ConnectionLostError) return true;
  if (e instanceof CoordError) return false;
  const code = e && e.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))
    return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03';
  return !!(e && LOST_MESSAGES.test(String(e.message) + ' ' + String(code || '')));
}

/** Wraps anything pg (or the socket) threw into a CoordError subclass. */
function wrapError(e) {
  if (e instanceof CoordError || e instanceof RetryAfter) return e;
  if (!(e instanceof Error)) return new CoordError(String(e));
  const code = typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : null;
  const opts = { sqlstate: code, detail: e.detail, hint: e.hint, cause: e };
  if (isConnectionError(e)) return new ConnectionLostError(e.message, { ...opts, sqlstate: code || '08006' });
  if (code === '42501') return new PermissionDeniedError(e.message, opts);
  if (code === '3F000' && /"coord"/.test(e.message)) return new ExtensionMissingError(e.message, opts);
  if (code === '42883' && /coord\./.test(e.message)) return new VersionMismatchError(e.message, opts);
  if (code === '42704' && /pg_coord/.test(e.message)) return new ExtensionMissingError(e.message, opts);
  if (code) return new CoordError(e.message, opts);
  return new CoordError(e.message, { cause: e });
}

module.exports = {
  CoordError, PermissionDeniedError, ExtensionMissingError, VersionMismatchError,
  ConnectionLostError, CoordTimeoutError, ClaimLostError, JobCancelledError, RetryAfter,
  wrapError, isConnectionError,
};
