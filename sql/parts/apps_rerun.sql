
-- ---------- apps: reruns and backfills (docs/apps.md, Reruns and backfills) ----------

CREATE TABLE coord.app_run_history (
    app          text NOT NULL REFERENCES coord.app_defs (name) ON DELETE CASCADE,
    period_start timestamptz NOT NULL,
    attempt_no   integer NOT NULL,
    period_end   timestamptz NOT NULL,
    queue        text NOT NULL,
    host         text,
    state        text NOT NULL,
    attempts     integer NOT NULL,
    job_id       bigint,
    created_at   timestamptz NOT NULL,
    finished_at  timestamptz,
    result       jsonb,
    replaced_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (app, period_start, attempt_no)
);
COMMENT ON TABLE coord.app_run_history IS
  'Earlier attempts of app runs: a finished run that coord.rerun replaced, numbered from 1 per (app, period)';
REVOKE ALL ON coord.app_run_history FROM PUBLIC;

CREATE TABLE coord.app_reruns (
    app          text NOT NULL REFERENCES coord.app_defs (name) ON DELETE CASCADE,
    period_start timestamptz NOT NULL,
    period_end   timestamptz NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (app, period_start)
);
COMMENT ON TABLE coord.app_reruns IS
  'Periods whose run coord.rerun reset and that have no new run yet: coord.tick creates them (at most 24 unfinished runs per app), or the completion of their last upstream does';
REVOKE ALL ON coord.app_reruns FROM PUBLIC;

CREATE FUNCTION coord.rerun(app text, "from" timestamptz, "to" timestamptz, downstream boolean DEFAULT true)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_rerun'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.rerun(text, timestamptz, timestamptz, boolean) IS
  'Reruns every finished run of an app whose period starts in [from, to) (the old one stays in coord.runs as an earlier attempt) and, with downstream, resets every dependent run containing such a period to wait for its upstreams again; returns how many runs were reset';

CREATE OR REPLACE VIEW coord.runs AS
SELECT r.app, r.period_start, r.period_end, r.host,
       CASE WHEN j.id IS NULL THEN
                 CASE WHEN r.state OPERATOR(pg_catalog.=) 'live' THEN 'missing' ELSE r.state END
            WHEN j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now() OR coord.job_claimed(j.id) THEN 'running'
            WHEN j.run_at OPERATOR(pg_catalog.>) pg_catalog.now() THEN 'scheduled'
            ELSE 'ready' END AS state,
       COALESCE(j.attempt, r.attempts) AS attempts, r.job_id, r.created_at, r.finished_at, r.result,
       r.queue, j.last_error, d.last_error AS app_error,
       (SELECT pg_catalog.count(*) FROM coord.app_run_history AS h
         WHERE h.app OPERATOR(pg_catalog.=) r.app
           AND h.period_start OPERATOR(pg_catalog.=) r.period_start)::integer OPERATOR(pg_catalog.+) 1 AS attempt_no,
       true AS current
  FROM coord.app_runs AS r
  LEFT JOIN coord.job AS j ON j.id OPERATOR(pg_catalog.=) r.job_id
  LEFT JOIN coord.app_defs AS d ON d.name OPERATOR(pg_catalog.=) r.app
UNION ALL
SELECT p.app, p.period_start, p.period_end, d.host, 'waiting', 0, NULL::bigint, p.requested_at, NULL::timestamptz,
       NULL::jsonb, d.queue, NULL::text, d.last_error,
       (SELECT pg_catalog.count(*) FROM coord.app_run_history AS h
         WHERE h.app OPERATOR(pg_catalog.=) p.app
           AND h.period_start OPERATOR(pg_catalog.=) p.period_start)::integer OPERATOR(pg_catalog.+) 1,
       true
  FROM coord.app_reruns AS p
  JOIN coord.app_defs AS d ON d.name OPERATOR(pg_catalog.=) p.app
 WHERE NOT EXISTS (SELECT 1 FROM coord.app_runs AS r2
                    WHERE r2.app OPERATOR(pg_catalog.=) p.app
                      AND r2.period_start OPERATOR(pg_catalog.=) p.period_start)
UNION ALL
SELECT h.app, h.period_start, h.period_end, h.host, h.state, h.attempts, h.job_id, h.created_at, h.finished_at,
       h.result, h.queue, NULL::text, NULL::text, h.attempt_no, false
  FROM coord.app_run_history AS h;
COMMENT ON VIEW coord.runs IS
  'App runs: per (app, period) its current run (current true: state scheduled, ready, running, done, dead, cancelled, missing when its job was deleted, waiting when coord.rerun reset it and its new run is not created yet) and the earlier attempts coord.rerun replaced (current false), numbered by attempt_no';
