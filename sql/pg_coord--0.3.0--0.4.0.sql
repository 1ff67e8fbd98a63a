-- pg_coord 0.3.0 -> 0.4.0: written by hand.  Every change to the catalog
-- after the 0.3.0 release goes here and into the fragments under sql/parts/
-- (which build the 0.4.0 install script); test/upgrade/upgrade_and_dump.sh
-- checks that an updated catalog matches a fresh 0.4.0 install object for
-- object.  Frozen once 0.4.0 is released.

\echo Use "ALTER EXTENSION pg_coord UPDATE TO '0.4.0'" to load this file. \quit

-- Workflows (job dependencies, batches): a batch column on jobs, and
-- enqueue / enqueue_many take after, on_parent_failure and batch after
-- expires_at.  The functions are dropped and created again (a default
-- cannot be added to a function's argument list in place); calls of the
-- 0.3.0 form, positional or named, resolve to the new ones.
ALTER TABLE coord.job ADD COLUMN batch bigint;
COMMENT ON COLUMN coord.job.batch IS 'The batch the job was enqueued into (coord.enqueue''s batch), or NULL';
ALTER TABLE coord.job_history ADD COLUMN batch bigint;
COMMENT ON COLUMN coord.job_history.batch IS 'The batch the job was enqueued into, or NULL';

DROP FUNCTION coord.enqueue(text, jsonb, timestamptz, integer, text, text, integer, text, text, integer, timestamptz);
CREATE FUNCTION coord.enqueue(queue text, payload jsonb DEFAULT '{}', run_at timestamptz DEFAULT NULL,
                              priority integer DEFAULT 0, key text DEFAULT NULL, host text DEFAULT NULL,
                              max_attempts integer DEFAULT 25, group_key text DEFAULT NULL,
                              limit_key text DEFAULT NULL, max_snoozes integer DEFAULT 100,
                              expires_at timestamptz DEFAULT NULL, after bigint[] DEFAULT NULL,
                              on_parent_failure text DEFAULT 'cancel', batch bigint DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_enqueue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.enqueue(text, jsonb, timestamptz, integer, text, text, integer, text, text, integer, timestamptz, bigint[], text, bigint) IS
  'Adds a job and returns its id; with key, returns the id of the live job with that key instead of adding one; with after, it waits until those jobs are done';
REVOKE ALL ON FUNCTION coord.enqueue(text, jsonb, timestamptz, integer, text, text, integer, text, text, integer, timestamptz, bigint[], text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.enqueue(text, jsonb, timestamptz, integer, text, text, integer, text, text, integer, timestamptz, bigint[], text, bigint) TO coord_worker;

DROP FUNCTION coord.enqueue_many(text, jsonb[], timestamptz, integer, text, integer, text, integer, timestamptz);
CREATE FUNCTION coord.enqueue_many(queue text, payloads jsonb[], run_at timestamptz DEFAULT NULL,
                                   priority integer DEFAULT 0, host text DEFAULT NULL,
                                   max_attempts integer DEFAULT 25, limit_key text DEFAULT NULL,
                                   max_snoozes integer DEFAULT 100, expires_at timestamptz DEFAULT NULL,
                                   after bigint[] DEFAULT NULL, on_parent_failure text DEFAULT 'cancel',
                                   batch bigint DEFAULT NULL)
RETURNS SETOF bigint AS 'MODULE_PATHNAME', 'coord_enqueue_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION coord.enqueue_many(text, jsonb[], timestamptz, integer, text, integer, text, integer, timestamptz, bigint[], text, bigint) IS
  'Adds one job per payload; returns their ids in array order; with after, each waits until those jobs are done';
REVOKE ALL ON FUNCTION coord.enqueue_many(text, jsonb[], timestamptz, integer, text, integer, text, integer, timestamptz, bigint[], text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION coord.enqueue_many(text, jsonb[], timestamptz, integer, text, integer, text, integer, timestamptz, bigint[], text, bigint) TO coord_worker;
