-- S3: crawlers that must not fetch the same URL twice, on pg_coord.
--
-- The original "coordinator" answered request (ok/no), queue and done; a
-- second requester waited and got "ok" if the first one crashed.  Here that
-- is coord.request / coord.mark_queued / coord.mark_done, keyed by the URL.
-- The tables below are only the crawlers' own bookkeeping: what was fetched
-- (so duplicates would show) and the download queue for big documents.
--
-- Apply with:  psql -d <db> -f examples/s3/schema.sql   (needs CREATE EXTENSION pg_coord)

\set ON_ERROR_STOP on
SET client_min_messages = warning;

CREATE SCHEMA s3;
COMMENT ON SCHEMA s3 IS 'S3 example: what the crawlers fetched, and their download queue';

-- One row per actual fetch.  Deliberately no unique constraint: a URL fetched
-- twice shows up as two rows instead of an error, so the checks can count it.
CREATE TABLE s3.fetches (
    id         bigserial PRIMARY KEY,
    url        text NOT NULL,
    round      integer NOT NULL,
    crawler    text NOT NULL,
    via        text NOT NULL CHECK (via IN ('crawler', 'download queue')),
    pid        integer NOT NULL DEFAULT pg_catalog.pg_backend_pid(),
    owned_at   timestamptz NOT NULL,     -- when coord.request answered true (for a download: to the crawler that queued it)
    waited_ms  numeric NOT NULL,         -- how long coord.request blocked before that
    fetch_ms   integer NOT NULL,
    fetched_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    -- the row is inserted in the transaction that calls coord.mark_done, so
    -- this is the done_at that coord.mark_done records (both are now())
    done_at    timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX ON s3.fetches (url);
COMMENT ON TABLE s3.fetches IS
  'One row per URL fetch actually done, by a crawler or a downloader; no unique constraint, so duplicates stay visible';

-- Big documents (.pdf) are not fetched inline: the crawler that owns the URL
-- queues it here, in the same transaction as coord.mark_queued, and a
-- downloader fetches it and marks it done.  No unique constraint either.
CREATE TABLE s3.downloads (
    id        bigserial PRIMARY KEY,
    url       text NOT NULL,
    round     integer NOT NULL,
    queued_by text NOT NULL,
    owned_at  timestamptz NOT NULL,      -- when coord.request answered true to queued_by
    waited_ms numeric NOT NULL,
    queued_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE s3.downloads IS
  'Download queue: URLs a crawler marked queued, waiting for a downloader (claimed with FOR UPDATE SKIP LOCKED)';

\set schema s3
\ir ../lib/wait_until.sql
