'use strict';
// Trace context (W3C traceparent) through OpenTelemetry when
// @opentelemetry/api is installed: an optional dependency, looked up once
// when first needed, never required.  Client.enqueue* send the active
// context's traceparent; the Worker runs each handler in the context
// extracted from its job's (coord.claimed_job.trace).
let api; // undefined: not looked up yet; null: not installed

function otel() {
  if (api === undefined) {
    try {
      api = require('@opentelemetry/api');
    } catch (e) {
      api = null;
    }
  }
  return api;
}

/** The active context's traceparent (the configured propagator's), or null. */
function currentTraceparent() {
  const a = otel();
  if (!a) return null;
  const carrier = {};
  a.propagation.inject(a.context.active(), carrier);
  const tp = carrier.traceparent;
  // only what coord.enqueue accepts: another propagator's forms are left out
  return typeof tp === 'string' && tp.length === 55 ? tp : null;
}

/** fn() in the context extracted from trace (a traceparent); fn() alone without one or without OpenTelemetry. */
function runInTrace(trace, fn) {
  const a = trace ? otel() : null;
  if (!a) return fn();
  const ctx = a.propagation.extract(a.context.active(), { traceparent: trace });
  return a.context.with(ctx, fn);
}

/** Tests: look @opentelemetry/api up again at the next use. */
function _resetOtel() {
  api = undefined;
}

module.exports = { otel, currentTraceparent, runInTrace, _resetOtel };
