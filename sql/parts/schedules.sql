
-- ---------- schedules (docs/schedules.md) and coord.tick ----------

CREATE TABLE coord.schedule_defs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    queue        text NOT NULL,
    every        interval,
    cron         text,
    payload      jsonb NOT NULL,
    starts_at    timestamptz NOT NULL,
    fixed_rate   boolean NOT NULL,
    host         text,
    next_run_at  timestamptz,
    last_run_at  timestamptz,
    last_state   text,
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    tz           text NOT NULL DEFAULT 'UTC',
    CHECK ((every IS NULL) OPERATOR(pg_catalog.<>) (cron IS NULL))
);
COMMENT ON TABLE coord.schedule_defs IS
  'Recurring events; each has at most one live instance, a job with origin s:<name>';
COMMENT ON COLUMN coord.schedule_defs.next_run_at IS
  'Slot of the outstanding instance, or of the next one; NULL when a cron expression never fires again';
COMMENT ON COLUMN coord.schedule_defs.last_run_at IS 'When the last instance finished';
COMMENT ON COLUMN coord.schedule_defs.last_state IS 'How the last instance finished: done, dead or cancelled';
COMMENT ON COLUMN coord.schedule_defs.last_error IS
  'Why the last tick could not repair the schedule, or (with next_run_at NULL) why it stopped after an instance finished; NULL once an instance is put on';
COMMENT ON COLUMN coord.schedule_defs.tz IS
  'Time zone whose wall time the cron fields match (PostgreSQL''s name for it); UTC for every schedules';
REVOKE ALL ON coord.schedule_defs FROM PUBLIC;
COMMENT ON SEQUENCE coord.schedule_defs_id_seq IS 'Schedule ids';

CREATE TABLE coord.tick_state (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    last_tick_at timestamptz,
    ticked_at    timestamptz,
    ticks        bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE coord.tick_state IS
  'One row: the now of the last coord.tick, the clock time it ran, and how many ticks ran';
REVOKE ALL ON coord.tick_state FROM PUBLIC;
INSERT INTO coord.tick_state DEFAULT VALUES;
-- The tick's health for monitors, who read views, not tables.
CREATE VIEW coord.tick_health AS
SELECT t.ticked_at, t.last_tick_at, t.ticks,
       pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) t.ticked_at AS age
  FROM coord.tick_state AS t;
COMMENT ON VIEW coord.tick_health IS
  'When coord.tick last ran (ticked_at, by the server''s clock), the now it was given (last_tick_at), how many ticks ran, and how long ago, by the clock, the last one ran (age; NULL before the first)';

CREATE FUNCTION coord.schedule(name text, queue text, every interval DEFAULT NULL, cron text DEFAULT NULL,
                               payload jsonb DEFAULT '{}', starts_at timestamptz DEFAULT NULL,
                               fixed_rate boolean DEFAULT false, host text DEFAULT NULL,
                               tz text DEFAULT 'UTC')
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_schedule'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.schedule(text, text, interval, text, jsonb, timestamptz, boolean, text, text) IS
  'Creates or replaces a recurring event (every interval of absolute time, or a 5-field cron expression in the wall time of tz); at most one instance is outstanding';

CREATE FUNCTION coord.unschedule(name text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_unschedule'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.unschedule(text) IS
  'Drops a schedule and its unclaimed instance; a running instance finishes and is not followed';

CREATE FUNCTION coord.cron_next(cron text, after timestamptz DEFAULT pg_catalog.now(), tz text DEFAULT 'UTC')
RETURNS timestamptz AS 'MODULE_PATHNAME', 'coord_cron_next_sql'
LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION coord.cron_next(text, timestamptz, text) IS
  'The first fire time of a 5-field cron expression strictly after after, its fields matching the wall time of tz (a minute or hour field beginning with * fires whenever the clock shows a match; otherwise a skipped time fires at the end of the gap, a repeated one at its first occurrence); NULL if it never fires';

CREATE FUNCTION coord.tick(now timestamptz DEFAULT pg_catalog.now())
RETURNS integer AS 'MODULE_PATHNAME', 'coord_tick'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.tick(timestamptz) IS
  'All time-driven work: schedule instances, app period runs and timeouts, dead leases, history retention; idempotent';

CREATE FUNCTION coord.cron_install(schedule text DEFAULT '* * * * *')
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_cron_install'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.cron_install(text) IS
  'Registers SELECT coord.tick() with pg_cron (job name coord-tick); returns the pg_cron job id';

CREATE VIEW coord.schedules AS
SELECT s.name, s.queue, s.every, s.cron, s.fixed_rate, s.next_run_at, s.last_run_at, s.last_state,
       COALESCE(j.lease_until OPERATOR(pg_catalog.>) pg_catalog.now(), false)
         OR COALESCE(coord.job_claimed(j.id), false) AS running,
       j.id AS job_id, s.payload, s.host, s.starts_at, s.last_error, s.tz
  FROM coord.schedule_defs AS s
  LEFT JOIN coord.job AS j
    ON j.origin OPERATOR(pg_catalog.=) ('s:' OPERATOR(pg_catalog.||) s.name);
COMMENT ON VIEW coord.schedules IS
  'Schedules: next and last run, how the last one ended, and whether an instance is running now';
