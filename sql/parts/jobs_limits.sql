
-------------------------------------------------------------------------------
-- Flow control (src/jobs/jobs_limits.c): concurrency and rate limits per queue
-- and per limit_key, pauses, and the running claims the limits count.
-------------------------------------------------------------------------------

-- One row per (queue, per_key): per_key false is the limit of the whole
-- queue, true the limit of each limit_key of the queue.  Changing a row
-- (coord.set_limit, coord.drop_limit) invalidates this table's relcache
-- entry, which is what makes every backend read the limits again: claims
-- keep them cached (and the fact that a queue has none).
CREATE TABLE coord.job_limit (
    queue       text NOT NULL,
    per_key     boolean NOT NULL,
    concurrency integer CHECK (concurrency > 0),
    rate        integer CHECK (rate > 0),
    per         interval NOT NULL DEFAULT '1 second',
    burst       integer CHECK (burst > 0),
    PRIMARY KEY (queue, per_key)
);
COMMENT ON TABLE coord.job_limit IS
  'Flow-control limits: of a whole queue (per_key false) or of each limit_key of it; concurrency, and a token bucket of rate claims per per with burst';
REVOKE ALL ON coord.job_limit FROM PUBLIC;

-- Pauses: limit_key '' is the whole queue (a limit_key has 1 to 1024
-- bytes); until NULL is until coord.resume.  Rows whose until has passed
-- mean nothing and are deleted by the next pause or resume of the queue,
-- or by coord.tick coord.retention later.
CREATE TABLE coord.job_pause (
    queue     text NOT NULL,
    limit_key text NOT NULL,
    until     timestamptz,
    PRIMARY KEY (queue, limit_key)
);
COMMENT ON TABLE coord.job_pause IS
  'Paused queues (limit_key '''') and keys: claims skip them until until (NULL: until coord.resume)';
REVOKE ALL ON coord.job_pause FROM PUBLIC;

-- Token buckets: written only by a claim that holds the transaction lock
-- of the (queue, key) (namespace 17220), so never contended on a row lock.
-- Logged, not unlogged: coord.limits and coord.queue_stats read it, and an
-- unlogged table cannot be read on a standby.
CREATE TABLE coord.job_bucket (
    queue       text NOT NULL,
    limit_key   text NOT NULL,
    tokens      float8 NOT NULL,
    refilled_at timestamptz NOT NULL,
    PRIMARY KEY (queue, limit_key)
);
COMMENT ON TABLE coord.job_bucket IS
  'Token buckets of rate limits (limit_key '''' for the whole queue): tokens as of refilled_at, refilled lazily on the server''s clock';
REVOKE ALL ON coord.job_bucket FROM PUBLIC;

-- Slots of concurrency limits: a row per (queue, scope, slot) naming the
-- job (and claim token) that took the slot last; per_key false is the whole
-- queue's limit (limit_key ''), true a limit_key's.  A slot is taken while
-- its claim is live (the job is in coord.job with that token, and its lease
-- has not passed or a session holds its claim lock), so a dead worker's slot
-- frees by itself and finishing a job writes nothing here; a claim takes a
-- free slot by overwriting its row.  At most `concurrency` rows per scope
-- (more only for claims running when the limit was set or lowered).
CREATE TABLE coord.job_running (
    queue     text NOT NULL,
    per_key   boolean NOT NULL,
    limit_key text NOT NULL,
    slot      integer NOT NULL,
    job_id    bigint NOT NULL,
    token     bigint NOT NULL,
    PRIMARY KEY (queue, per_key, limit_key, slot)
) WITH (fillfactor = 50);
COMMENT ON TABLE coord.job_running IS
  'Slots of concurrency limits: the job and claim token that took each last; a slot is taken only while that claim is live';
REVOKE ALL ON coord.job_running FROM PUBLIC;
CREATE INDEX job_limit_key ON coord.job (queue, limit_key) WHERE limit_key IS NOT NULL;
COMMENT ON INDEX coord.job_limit_key IS 'Jobs per limit_key: coord.next_due and coord.limits';
CREATE INDEX job_expires ON coord.job (expires_at) WHERE expires_at IS NOT NULL;
COMMENT ON INDEX coord.job_expires IS 'Jobs with a deadline: coord.tick kills those past it';

CREATE FUNCTION coord.set_limit(queue text, concurrency integer DEFAULT NULL, rate integer DEFAULT NULL,
                                per interval DEFAULT '1 second', burst integer DEFAULT NULL,
                                per_key boolean DEFAULT false)
RETURNS void AS 'MODULE_PATHNAME', 'coord_set_limit'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.set_limit(text, integer, integer, interval, integer, boolean) IS
  'Sets the limit of a queue (per_key: of each limit_key of it): at most concurrency running claims, and a token bucket of rate claims per per with burst (default rate); NULL removes that part';

CREATE FUNCTION coord.drop_limit(queue text, per_key boolean DEFAULT false)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_drop_limit'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.drop_limit(text, boolean) IS
  'Removes the limit of a queue (per_key: of its keys); false if there was none';

CREATE FUNCTION coord.pause(queue text, until timestamptz DEFAULT NULL, limit_key text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_pause'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.pause(text, timestamptz, text) IS
  'Claims skip the queue (or its limit_key) until until, or until coord.resume; false if it was paused already (the new until applies)';

CREATE FUNCTION coord.resume(queue text, limit_key text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_resume'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.resume(text, text) IS
  'Ends a pause of the queue (or of its limit_key) and wakes its idle claimers; false if it was not paused';

CREATE FUNCTION coord.next_due(queue text)
RETURNS timestamptz AS 'MODULE_PATHNAME', 'coord_next_due'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.next_due(text) IS
  'When the next job of the queue could be claimed (its run_at, a pause''s end, a bucket''s refill, a lease''s end), for idle workers'' sleep; NULL when no job waits or all wait for coord.resume';

CREATE FUNCTION coord.job_snoozes(id bigint)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_job_snoozes'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.job_snoozes(bigint) IS
  'How many times a live job was snoozed (failed with retry_after); NULL once it finished';

-- Internal to coord.limits: a bucket's tokens now (refilled to the moment).
CREATE FUNCTION coord.bucket_tokens(tokens float8, refilled_at timestamptz, rate integer, per interval, burst integer)
RETURNS float8 AS 'MODULE_PATHNAME', 'coord_bucket_tokens'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION coord.bucket_tokens(float8, timestamptz, integer, interval, integer) IS
  'A token bucket''s tokens now: tokens as of refilled_at plus rate per per since, at most burst';
