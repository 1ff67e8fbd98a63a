-- Schedules (docs/schedules.md), coord.tick and the cron parser through SQL.
SET timezone = 'UTC';
DELETE FROM coord.schedule_defs;

-- An instance is put on at once, due at starts_at (default now).
SELECT coord.schedule('hourly', 'ev', every => '1 hour', payload => '{"e": "hourly"}') > 0 AS created;
SELECT name, queue, every, cron, fixed_rate, next_run_at <= now() AS due, last_run_at, last_state, running
  FROM coord.schedules;
SELECT queue, state, payload, origin, max_attempts FROM coord.jobs WHERE origin = 's:hourly';

-- The same definition again changes nothing: same id, same instance.
SELECT coord.schedule('hourly', 'ev', every => '1 hour', payload => '{"e": "hourly"}') =
       (SELECT id FROM coord.schedule_defs WHERE name = 'hourly') AS same_id;
SELECT count(*) AS instances FROM coord.job WHERE origin = 's:hourly';

-- Fixed delay: the next instance is due `every` after the last one finished.
SELECT id AS j1, token AS t1 FROM coord.claim('ev') \gset
SELECT coord.schedules.running FROM coord.schedules WHERE name = 'hourly';
SELECT count(*) AS instances_while_running FROM coord.job WHERE origin = 's:hourly';
SELECT coord.complete(:j1, :t1);
SELECT s.last_state, s.next_run_at - h.finished_at AS delay_after_finish, s.last_run_at = h.finished_at AS last_run
  FROM coord.schedules s, coord.job_history h WHERE s.name = 'hourly' AND h.id = :j1;
SELECT state, run_at = (SELECT next_run_at FROM coord.schedule_defs WHERE name = 'hourly') AS at_next
  FROM coord.jobs WHERE origin = 's:hourly' AND state <> 'done';
-- completing twice changes nothing
SELECT coord.complete(:j1, :t1) AS again, (SELECT count(*) FROM coord.job WHERE origin = 's:hourly') AS instances;

-- Changing the definition after a run does not run it again at once.
SELECT coord.schedule('hourly', 'ev', every => '1 hour', payload => '{"e": "hourly", "v": 2}') > 0 AS replaced;
SELECT run_at = (SELECT last_run_at + interval '1 hour' FROM coord.schedule_defs WHERE name = 'hourly')
         AS an_hour_after_the_last_run, payload
  FROM coord.jobs WHERE origin = 's:hourly' AND state <> 'done';

-- A failed instance is retried as the same job; a dead one is followed by the next.
SELECT coord.schedule('flaky', 'fl', every => '1 hour');
SELECT id AS f1, token AS ft1 FROM coord.claim('fl') \gset
SELECT coord.fail(:f1, :ft1, 'boom', retry_after => '0 seconds');
SELECT count(*) AS instances, min(id) = :f1 AS same_job FROM coord.job WHERE origin = 's:flaky';
SELECT id AS f2, token AS ft2 FROM coord.claim('fl') \gset
SELECT coord.cancel(:f2) AS cancelled;
SELECT last_state, next_run_at > now() + interval '59 minutes' AS next_in_an_hour FROM coord.schedules WHERE name = 'flaky';

-- Fixed rate: instances stay on the grid from starts_at.
SELECT date_trunc('hour', now()) - interval '5 hours' AS grid0 \gset
SELECT coord.schedule('rate', 'rt', every => '1 hour', starts_at => :'grid0', fixed_rate => true);
-- starts_at in the past: one run now, for the latest slot, not five
SELECT count(*) AS instances, min(run_at) = date_trunc('hour', now()) AS latest_slot
  FROM coord.job WHERE origin = 's:rate';
SELECT id AS r1, token AS rt1 FROM coord.claim('rt') \gset
SELECT coord.complete(:r1, :rt1);
SELECT run_at = date_trunc('hour', now()) + interval '1 hour' AS next_slot_on_grid
  FROM coord.job WHERE origin = 's:rate';

