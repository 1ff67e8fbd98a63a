// Type declarations of pg-coord (hand-written; test/types.test.js compiles
// test/types-check.ts against them with tsc --strict).

/** JSON values (payloads, results, progress, step results). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Connection settings: node-postgres's (pg) client / pool config, e.g.
 * {connectionString} or {host, port, user, database, password}; empty: the
 * PG* environment variables.
 */
export interface ConnectionConfig {
  connectionString?: string;
  host?: string;
  port?: number;
  user?: string;
  database?: string;
  password?: string | (() => string | Promise<string>);
  ssl?: boolean | object;
  application_name?: string;
  statement_timeout?: number;
  connectionTimeoutMillis?: number;
  keepAlive?: boolean;
  /** pool size (Client only; pg.Pool's option) */
  max?: number;
  [option: string]: unknown;
}

/** A pg query result (only what pg-coord's users need of it). */
export interface QueryResult<R = any> {
  rows: R[];
  rowCount: number | null;
  command: string;
  fields: { name: string; dataTypeID: number }[];
}

/** Options of coord.enqueue, camelCase (docs/jobs.md, docs/flow-control.md, docs/workflows.md). */
export interface EnqueueOptions {
  runAt?: Date | string;
  priority?: number;
  key?: string;
  host?: string;
  maxAttempts?: number;
  groupKey?: string;
  limitKey?: string;
  maxSnoozes?: number;
  expiresAt?: Date | string;
  /** ids of jobs that must be done first */
  after?: number[];
  onParentFailure?: 'cancel' | 'run';
  /** a batch id from coord.open_batch */
  batch?: number;
  /** a W3C traceparent (default: the active OpenTelemetry context's when @opentelemetry/api is installed; null: none) */
  trace?: string | null;
}

export type EnqueueManyOptions = Omit<EnqueueOptions, 'key' | 'groupKey'>;

/** A node of enqueueFlow: a job, its name, and `after` naming other nodes. */
export interface FlowNode extends Omit<EnqueueOptions, 'after'> {
  name: string;
  queue: string;
  payload?: Json;
  after?: string[];
}

/** What coord.await answers: state null when the timeout passed first. */
export interface JobResult<R = Json> {
  state: 'done' | 'dead' | 'cancelled' | null;
  result: R | null;
  error: string | null;
}

export interface LockHandle {
  path: string;
  /** aborted when the connection, and so the lock, is lost */
  signal: AbortSignal;
}
export interface LeaderHandle {
  election: string;
  term: number;
  signal: AbortSignal;
}
export interface PermitHandle {
  path: string;
  permit: number;
  signal: AbortSignal;
}
export interface LeaseHandle {
  path: string;
  token: number;
  /** aborted (ClaimLostError) when a renewal finds the lease lost */
  signal: AbortSignal;
}
export interface Leader {
  value: string | null;
  pid: number;
  since: Date;
  term: number;
}

export class Membership {
  readonly group: string;
  readonly member: string;
  /** the segments owned at the join, or at the last owned() */
  segments: number[];
  /** aborted when the connection, and so the membership, is lost */
  readonly signal: AbortSignal;
  owned(): Promise<number[]>;
  leave(): Promise<void>;
}

export class Client {
  constructor(config?: ConnectionConfig);
  /** pg_coord's version on the server, once a call has connected */
  serverVersion: string | null;
  query<R = any>(sql: string, params?: unknown[]): Promise<QueryResult<R>>;
  enqueue(queue: string, payload?: Json, options?: EnqueueOptions): Promise<number>;
  enqueueMany(queue: string, payloads: Json[], options?: EnqueueManyOptions): Promise<number[]>;
  enqueueFlow(nodes: FlowNode[]): Promise<Record<string, number>>;
  awaitResult<R = Json>(id: number, options?: { timeout?: number }): Promise<JobResult<R>>;
  cancel(id: number): Promise<boolean>;
  jobState(id: number): Promise<string | null>;
  lock<T>(path: string, fn: (lock: LockHandle) => T | Promise<T>, options?: { timeout?: number; shared?: boolean }): Promise<T>;
  campaign<T>(election: string, fn: (leader: LeaderHandle) => T | Promise<T>, options?: { value?: string | null; timeout?: number }): Promise<T>;
  leader(election: string): Promise<Leader | null>;
  semaphore<T>(path: string, permits: number, fn: (permit: PermitHandle) => T | Promise<T>, options?: { timeout?: number }): Promise<T>;
  leaseLock<T>(path: string, fn: (lease: LeaseHandle) => T | Promise<T>, options?: { ttl?: number; holder?: string | null; wait?: number }): Promise<T>;
  join(group: string, member: string, options?: { weight?: number; meta?: Json; segments?: number; assignor?: 'sticky' | 'range' }): Promise<Membership>;
  end(): Promise<void>;
}

export interface ParentResult<R = Json> {
  parentId: number;
  state: string;
  result: R | null;
}

export interface Transaction {
  query<R = any>(sql: string, params?: unknown[]): Promise<QueryResult<R>>;
}

