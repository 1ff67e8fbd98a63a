-- Alerts of app runs, statement by statement (each its own transaction):
-- a run that died raises a dead alert; coord.retry of its job and a
-- completion clear it in the completing transaction.  A retried dead run
-- is not watched for its deadline again: its dead alert stays open until it
-- is done, and no deadline alert joins it.  The rest is
-- test/pgtap/alerts.sql and test/specs/iso_apps_alerts.spec.
SET TimeZone = 'UTC';
SELECT coord.define_app('ra-d', 'daily', queue => 'ra-q', catchup_from => '2024-03-01Z', deadline => '1 hour');
SELECT coord.tick('2024-03-01 01:00Z');
UPDATE coord.job SET max_attempts = 1 WHERE origin = 'a:ra-d:2024-03-01-0000';
SELECT coord.fail(c.id, c.token, 'boom') FROM coord.claim('ra-q', 1, '1 hour') AS c;
SELECT kind, cleared_at IS NULL AS open, detail, events FROM coord.alerts ORDER BY kind;
SELECT coord.retry((SELECT job_id FROM coord.app_runs WHERE app = 'ra-d'));
-- past its deadline while it waits again: still only the dead alert
SELECT coord.tick('2024-03-02 01:30Z');
SELECT kind, period_start, raised_at > now() - interval '1 hour' AS raised_now, cleared_at IS NULL AS open FROM coord.alerts ORDER BY period_start, kind;
SELECT g FROM coord.grid('2024-03-01Z', '2024-03-03Z', ARRAY['ra-d']) AS g WHERE g LIKE 'ra-d%';
SELECT coord.complete(c.id, c.token) FROM coord.claim('ra-q', 1, '1 hour') AS c WHERE c.key = '2024-03-01-0000-ra-d';
SELECT kind, period_start, cleared_at IS NULL AS open FROM coord.alerts ORDER BY period_start, kind;
SELECT g FROM coord.grid('2024-03-01Z', '2024-03-03Z', ARRAY['ra-d']) AS g WHERE g LIKE 'ra-d%';
SELECT coord.drop_app('ra-d');
SELECT count(*) AS alerts_left FROM coord.app_alerts;
DELETE FROM coord.job WHERE queue = 'ra-q';
