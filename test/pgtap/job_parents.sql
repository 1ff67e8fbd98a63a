-- pgTAP: coord.job_parents (issue 29, the dashboard's job page): a waiting
-- job's parents, ids only, readable by coord_monitor and coord_admin (not
-- by coord_worker or PUBLIC), while coord.job_dep stays the owner's; a
-- parent's end sets ended, the child's end removes its rows.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(12);

SELECT has_view('coord', 'job_parents', 'coord.job_parents exists');
SELECT columns_are('coord', 'job_parents', ARRAY['job_id', 'parent', 'ended'], 'its columns');
SELECT ok(has_table_privilege('coord_monitor', 'coord.job_parents', 'SELECT'), 'coord_monitor reads it');
SELECT ok(has_table_privilege('coord_admin', 'coord.job_parents', 'SELECT'), 'coord_admin reads it');
SELECT ok(NOT has_table_privilege('coord_worker', 'coord.job_parents', 'SELECT'), 'coord_worker does not');
SELECT ok(NOT has_table_privilege('coord_monitor', 'coord.job_dep', 'SELECT'), 'coord.job_dep stays the owner''s');

SELECT coord.enqueue('jp', '{}') AS p1 \gset
SELECT coord.enqueue('jp', '{}') AS p2 \gset
SELECT coord.enqueue('jp_child', '{}', after => ARRAY[:p1, :p2]::bigint[]) AS c \gset
SELECT results_eq(format('SELECT parent, ended FROM coord.job_parents WHERE job_id = %s ORDER BY parent', :c),
                  format('VALUES (%s::bigint, false), (%s::bigint, false)', :p1, :p2),
                  'a waiting job has a row per parent');

CREATE ROLE jp_mon IN ROLE coord_monitor;
SET LOCAL ROLE jp_mon;
SELECT is((SELECT count(*)::int FROM coord.job_parents WHERE job_id = :c), 2, 'a coord_monitor role sees them');
RESET ROLE;

SELECT coord.complete(id, token) FROM coord.claim('jp') WHERE id = :p1;
SELECT coord.complete(id, token) FROM coord.claim('jp') WHERE id = :p2;
SELECT is((SELECT count(*)::int FROM coord.job_parents WHERE job_id = :c AND ended), 2,
          'each parent''s end sets ended');
SELECT is(coord.job_state(:c), 'ready', 'the child is ready once both ended');
SELECT coord.complete(id, token) FROM coord.claim('jp_child');
SELECT is(coord.job_state(:c), 'done', 'the child finished');
SELECT is((SELECT count(*)::int FROM coord.job_parents WHERE job_id = :c), 0, 'and its rows are gone');

SELECT * FROM finish();
ROLLBACK;
