
-- ---------- partition groups (docs/partition-groups.md) ----------
-- A group divides segments 0 .. segments-1 among its live members in
-- proportion to their weights (src/partitions/partitions_assign.c).
-- Membership is session-bound: a member row counts while the backend it
-- names is alive, and the member also holds a session lock (namespace 17208)
-- on its name, so two sessions never join under one name.  A segment belongs
-- to the session its row names while that session is alive; it changes
-- hands only when that owner lets it go or is gone
-- (src/partitions/partitions.c).
CREATE TABLE coord.partition_groups (
    partition_group text PRIMARY KEY,
    segments        integer NOT NULL CHECK (segments BETWEEN 1 AND 65536),
    assignor        text NOT NULL CHECK (assignor IN ('sticky', 'range', 'rendezvous')),
    created_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    empty_since     timestamptz
);
COMMENT ON TABLE coord.partition_groups IS
  'Partition groups: their segment count and assignor, fixed at the first join';
COMMENT ON COLUMN coord.partition_groups.empty_since IS
  'When coord.tick found the group without a live member (NULL: it had one, or a member joined since); the tick deletes it coord.retention later';
REVOKE ALL ON coord.partition_groups FROM PUBLIC;

CREATE TABLE coord.partition_members (
    partition_group text NOT NULL REFERENCES coord.partition_groups ON DELETE CASCADE,
    member          text NOT NULL,
    weight          real NOT NULL CHECK (weight > 0),
    meta            jsonb NOT NULL,
    pid             integer NOT NULL,
    backend_start   timestamptz NOT NULL,
    joined_at       timestamptz NOT NULL,
    PRIMARY KEY (partition_group, member)
);
COMMENT ON TABLE coord.partition_members IS
  'Members of partition groups: a row counts while the backend (pid, backend_start) is alive; others are deleted lazily';
REVOKE ALL ON coord.partition_members FROM PUBLIC;

