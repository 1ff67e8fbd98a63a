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

-- Round 4: the crawl frontier as a pg_coord queue (site_crawler.py), one job
-- per URL with limit_key => site, a per-site concurrency limit, and a site
-- that answers HTTP 429.  The "sites" are simulated here: a site with
-- answers_429 > 0 answers its first answers_429 requests with 429 and a
-- Retry-After of retry_after.
CREATE TABLE s3.sites (
    site        text PRIMARY KEY,
    answers_429 integer NOT NULL DEFAULT 0,
    retry_after interval NOT NULL DEFAULT '3 seconds',
    hits        integer NOT NULL DEFAULT 0     -- requests the site got
);
COMMENT ON TABLE s3.sites IS
  'S3 round 4: the simulated sites; the first answers_429 requests to a site are answered with HTTP 429';

-- One row per request to a site (200 or 429), inserted in the transaction
-- that completes the job (200), or just before the fail (429).  No unique
-- constraint: a URL fetched twice would show.
CREATE TABLE s3.site_fetches (
    id         bigserial PRIMARY KEY,
    url        text NOT NULL,
    site       text NOT NULL,
    crawler    text NOT NULL,
    status     integer NOT NULL,
    job_id     bigint NOT NULL,
    token      bigint NOT NULL,
    claim_started timestamptz NOT NULL,     -- the server's clock when the claiming statement began
    claimed_at timestamptz NOT NULL,        -- the server's clock in the claiming statement, after the claim
    done_at    timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
CREATE INDEX ON s3.site_fetches (site, claimed_at);
COMMENT ON TABLE s3.site_fetches IS
  'S3 round 4: every request a site crawler made (HTTP 200 or 429), from its claim to its complete or fail';

-- Each 429: the server's clock just before coord.fail(..., pause_key => true)
-- and just after its commit; the site is paused from then for retry_after.
CREATE TABLE s3.pauses (
    site         text NOT NULL,
    crawler      text NOT NULL,
    job_id       bigint NOT NULL,
    before_fail  timestamptz NOT NULL,
    after_commit timestamptz NOT NULL,
    retry_after  interval NOT NULL,
    state        text                      -- what coord.fail answered
);
COMMENT ON TABLE s3.pauses IS
  'S3 round 4: each HTTP 429 and the pause of its site (coord.fail with pause_key), with the server times around the fail';

-- Samples, every 10 ms, of the jobs running per site (coord.jobs) and of what
-- coord.limits says, taken by s3.sample_limits while the crawlers run.
CREATE TABLE s3.limit_samples (
    at           timestamptz NOT NULL,
    limit_key    text,
    running_jobs integer,                  -- coord.jobs: running jobs of the site
    running      integer,                  -- coord.limits.running
    paused_until timestamptz               -- coord.limits.paused_until
);
COMMENT ON TABLE s3.limit_samples IS
  'S3 round 4: per-site running counts and pauses sampled every 10 ms while the site crawlers run';

CREATE FUNCTION s3.sample_limits(queue text, timeout interval)
RETURNS integer LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + timeout;
    n integer := 0;
    t timestamptz;
BEGIN
    -- until no job of the queue is left (or the timeout); each statement sees what has committed
    WHILE clock_timestamp() < deadline
          AND EXISTS (SELECT FROM coord.jobs AS j
                       WHERE j.queue = sample_limits.queue AND j.state IN ('scheduled', 'ready', 'running')) LOOP
        t := clock_timestamp();         -- one time for all rows of a sample
        INSERT INTO s3.limit_samples (at, limit_key, running_jobs, running, paused_until)
        SELECT t, COALESCE(r.limit_key, l.limit_key), COALESCE(r.n, 0), l.running, l.paused_until
          -- claimed_at IS NOT NULL: coord.jobs tells running from the claim lock, live, but the
          -- rows come from the statement's snapshot; a job claimed after the snapshot (in
          -- the slot of one whose completion the snapshot does not see yet) would show as
          -- running in its ready row, one more than ever ran at once
          FROM (SELECT j.limit_key, count(*) AS n FROM coord.jobs AS j
                 WHERE j.queue = sample_limits.queue AND j.state = 'running' AND j.claimed_at IS NOT NULL
                   AND j.limit_key IS NOT NULL
                 GROUP BY j.limit_key) AS r
          FULL JOIN (SELECT l.limit_key, l.running, l.paused_until FROM coord.limits AS l
                      WHERE l.queue = sample_limits.queue AND l.limit_key IS NOT NULL) AS l
            ON l.limit_key = r.limit_key;
        n := n + 1;
        PERFORM pg_sleep(0.01);
    END LOOP;
    RETURN n;
END $$;
COMMENT ON FUNCTION s3.sample_limits(text, interval) IS
  'For the demo: samples per-site running jobs and coord.limits every 10 ms into s3.limit_samples while the queue has live jobs';
