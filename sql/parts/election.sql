
-------------------------------------------------------------------------------
-- Leader election (src/election.c)
-------------------------------------------------------------------------------

-- Terms of every election come from one sequence: a term is never handed
-- out twice, not even one of a campaign that rolled back.
CREATE SEQUENCE coord.election_term_seq AS bigint;
COMMENT ON SEQUENCE coord.election_term_seq IS 'Source of the terms of every election';
REVOKE ALL ON coord.election_term_seq FROM PUBLIC;

-- One row per election: its newest committed term and that term's leader
-- (pid and backend_start are NULL once the leader resigned).  Whether the
-- leader still leads is the lock manager's to say: coord.leader.
CREATE TABLE coord.elections (
    election      text PRIMARY KEY,
    term          bigint NOT NULL,
    value         text,
    pid           integer,
    backend_start timestamptz,
    since         timestamptz NOT NULL
);
COMMENT ON TABLE coord.elections IS
  'Newest term of each election, with its leader''s value, pid, backend start and since';
REVOKE ALL ON coord.elections FROM PUBLIC;

CREATE FUNCTION coord.campaign(election text, value text DEFAULT NULL, timeout interval DEFAULT NULL)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_campaign'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.campaign(text, text, interval) IS
  'Waits (first come, first served) until this session leads the election; returns its term, larger than every earlier one and durable at commit; NULL on timeout';

CREATE FUNCTION coord.leader(election text,
    OUT value text, OUT pid integer, OUT since timestamptz, OUT term bigint)
RETURNS SETOF record AS 'MODULE_PATHNAME', 'coord_leader'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION coord.leader(text) IS
  'The live leader of an election (value, pid, since, term), or no row; never a leader whose session ended';

CREATE FUNCTION coord.resign(election text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_resign'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.resign(text) IS
  'Gives up leading the election when this transaction commits; false if this session does not lead it';

CREATE FUNCTION coord.drop_election(election text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_drop_election'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.drop_election(text) IS
  'Deletes an election''s row now (coord.tick deletes one without a leader after coord.retention); the next campaign gets a larger term all the same; false when there is none; ERROR while a session leads it';

-- Terms survive a dump and restore, so they keep growing.
SELECT pg_catalog.pg_extension_config_dump('coord.elections', '');
SELECT pg_catalog.pg_extension_config_dump('coord.election_term_seq', '');
