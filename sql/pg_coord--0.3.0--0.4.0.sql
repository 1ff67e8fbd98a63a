-- pg_coord 0.3.0 -> 0.4.0: written by hand.  Every change to the catalog
-- after the 0.3.0 release goes here and into the fragments under sql/parts/
-- (which build the 0.4.0 install script); test/upgrade/upgrade_and_dump.sh
-- checks that an updated catalog matches a fresh 0.4.0 install object for
-- object.  Frozen once 0.4.0 is released.

\echo Use "ALTER EXTENSION pg_coord UPDATE TO '0.4.0'" to load this file. \quit

-- No catalog change yet: the update only moves the version, which the
-- 0.4.0 library checks before it serves a database.
