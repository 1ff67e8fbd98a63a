
-- ---------- pg_dump ----------
-- Tables and sequences that hold users' state are extension configuration:
-- pg_dump dumps their contents, so a dump and restore keeps queues, history,
-- requests, fences, schedules and apps (the sequences too, so that fencing
-- tokens and claim tokens stay larger than any issued before).  Locks and
-- session-bound claims live in the lock manager and end with their
-- sessions, as they would at a restart.  coord.tick_state is left out: its
-- one row comes with CREATE EXTENSION.
SELECT pg_catalog.pg_extension_config_dump('coord.job', '');
SELECT pg_catalog.pg_extension_config_dump('coord.job_history', '');
SELECT pg_catalog.pg_extension_config_dump('coord.job_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('coord.job_token_seq', '');
SELECT pg_catalog.pg_extension_config_dump('coord.fences', '');
SELECT pg_catalog.pg_extension_config_dump('coord.fence_seq', '');
SELECT pg_catalog.pg_extension_config_dump('coord.lock_names', '');
SELECT pg_catalog.pg_extension_config_dump('coord.request_keys', '');
SELECT pg_catalog.pg_extension_config_dump('coord.schedule_defs', '');
SELECT pg_catalog.pg_extension_config_dump('coord.app_defs', '');
SELECT pg_catalog.pg_extension_config_dump('coord.app_runs', '');
-- Flow control: limits and pauses are dumped; buckets and
-- running claims (sessions and leases of the old cluster) are not.
SELECT pg_catalog.pg_extension_config_dump('coord.job_limit', '');
SELECT pg_catalog.pg_extension_config_dump('coord.job_pause', '');
SELECT pg_catalog.pg_extension_config_dump('coord.app_run_history', '');
SELECT pg_catalog.pg_extension_config_dump('coord.app_reruns', '');
SELECT pg_catalog.pg_extension_config_dump('coord.app_alerts', '');