-- Fixed rate, missed slots collapse: a run longer than three slots is followed by one run, at once.
SELECT clock_timestamp() AS g0 \gset
SELECT coord.schedule('fast', 'fr', every => '100 milliseconds', starts_at => :'g0', fixed_rate => true);
SELECT id AS c1, token AS ct1 FROM coord.claim('fr') \gset
SELECT pg_sleep(0.45);
SELECT coord.complete(:c1, :ct1);
SELECT count(*) AS instances,
       bool_and(j.run_at <= h.finished_at AND j.run_at > h.finished_at - interval '100 milliseconds') AS latest_missed_slot,
       bool_and(extract(epoch FROM j.run_at - :'g0'::timestamptz) * 10
                = round(extract(epoch FROM j.run_at - :'g0'::timestamptz) * 10)) AS on_grid
  FROM coord.job j, coord.job_history h WHERE j.origin = 's:fast' AND h.id = :c1;
-- fixed delay, for comparison: the next run waits a whole interval after the finish
SELECT coord.schedule('slow', 'sd', every => '100 milliseconds');
SELECT id AS d1, token AS dt1 FROM coord.claim('sd') \gset
SELECT pg_sleep(0.25);
SELECT coord.complete(:d1, :dt1);
SELECT j.run_at - h.finished_at AS delay FROM coord.job j, coord.job_history h
 WHERE j.origin = 's:slow' AND h.id = :d1;

-- Unschedule while an instance runs: it finishes, and nothing follows it.
SELECT coord.schedule('once', 'on', every => '1 minute');
SELECT id AS u1, token AS ut1 FROM coord.claim('on') \gset
SELECT coord.unschedule('once') AS dropped, coord.unschedule('once') AS dropped_again;
SELECT coord.job_state(:u1) AS still_running;
SELECT coord.complete(:u1, :ut1) AS completed;
SELECT count(*) AS followers FROM coord.job WHERE origin = 's:once';
-- unscheduling an idle schedule removes its waiting instance
SELECT coord.schedule('idle', 'id', every => '1 day', starts_at => now() + interval '1 day');
SELECT coord.unschedule('idle');
SELECT count(*) AS left_behind FROM coord.job WHERE origin = 's:idle';

-- Replacing a definition replaces an unclaimed instance.
SELECT coord.schedule('moving', 'mv', every => '1 day', starts_at => '2031-01-01');
SELECT run_at FROM coord.job WHERE origin = 's:moving';
SELECT coord.schedule('moving', 'mv', every => '1 day', starts_at => '2032-01-01');
SELECT run_at, count(*) OVER () AS instances FROM coord.job WHERE origin = 's:moving';

-- Cron: the instance waits for the next fire time.
SELECT coord.schedule('fives', 'cr', cron => '*/5 * * * *');
SELECT run_at = coord.cron_next('*/5 * * * *', now() - interval '1 microsecond') AS next_fire,
       extract(minute FROM run_at)::int % 5 AS minute_mod_5, extract(second FROM run_at) AS second
  FROM coord.job WHERE origin = 's:fives';

-- coord.tick: repairs a schedule whose instance was removed by hand, once.
DELETE FROM coord.job WHERE origin = 's:hourly';
SELECT coord.tick(now()) >= 1 AS repaired;
SELECT count(*) AS instances FROM coord.job WHERE origin = 's:hourly';
SELECT coord.tick(now()) AS second_tick, (SELECT count(*) FROM coord.job WHERE origin = 's:hourly') AS instances;
-- a tick after a long downtime catches up without a backlog
SELECT coord.tick('2035-06-01') >= 0 AS ticked;
SELECT name, (SELECT count(*) FROM coord.job j WHERE j.origin = 's:' || s.name) AS instances
  FROM coord.schedule_defs s ORDER BY name;
SELECT last_tick_at, ticks > 0 AS counted FROM coord.tick_state;
-- tick kills a job whose last attempt's lease expired, by the real clock:
-- a tick with a simulated later time expires nothing early
SELECT coord.enqueue('lastlease', max_attempts => 1) AS ll \gset
SELECT count(*) FROM coord.claim('lastlease', lease => '1 second');
SELECT coord.tick(now() + interval '1 day') AS ticked_ahead;
SELECT coord.job_state(:ll) AS still_claimed;
SELECT pg_sleep(1.1);
SELECT coord.tick() >= 1 AS reaped;
SELECT coord.job_state(:ll), (SELECT last_error FROM coord.jobs WHERE id = :ll);