export class Job<P = any> {
  readonly id: number;
  readonly queue: string;
  readonly payload: P;
  readonly attempt: number;
  readonly token: number;
  leaseUntil: Date | null;
  readonly key: string | null;
  readonly groupKey: string | null;
  readonly host: string | null;
  readonly runAt: Date;
  /** the W3C traceparent it was enqueued with (coord.claimed_job.trace), or null */
  readonly trace: string | null;
  /** aborted when the job is cancelled or its claim is lost (reason: JobCancelledError, ClaimLostError, ConnectionLostError) */
  readonly signal: AbortSignal;
  /** signal.aborted */
  readonly cancelled: boolean;
  progress(progress: Json): Promise<boolean>;
  step<T extends Json>(name: string, fn: () => T | Promise<T>): Promise<T>;
  parentResults<R = Json>(): Promise<ParentResult<R>[]>;
  transaction<T extends Json | void>(fn: (tx: Transaction) => T | Promise<T>): Promise<T>;
}

export type Handler<P = any> = (job: Job<P>) => Json | void | Promise<Json | void>;

export interface WorkerOptions<P = any> extends ConnectionConfig {
  queue: string;
  handler: Handler<P>;
  /** jobs run at once (default 1) */
  concurrency?: number;
  /** session-bound claims (default true); false: lease claims, heartbeated */
  sessionBound?: boolean;
  /** most jobs one claim takes (default 10; never more than free slots) */
  batch?: number;
  /** lease claims' lease, seconds (default 300) */
  lease?: number;
  /** seconds between heartbeats of a lease claim (default lease / 3) */
  heartbeat?: number;
  /** longest idle sleep, seconds (default 5) */
  pollInterval?: number;
  /** LISTEN for wake-ups and cancels (default true; false behind a transaction pooler) */
  listen?: boolean;
  /** LISTEN "coord:job:<id>" for each job, for cancels (default true when listen) */
  watchCancel?: boolean;
  /** seconds a job runs before it is watched for cancels (default 0.05: shorter jobs cost no statement) */
  watchCancelAfter?: number;
  /** claim the jobs targeted at this host (coord.claim's host; `host` is pg's, the server to connect to) */
  claimHost?: string | null;
  /** claim only jobs of the segments this worker owns in this partition group (coord.claim's partition_group); the worker joins the group on its connection, again after a reconnect */
  partitionGroup?: string | null;
  /** the member name it joins as (default `<hostname>-<pid>-<n>`) */
  partitionMember?: string | null;
  /** its weight in the group (default 1) */
  partitionWeight?: number;
  /** SIGTERM/SIGINT drain the worker while run() runs (default true) */
  handleSignals?: boolean;
  /** first reconnect delay, seconds (default 0.1), doubling up to maxReconnectDelay (default 10) */
  reconnectDelay?: number;
  maxReconnectDelay?: number;
  /** use coord.complete_and_claim when the server has it (default true) */
  useCompleteAndClaim?: boolean;
  /** named prepared statements for the worker's loop (default: sessionBound; not through a transaction pooler) */
  prepare?: boolean;
}

export class Worker<P = any> {
  constructor(options: WorkerOptions<P>);
  readonly queue: string;
  readonly concurrency: number;
  readonly sessionBound: boolean;
  serverVersion: string | null;
  readonly usesCompleteAndClaim: boolean;
  run(): Promise<void>;
  stop(): Promise<void>;
  on(event: 'completed', listener: (job: Job<P>, result: Json | undefined) => void): this;
  on(event: 'failed', listener: (job: Job<P>, error: unknown, state: string) => void): this;
  on(event: 'snoozed', listener: (job: Job<P>, seconds: number) => void): this;
  on(event: 'lost', listener: (job: Job<P>) => void): this;
  on(event: 'disconnected' | 'warning', listener: (error: CoordError) => void): this;
  on(event: 'reconnecting', listener: (error: CoordError, delaySeconds: number) => void): this;
  on(event: 'reconnected', listener: () => void): this;
  on(event: 'stopping', listener: (signal: string) => void): this;
  once(event: string, listener: (...args: any[]) => void): this;
  off(event: string, listener: (...args: any[]) => void): this;
}

export class CoordError extends Error {
  constructor(message: string, options?: { sqlstate?: string | null; detail?: string; hint?: string; cause?: unknown });
  /** the SQLSTATE, e.g. '42501'; '08006' for a lost connection; null when none applies */
  readonly sqlstate: string | null;
  /** the same as sqlstate (pg's name) */
  readonly code: string | null;
  readonly detail?: string;
  readonly hint?: string;
}
export class PermissionDeniedError extends CoordError {}
export class ExtensionMissingError extends CoordError {}
export class VersionMismatchError extends CoordError {
  readonly installed: string | null;
  readonly required: string | null;
}
export class ConnectionLostError extends CoordError {}
export class CoordTimeoutError extends CoordError {}
export class ClaimLostError extends CoordError {}
export class JobCancelledError extends ClaimLostError {}

export class RetryAfter extends Error {
  constructor(seconds: number, options?: { pauseKey?: boolean; error?: string });
  readonly seconds: number;
  readonly pauseKey: boolean;
}

export const REQUIRED_VERSION: string;
