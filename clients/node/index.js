'use strict';
// pg-coord: a client and a worker for pg_coord (https://github.com/... see
// docs/clients/node.md), on node-postgres (`pg`).
const { Client, Membership } = require('./lib/client');
const { Worker, Job } = require('./lib/worker');
const errors = require('./lib/errors');
const { REQUIRED_VERSION } = require('./lib/conn');

module.exports = {
  Client,
  Membership,
  Worker,
  Job,
  RetryAfter: errors.RetryAfter,
  CoordError: errors.CoordError,
  PermissionDeniedError: errors.PermissionDeniedError,
  ExtensionMissingError: errors.ExtensionMissingError,
  VersionMismatchError: errors.VersionMismatchError,
  ConnectionLostError: errors.ConnectionLostError,
  CoordTimeoutError: errors.CoordTimeoutError,
  ClaimLostError: errors.ClaimLostError,
  JobCancelledError: errors.JobCancelledError,
  REQUIRED_VERSION,
};
