
-- ---------- batches: a callback job once a sealed batch's jobs have all finished (docs/batches.md) ----------
-- The protocol is src/workflows/README.md: per-backend tallies (no row
-- that every completion updates), a gate lock that seal_batch takes against
-- the batch's enqueuers and finishers, and the end row that makes the
-- callback happen once.
CREATE SEQUENCE coord.batch_id_seq;
CREATE TABLE coord.batch (
    id               bigint PRIMARY KEY DEFAULT pg_catalog.nextval('coord.batch_id_seq'::pg_catalog.regclass),
    callback_queue   text NOT NULL,
    callback_payload jsonb NOT NULL,
    on_success       boolean NOT NULL,
    opened_by        oid NOT NULL,
    opened_at        timestamptz NOT NULL DEFAULT pg_catalog.now(),
    sealed_at        timestamptz
);
ALTER SEQUENCE coord.batch_id_seq OWNED BY coord.batch.id;
COMMENT ON SEQUENCE coord.batch_id_seq IS 'Batch ids (coord.open_batch)';
COMMENT ON TABLE coord.batch IS 'Batches opened by coord.open_batch: the callback to enqueue, who opened it, whether it is sealed';
COMMENT ON COLUMN coord.batch.on_success IS 'true for on => ''success'': no callback when a job of the batch died or was cancelled';
COMMENT ON COLUMN coord.batch.opened_by IS 'The role that called coord.open_batch (it, or coord_admin, may enqueue into it and seal it)';
REVOKE ALL ON coord.batch FROM PUBLIC;

-- One row per (batch, backend number): a backend adds its own counts, so two
-- concurrent transactions never update the same row.
CREATE TABLE coord.batch_tally (
    batch     bigint NOT NULL REFERENCES coord.batch (id) ON DELETE CASCADE,
    stripe    integer NOT NULL,
    enqueued  bigint NOT NULL DEFAULT 0,
    done      bigint NOT NULL DEFAULT 0,
    dead      bigint NOT NULL DEFAULT 0,
    cancelled bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (batch, stripe)
);
COMMENT ON TABLE coord.batch_tally IS 'Counts of a batch''s jobs, one row per backend number that enqueued or finished some; coord.batches sums them';
REVOKE ALL ON coord.batch_tally FROM PUBLIC;

-- The row that ends a batch: inserted once, by the transaction that saw the
-- sealed batch's last job finish (or by seal_batch when none was left).
CREATE TABLE coord.batch_end (
    batch        bigint PRIMARY KEY REFERENCES coord.batch (id) ON DELETE CASCADE,
    callback_job bigint,
    ended_at     timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE coord.batch_end IS 'Ended batches: the callback job enqueued (NULL when on => ''success'' and a job died or was cancelled)';
REVOKE ALL ON coord.batch_end FROM PUBLIC;
-- coord.tick deletes ended batches older than coord.job_history_retention,
-- the oldest first, a bounded number a tick.
CREATE INDEX batch_end_ended_at ON coord.batch_end (ended_at);
COMMENT ON INDEX coord.batch_end_ended_at IS 'The tick''s purge finds the batches that ended longest ago';

CREATE FUNCTION coord.open_batch(callback_queue text, callback_payload jsonb DEFAULT '{}', "on" text DEFAULT 'complete')
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_open_batch'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.open_batch(text, jsonb, text) IS
  'Opens a batch: jobs join it with coord.enqueue(..., batch => id); once it is sealed and all of them have finished, a job is enqueued into callback_queue with callback_payload plus the counts (on => ''success'': only if none died or was cancelled)';

CREATE FUNCTION coord.seal_batch(batch bigint)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_seal_batch'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.seal_batch(bigint) IS
  'Seals a batch: no more jobs join it; the callback follows its last job (now, if none is left). false if it was sealed already';

CREATE VIEW coord.batches AS
SELECT b.id AS batch, b.callback_queue, b.sealed_at IS NOT NULL AS sealed,
       t.total, t.done, t.dead, t.cancelled,
       t.total OPERATOR(pg_catalog.-) t.done OPERATOR(pg_catalog.-) t.dead
         OPERATOR(pg_catalog.-) t.cancelled AS waiting,
       e.callback_job
  FROM coord.batch AS b
  CROSS JOIN LATERAL (
    SELECT COALESCE(pg_catalog.sum(s.enqueued), 0)::pg_catalog.int8 AS total,
           COALESCE(pg_catalog.sum(s.done), 0)::pg_catalog.int8 AS done,
           COALESCE(pg_catalog.sum(s.dead), 0)::pg_catalog.int8 AS dead,
           COALESCE(pg_catalog.sum(s.cancelled), 0)::pg_catalog.int8 AS cancelled
      FROM coord.batch_tally AS s WHERE s.batch OPERATOR(pg_catalog.=) b.id) AS t
  LEFT JOIN coord.batch_end AS e ON e.batch OPERATOR(pg_catalog.=) b.id;
COMMENT ON VIEW coord.batches IS
  'Batches: total jobs enqueued into each, how many ended done, dead, cancelled, how many have not finished yet (waiting), and the callback job once enqueued';

-- users' state: dumped (sql/parts/dump.sql explains)
SELECT pg_catalog.pg_extension_config_dump('coord.batch', '');
SELECT pg_catalog.pg_extension_config_dump('coord.batch_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('coord.batch_tally', '');
SELECT pg_catalog.pg_extension_config_dump('coord.batch_end', '');
