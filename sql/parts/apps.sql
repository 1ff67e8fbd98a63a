
-- ---------- apps: period-keyed dependency scheduling (docs/apps.md) ----------

CREATE TABLE coord.app_defs (
    name         text PRIMARY KEY,
    starts       text CHECK (starts OPERATOR(pg_catalog.=) ANY (ARRAY['hourly', 'daily', 'weekly', 'monthly', 'yearly'])),
    depends      jsonb NOT NULL,
    timeout      interval,
    host         text,
    queue        text NOT NULL,
    catchup_from timestamptz,
    conf         jsonb NOT NULL,
    grain        text NOT NULL
                 CHECK (grain OPERATOR(pg_catalog.=) ANY (ARRAY['hourly', 'daily', 'weekly', 'monthly', 'yearly'])),
    first_period timestamptz,
    next_period  timestamptz,
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    tz           text NOT NULL DEFAULT 'UTC',
    deadline     interval
);
COMMENT ON TABLE coord.app_defs IS
  'Apps: period length, dependencies, timeout, host and queue of each; see coord.define_app';
COMMENT ON COLUMN coord.app_defs.grain IS
  'The length of the app''s periods: starts, or the coarsest period named in depends';
COMMENT ON COLUMN coord.app_defs.first_period IS
  'Start of the first period the app has runs for: catchup_from, else the period of the first tick after its definition';
COMMENT ON COLUMN coord.app_defs.next_period IS
  'Periods before this one all have a run (or never will); coord.tick creates and repairs from here';
COMMENT ON COLUMN coord.app_defs.last_error IS
  'Why the last tick, or the last completion of an upstream run, could not create or time out this app''s runs; NULL after a tick that could';
COMMENT ON COLUMN coord.app_defs.tz IS
  'Time zone whose local calendar periods the app runs for (PostgreSQL''s name for it); UTC by default';
COMMENT ON COLUMN coord.app_defs.deadline IS
  'How long after its period ends a run may be unfinished before it is late: coord.tick then raises a deadline alert (coord.alerts)';
REVOKE ALL ON coord.app_defs FROM PUBLIC;

CREATE TABLE coord.app_runs (
    app           text NOT NULL,
    period_start  timestamptz NOT NULL,
    period_end    timestamptz NOT NULL,
    queue         text NOT NULL,
    host          text,
    state         text NOT NULL
                  CHECK (state OPERATOR(pg_catalog.=) ANY (ARRAY['live', 'done', 'dead', 'cancelled'])),
    attempts      integer NOT NULL DEFAULT 0,
    job_id        bigint,
    created_at    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    finished_at   timestamptz,
    result        jsonb,
    claim_token   bigint,
    claim_seen_at timestamptz,
    PRIMARY KEY (app, period_start)
);
COMMENT ON TABLE coord.app_runs IS
  'One row per (app, period) that has a run, created once: live while its job (origin a:<app>:<YYYY-MM-DD-HH24MI>, with the UTC offset after it in a zone other than UTC) is, then done, dead or cancelled';
COMMENT ON COLUMN coord.app_runs.claim_token IS 'The claim of the run''s job that a tick last saw (runs with a timeout)';
COMMENT ON COLUMN coord.app_runs.claim_seen_at IS 'The tick time at which that claim was first seen';
REVOKE ALL ON coord.app_runs FROM PUBLIC;
CREATE INDEX app_runs_live ON coord.app_runs (app, period_start)
  WHERE state OPERATOR(pg_catalog.=) 'live';
COMMENT ON INDEX coord.app_runs_live IS 'Unfinished runs: timeouts, catch-up limits, repairs';

