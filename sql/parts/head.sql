/* pg_coord install script: built by the Makefile from sql/parts/head.sql and one
 * fragment per concern.  Plain CREATE throughout, everything
 * schema-qualified, built-ins from pg_catalog. */

\echo Use "CREATE EXTENSION pg_coord" to load this file. \quit

-- Fails if a schema coord already exists, so nobody else's objects are adopted.
CREATE SCHEMA coord;
COMMENT ON SCHEMA coord IS 'pg_coord: locks, requests, jobs, schedules and apps for worker fleets';
REVOKE ALL ON SCHEMA coord FROM PUBLIC;
GRANT USAGE ON SCHEMA coord TO PUBLIC;
