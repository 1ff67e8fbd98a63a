// ESM entry: the CommonJS implementation, re-exported by name.
import lib from './index.js';

export const {
  Client, Membership, Worker, Job, RetryAfter, CoordError, PermissionDeniedError,
  ExtensionMissingError, VersionMismatchError, ConnectionLostError, CoordTimeoutError,
  ClaimLostError, JobCancelledError, REQUIRED_VERSION,
} = lib;
export default lib;
