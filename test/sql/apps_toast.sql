-- An app whose conf is stored out of line (TOAST) or compressed: the budget
-- for upstream results in a run's payload is taken from the conf's real
-- size (CheckUpstreams), so the upstream results are in the payload, with
-- no "left out" WARNING, whatever the conf's storage.
\set VERBOSITY terse
SET client_min_messages = warning;
-- incompressible text of about 40 kB: stored out of line, uncompressed
CREATE TEMP TABLE big AS
  SELECT string_agg(md5(g::text), '') AS s FROM generate_series(1, 1250) AS g;
SELECT coord.define_app('toast_up', 'hourly', queue => 'qtu', catchup_from => '2024-03-01Z');
SELECT coord.define_app('toast_down', NULL, '{"toast_up": "hourly"}', queue => 'qtd',
                        catchup_from => '2024-03-01Z',
                        conf => jsonb_build_object('blob', (SELECT s FROM big)));
-- compressible conf of about 50 kB: compressed inline
SELECT coord.define_app('toast_down2', NULL, '{"toast_up": "hourly"}', queue => 'qtd2',
                        catchup_from => '2024-03-01Z',
                        conf => jsonb_build_object('blob', repeat('x', 50000)));
-- a tiny conf: a short varlena in the table
SELECT coord.define_app('toast_down3', NULL, '{"toast_up": "hourly"}', queue => 'qtd3',
                        catchup_from => '2024-03-01Z', conf => '{"k": 1}');
-- how each conf is stored: compressed or not, and its stored size
SELECT name, pg_column_size(conf) < octet_length(conf::text) AS smaller_than_text,
       pg_column_compression(conf) IS NOT NULL AS compressed
  FROM coord.app_defs WHERE name LIKE 'toast_down%' ORDER BY name;
SELECT coord.tick('2024-03-01 00:30Z');
SELECT count(*) AS upstream_done FROM coord.claim('qtu', 10) AS c
 WHERE coord.complete(c.id, c.token, '{"rows": 42}');
-- the downstream runs are created by the upstream's finish, with no WARNING:
-- every payload has the upstream results
SELECT j.queue, j.payload->'upstream' AS upstream,
       length(j.payload->'conf'->>'blob') AS blob_length
  FROM coord.job AS j WHERE j.queue IN ('qtd', 'qtd2', 'qtd3') ORDER BY j.queue;
SELECT coord.drop_app(a) FROM unnest(ARRAY['toast_down', 'toast_down2', 'toast_down3', 'toast_up']) AS a;