-- Every change of the members (joins, leaves, a dead member's row removed,
-- changes by hand, a group's deletion) invalidates what backends cache of
-- them at its commit: a settled member's coord.owned reads no row until then.
CREATE FUNCTION coord.partition_members_changed()
RETURNS trigger AS 'MODULE_PATHNAME', 'coord_partition_members_changed'
LANGUAGE C;
COMMENT ON FUNCTION coord.partition_members_changed() IS
  'Trigger of coord.partition_members: at commit, backends read the members of partition groups again';
REVOKE ALL ON FUNCTION coord.partition_members_changed() FROM PUBLIC;
CREATE TRIGGER partition_members_changed
  AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON coord.partition_members
  FOR EACH STATEMENT EXECUTE FUNCTION coord.partition_members_changed();
COMMENT ON TRIGGER partition_members_changed ON coord.partition_members IS
  'Invalidates the backends'' cache of partition group members at commit';

CREATE TABLE coord.partition_segments (
    partition_group text NOT NULL REFERENCES coord.partition_groups ON DELETE CASCADE,
    segment         integer NOT NULL,
    owner_pid       integer,
    owner_start     timestamptz,
    token           bigint NOT NULL,
    taken_at        timestamptz NOT NULL,
    PRIMARY KEY (partition_group, segment)
);
COMMENT ON TABLE coord.partition_segments IS
  'Segment owners: a segment is its owner''s while that backend is alive; every acquisition takes a new, larger token (a fencing token)';
REVOKE ALL ON coord.partition_segments FROM PUBLIC;

-- Segment tokens come from a sequence, which a rollback does not turn back:
-- a token an aborted acquisition handed out is never handed out again.
CREATE SEQUENCE coord.segment_token_seq AS bigint;
COMMENT ON SEQUENCE coord.segment_token_seq IS 'Source of the fencing tokens of every partition segment';
REVOKE ALL ON coord.segment_token_seq FROM PUBLIC;

CREATE FUNCTION coord.join(partition_group text, member text, weight double precision DEFAULT 1,
                           meta jsonb DEFAULT '{}', segments integer DEFAULT NULL,
                           assignor text DEFAULT NULL)
RETURNS integer[] AS 'MODULE_PATHNAME', 'coord_join'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.join(text, text, double precision, jsonb, integer, text) IS
  'Joins a partition group as member (or updates this session''s weight, stored as real, and meta); returns the segments this session owns now. segments (1024) and assignor (sticky) fix the group at its first join; NULL keeps the group''s';

CREATE FUNCTION coord.leave(partition_group text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_leave'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.leave(text) IS
  'Leaves a partition group and gives this session''s segments up now; false when it was no member';

CREATE FUNCTION coord.drop_group(partition_group text)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_drop_group'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.drop_group(text) IS
  'Deletes a partition group and its segments now (coord.tick deletes one without members after coord.retention); false when there is none; ERROR while it has a live member';

CREATE FUNCTION coord.owned(partition_group text)
RETURNS integer[] AS 'MODULE_PATHNAME', 'coord_owned'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION coord.owned(text) IS
  'The segments this session owns now, after taking any that became free and letting go of any that moved away';

CREATE FUNCTION coord.segment_of(partition_group text, key text)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_segment_of'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.segment_of(text, text) IS
  'The segment of a key in a partition group: coord.job_part(key, NULL) modulo the group''s segments';

-- Keys of other types hash as their text, the key a job of theirs would
-- have: segment_of(g, 42) = segment_of(g, '42').  An untyped literal still
-- picks text; integer and smallint keys resolve to bigint.
CREATE FUNCTION coord.segment_of(partition_group text, key bigint)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_segment_of_int8'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.segment_of(text, bigint) IS
  'The segment of an integer key in a partition group: that of its text, coord.segment_of(partition_group, key::text)';

CREATE FUNCTION coord.segment_of(partition_group text, key uuid)
RETURNS integer AS 'MODULE_PATHNAME', 'coord_segment_of_uuid'
LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.segment_of(text, uuid) IS
  'The segment of a uuid key in a partition group: that of its text, coord.segment_of(partition_group, key::text)';

CREATE FUNCTION coord.segment_token(partition_group text, segment integer)
RETURNS bigint AS 'MODULE_PATHNAME', 'coord_segment_token'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.segment_token(text, integer) IS
  'The fencing token this session got when it took segment; NULL when it does not own it';

CREATE FUNCTION coord.member_alive(partition_group text, member text, pid integer, backend_start timestamptz)
RETURNS boolean AS 'MODULE_PATHNAME', 'coord_member_alive'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION coord.member_alive(text, text, integer, timestamptz) IS
  'Does the member row (partition_group, member, pid, backend_start) count: while that session holds its member lock in this database';

CREATE VIEW coord.members AS
SELECT m.partition_group, m.member, m.weight, m.meta, m.alive, m.pid, m.joined_at,
       CASE WHEN m.alive THEN m.owned ELSE 0 END AS owned,
       CASE WHEN m.alive THEN m.weight::pg_catalog.float8 OPERATOR(pg_catalog./)
            pg_catalog.sum(m.weight::pg_catalog.float8) FILTER (WHERE m.alive)
              OVER (PARTITION BY m.partition_group) END AS target_share,
       CASE WHEN m.alive THEN m.owned ELSE 0 END::pg_catalog.float8 OPERATOR(pg_catalog./)
         g.segments::pg_catalog.float8 AS owned_share
  FROM (SELECT p.*, coord.member_alive(p.partition_group, p.member, p.pid, p.backend_start) AS alive,
               (SELECT pg_catalog.count(*)::integer FROM coord.partition_segments AS s
                 WHERE s.partition_group OPERATOR(pg_catalog.=) p.partition_group
                   AND s.owner_pid OPERATOR(pg_catalog.=) p.pid
                   AND s.owner_start OPERATOR(pg_catalog.=) p.backend_start) AS owned
          FROM coord.partition_members AS p) AS m
  JOIN coord.partition_groups AS g ON g.partition_group OPERATOR(pg_catalog.=) m.partition_group;
COMMENT ON VIEW coord.members IS
  'Members of partition groups: weight, meta, liveness, segments owned, target share (of the live weight) and owned share';

-- Groups and segment rows are dumped: a restored group keeps its segment
-- count, and its tokens stay larger than any issued before.  Members and
-- owners are sessions: after a restore no owner is alive.
SELECT pg_catalog.pg_extension_config_dump('coord.partition_groups', '');
SELECT pg_catalog.pg_extension_config_dump('coord.partition_segments', '');
SELECT pg_catalog.pg_extension_config_dump('coord.segment_token_seq', '');