CREATE FUNCTION coord.define_app(name text, starts text DEFAULT NULL, depends jsonb DEFAULT '{}',
                                 timeout interval DEFAULT NULL, host text DEFAULT NULL,
                                 queue text DEFAULT 'apps', catchup_from timestamptz DEFAULT NULL,
                                 conf jsonb DEFAULT '{}', tz text DEFAULT 'UTC',
                                 deadline interval DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'coord_define_app'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.define_app(text, text, jsonb, interval, text, text, timestamptz, jsonb, text, interval) IS
  'Creates or replaces an app: runs per hourly/daily/weekly/monthly/yearly local period of tz (a local day has 23, 24 or 25 hours), created when the period starts or when the runs it depends on are done; a run unfinished deadline after its period ends raises an alert (coord.alerts); changing tz of an app with runs is refused';

CREATE FUNCTION coord.drop_app(name text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_drop_app'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.drop_app(text) IS
  'Drops an app, its runs and their unclaimed jobs; ERROR while other apps depend on it';

CREATE VIEW coord.runs AS
SELECT r.app, r.period_start, r.period_end, r.host,
       CASE WHEN j.id IS NULL THEN
                 CASE WHEN r.state OPERATOR(pg_catalog.=) 'live' THEN 'missing' ELSE r.state END
            WHEN j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now() OR coord.job_claimed(j.id) THEN 'running'
            WHEN j.run_at OPERATOR(pg_catalog.>) pg_catalog.now() THEN 'scheduled'
            ELSE 'ready' END AS state,
       COALESCE(j.attempt, r.attempts) AS attempts, r.job_id, r.created_at, r.finished_at, r.result,
       r.queue, j.last_error, d.last_error AS app_error
  FROM coord.app_runs AS r
  LEFT JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) r.job_id
  LEFT JOIN coord.app_defs AS d ON d.name OPERATOR(pg_catalog.=) r.app;
COMMENT ON VIEW coord.runs IS
  'App runs, one per (app, period): state scheduled, ready, running, done, dead, cancelled (or missing: its job was deleted; the next tick puts it back)';

CREATE FUNCTION coord.grid("from" timestamptz DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) '1 day'::interval,
                           "to" timestamptz DEFAULT pg_catalog.now(), apps text[] DEFAULT NULL)
RETURNS SETOF text AS 'MODULE_PATHNAME', 'coord_grid'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 10;
COMMENT ON FUNCTION coord.grid(timestamptz, timestamptz, text[]) IS
  'A text picture of apps x periods: one line per app with a symbol per run state, a header with period labels and a legend';

-- ---------- apps' alerts: deadlines, dead runs, timeouts (issue 18; src/apps/apps_alerts.c) ----------

CREATE TABLE coord.app_alerts (
    app          text NOT NULL,
    period_start timestamptz NOT NULL,
    kind         text NOT NULL
                 CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['deadline', 'dead', 'timeout'])),
    raised_at    timestamptz NOT NULL,
    cleared_at   timestamptz,
    detail       text NOT NULL,
    events       integer NOT NULL DEFAULT 1,
    PRIMARY KEY (app, period_start, kind, raised_at)
);
COMMENT ON TABLE coord.app_alerts IS
  'Alerts of app runs: deadline (unfinished that long after its period ended), dead (died after its last attempt), timeout (its claim revoked by its timeout); open until cleared_at';
COMMENT ON COLUMN coord.app_alerts.raised_at IS
  'The now of the coord.tick that raised it (deadline, timeout), or when the run died (dead)';
COMMENT ON COLUMN coord.app_alerts.cleared_at IS
  'When the run finished (deadline, timeout: done, dead or cancelled; dead: done after a retry or a rerun); NULL while open';
COMMENT ON COLUMN coord.app_alerts.events IS
  'How many times it happened while open (timeouts of the same run)';
REVOKE ALL ON coord.app_alerts FROM PUBLIC;
CREATE UNIQUE INDEX app_alerts_open ON coord.app_alerts (app, period_start, kind)
  WHERE cleared_at IS NULL;
COMMENT ON INDEX coord.app_alerts_open IS 'At most one open alert of each kind per run, whatever the number of ticks';
CREATE INDEX app_alerts_cleared ON coord.app_alerts (cleared_at)
  WHERE cleared_at IS NOT NULL;
COMMENT ON INDEX coord.app_alerts_cleared IS 'Retention of cleared alerts (coord.job_history_retention, by coord.tick)';

CREATE VIEW coord.alerts AS
SELECT a.app, a.period_start, a.kind, a.raised_at, a.cleared_at, a.detail, a.events
  FROM coord.app_alerts AS a;
COMMENT ON VIEW coord.alerts IS
  'Alerts of app runs (deadline, dead, timeout), open while cleared_at is NULL; a NOTIFY on "coord:alerts" (payload {"app", "period_start", "kind"}) at the commit that raises one';