-- The cron table: next fire times in UTC.
SELECT expr, after, coord.cron_next(expr, after) AS next
  FROM (VALUES
    ('* * * * *',          '2026-03-01 10:15:30+00'::timestamptz),
    ('* * * * *',          '2026-03-01 10:15:00+00'),
    ('0 * * * *',          '2026-12-31 23:59:00+00'),
    ('*/15 * * * *',       '2026-03-01 10:46:00+00'),
    ('5,35 9-17 * * *',    '2026-03-01 17:36:00+00'),
    ('0 0 31 * *',         '2026-04-01 00:00:00+00'),
    ('0 0 31 * *',         '2026-01-31 00:00:00+00'),
    ('0 12 30 * *',        '2026-02-01 00:00:00+00'),
    ('0 0 29 2 *',         '2025-01-01 00:00:00+00'),
    ('0 0 29 2 *',         '2096-03-01 00:00:00+00'),
    ('0 0 1 * mon',        '2026-06-01 00:00:00+00'),
    ('0 0 13 * fri',       '2026-03-01 00:00:00+00'),
    ('0 0 * * 7',          '2026-03-02 00:00:00+00'),
    ('0 9 * * mon-fri',    '2026-03-06 09:00:00+00'),
    ('30 2 * jan,jul sun', '2026-02-01 00:00:00+00'),
    ('0 0 1-7 * */2',      '2026-03-01 00:00:00+00'),
    ('@hourly',            '2026-03-01 10:15:00+00'),
    ('@daily',             '2026-03-01 10:15:00+00'),
    ('@weekly',            '2026-03-01 10:15:00+00'),
    ('@monthly',           '2026-12-15 00:00:00+00'),
    ('@yearly',            '2026-03-01 00:00:00+00'),
    ('0 0 30 2 *',         '2026-01-01 00:00:00+00'),
    ('59 23 31 12 *',      '1999-12-31 23:59:00+00')
  ) AS t(expr, after);

-- Bad input: an error naming the field or the argument.
SELECT coord.cron_next('61 * * * *', now());
SELECT coord.cron_next('* 24 * * *', now());
SELECT coord.cron_next('* * 0 * *', now());
SELECT coord.cron_next('* * * 13 *', now());
SELECT coord.cron_next('* * * * 8', now());
SELECT coord.cron_next('*/0 * * * *', now());
SELECT coord.cron_next('5-1 * * * *', now());
SELECT coord.cron_next('* * * * funday', now());
SELECT coord.cron_next('* * * *', now());
SELECT coord.cron_next('@reboot', now());
SELECT coord.cron_next('', now());
SELECT coord.cron_next(NULL, now());
SELECT coord.schedule('x', 'q');
SELECT coord.schedule('x', 'q', every => '1 hour', cron => '* * * * *');
SELECT coord.schedule('x', 'q', every => '-1 hour');
SELECT coord.schedule('x', 'q', every => '1 millisecond');
SELECT coord.schedule('x', 'q', cron => '0 0 * * * *');
SELECT coord.schedule(NULL, 'q', every => '1 hour');
SELECT coord.schedule('', 'q', every => '1 hour');
SELECT coord.schedule('x', 'bad queue', every => '1 hour');
SELECT coord.schedule('x', 'q', every => '1 hour', payload => NULL);
SELECT coord.schedule('x', 'q', every => '1 hour', starts_at => 'infinity');
SELECT coord.schedule('x', 'q', every => '1 hour', fixed_rate => NULL);
SELECT coord.unschedule(NULL);
SELECT coord.tick(NULL);
SELECT coord.tick('infinity');
SELECT count(*) AS nothing_made FROM coord.schedule_defs WHERE name = 'x';

DELETE FROM coord.job WHERE origin LIKE 's:%';
DELETE FROM coord.schedule_defs;
