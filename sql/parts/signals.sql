
-- ---------- signals: external inputs of apps (docs/apps.md) ----------
-- A dependency written "@name": "<grain>" in coord.define_app's depends is
-- met, for each period of that grain, by a row of coord.app_signals whose
-- period_start lies in it (src/apps/apps.c, section "signals").
CREATE TABLE coord.app_signals (
    name         text NOT NULL,
    period_start timestamptz NOT NULL,
    payload      jsonb NOT NULL,
    signalled_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    signalled_by text NOT NULL,
    PRIMARY KEY (name, period_start)
);
COMMENT ON TABLE coord.app_signals IS
  'External inputs: one row per (signal, period_start) given to coord.signal, kept for the apps that depend on "@name"';
COMMENT ON COLUMN coord.app_signals.signalled_by IS 'The role that called coord.signal';
REVOKE ALL ON coord.app_signals FROM PUBLIC;

CREATE FUNCTION coord.signal(name text, period_start timestamptz, payload jsonb DEFAULT '{}')
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_signal'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.signal(text, timestamptz, jsonb) IS
  'An external input for the period containing period_start: meets the dependencies written "@name" and creates the runs it completes, in this transaction; false if already signalled';

CREATE VIEW coord.signals AS
SELECT s.name, s.period_start, s.signalled_at, s.signalled_by, s.payload,
       ARRAY(SELECT d.name FROM coord.app_defs AS d
              WHERE d.depends OPERATOR(pg_catalog.?) ('@' OPERATOR(pg_catalog.||) s.name)
              ORDER BY d.name COLLATE pg_catalog."C") AS apps
  FROM coord.app_signals AS s;
COMMENT ON VIEW coord.signals IS
  'Signals given to coord.signal, with the apps that depend on each (written "@name" in their depends)';
-- users' state: dumped (sql/parts/dump.sql explains)
SELECT pg_catalog.pg_extension_config_dump('coord.app_signals', '');
