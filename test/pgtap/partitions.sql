-- pgTAP: partition groups' surface (DESIGN.md 3.7), behaviour in one
-- session, and every error with its SQLSTATE.  Handoff between sessions is
-- in test/specs/iso_partitions.spec, crashes in test/crash/partitions_kill.sh.
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
SET client_min_messages = warning;
BEGIN;
SELECT plan(156);

SELECT function_returns('coord', 'join', ARRAY['text', 'text', 'double precision', 'jsonb', 'integer', 'text'], 'integer[]');
SELECT function_returns('coord', 'leave', ARRAY['text'], 'boolean');
SELECT function_returns('coord', 'owned', ARRAY['text'], 'integer[]');
SELECT function_returns('coord', 'segment_of', ARRAY['text', 'text'], 'integer');
SELECT function_returns('coord', 'segment_of', ARRAY['text', 'bigint'], 'integer');
SELECT function_returns('coord', 'segment_of', ARRAY['text', 'uuid'], 'integer');
SELECT function_returns('coord', 'segment_token', ARRAY['text', 'integer'], 'bigint');
SELECT has_view('coord', 'members', 'view coord.members');
SELECT columns_are('coord', 'members', ARRAY['partition_group', 'member', 'weight', 'meta', 'alive', 'pid',
       'joined_at', 'owned', 'target_share', 'owned_share']);
SELECT is((SELECT proparallel FROM pg_proc WHERE oid = 'coord.join(text,text,float8,jsonb,integer,text)'::regprocedure),
          'u', 'coord.join is parallel unsafe');
SELECT is((SELECT proparallel FROM pg_proc WHERE oid = 'coord.owned(text)'::regprocedure),
          'u', 'coord.owned is parallel unsafe');
SELECT is((SELECT pg_get_function_arguments('coord.join(text,text,float8,jsonb,integer,text)'::regprocedure)),
          'partition_group text, member text, weight double precision DEFAULT 1, meta jsonb DEFAULT ''{}''::jsonb, segments integer DEFAULT NULL::integer, assignor text DEFAULT NULL::text',
          'coord.join''s arguments and defaults');

-- one member owns every segment
SELECT is(cardinality(coord.join('tap/g', 'm1')), 1024, 'the first member of a default group owns its 1024 segments');
SELECT is((SELECT segments FROM coord.partition_groups WHERE partition_group = 'tap/g'), 1024, 'segments default to 1024');
SELECT is((SELECT assignor FROM coord.partition_groups WHERE partition_group = 'tap/g'), 'sticky', 'assignor defaults to sticky');
SELECT is(coord.owned('tap/g'), (SELECT array_agg(s ORDER BY s) FROM generate_series(0, 1023) AS s), 'owned: all, ascending');
CREATE TEMP TABLE tok0 AS SELECT coord.segment_token('tap/g', 0) AS t;
SELECT ok((SELECT t FROM tok0) > 0, 'the first acquisition gets a token');
SELECT is(coord.segment_of('tap/g', 'hello'), coord.job_part('hello', NULL) % 1024, 'segment_of is job_part modulo segments');
SELECT is(coord.segment_of('tap/g', 'hello'), coord.segment_of('tap/g', 'hello'), 'segment_of is stable');
SELECT is(coord.segment_of('tap/g', 42::bigint), coord.segment_of('tap/g', '42'), 'segment_of of a bigint: that of its text');
SELECT is(coord.segment_of('tap/g', -9223372036854775808), coord.segment_of('tap/g', '-9223372036854775808'),
          'segment_of of the smallest bigint: that of its text');
SELECT is(coord.segment_of('tap/g', 7), coord.segment_of('tap/g', '7'), 'segment_of of an integer: that of its text');
SELECT is(coord.segment_of('tap/g', 7::smallint), coord.segment_of('tap/g', '7'), 'segment_of of a smallint: that of its text');
SELECT is(coord.segment_of('tap/g', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid),
          coord.segment_of('tap/g', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'), 'segment_of of a uuid: that of its text');
SELECT is(coord.segment_of('tap/g', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid),
          coord.segment_of('tap/g', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'), 'segment_of of a uuid: of its canonical text');
SELECT is(coord.segment_of('tap/g', '0042'), coord.job_part('0042', NULL) % 1024, 'an untyped literal is a text key');
SELECT is(coord.segment_of('tap/g', 42), coord.job_part('42', NULL) % 1024,
          'segment_of of a number is the segment of a job with that key');
SELECT results_eq($$SELECT member, weight, meta, alive, pid, owned, target_share, owned_share FROM coord.members
                    WHERE partition_group = 'tap/g'$$,
                  $$VALUES ('m1'::text, 1::real, '{}'::jsonb, true, pg_backend_pid(), 1024, 1::float8, 1::float8)$$,
                  'coord.members shows the member');

-- a rejoin updates weight and meta, keeps the segments
SELECT is(cardinality(coord.join('tap/g', 'm1', 2.5, '{"host": "a"}')), 1024, 'a rejoin keeps the segments');
SELECT results_eq($$SELECT weight, meta FROM coord.members WHERE partition_group = 'tap/g'$$,
                  $$VALUES (2.5::real, '{"host": "a"}'::jsonb)$$, 'a rejoin updates weight and meta');
SELECT is(cardinality(coord.join('tap/g', 'm1', weight => 2.5::float8)), 1024, 'a double precision weight');
SELECT is(cardinality(coord.join('tap/g', 'm1', weight => 2)), 1024, 'an integer weight');
SELECT is(cardinality(coord.join('tap/g', 'm1', weight => 3::bigint)), 1024, 'a bigint weight');
SELECT is(cardinality(coord.join('tap/g', 'm1', weight => 2.5::real, meta => '{"host": "a"}')), 1024, 'a real weight');
SELECT results_eq($$SELECT weight, meta FROM coord.members WHERE partition_group = 'tap/g'$$,
                  $$VALUES (2.5::real, '{"host": "a"}'::jsonb)$$, 'the weight is stored as real');
SELECT is(coord.segment_token('tap/g', 0), (SELECT t FROM tok0), 'a rejoin takes nothing again: same token');
SELECT is(cardinality(coord.join('tap/g', 'm1', segments => 1024, assignor => 'sticky')), 1024,
          'a rejoin may repeat the group''s segments and assignor');

-- errors of join
SELECT throws_ok($$SELECT coord.join('tap/g', 'm1', segments => 512)$$, '22023', NULL, 'other segments than the group''s');
SELECT throws_ok($$SELECT coord.join('tap/g', 'm1', assignor => 'range')$$, '22023', NULL, 'another assignor than the group''s');
SELECT throws_ok($$SELECT coord.join('tap/g', 'm2')$$, '22023', NULL, 'a second name in the same session');
SELECT throws_ok($$SELECT coord.join(NULL, 'm')$$, '22004', NULL, 'NULL group');
SELECT throws_ok($$SELECT coord.join('tap/h', NULL)$$, '22004', NULL, 'NULL member');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', NULL)$$, '22004', NULL, 'NULL weight');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', 1, NULL)$$, '22004', NULL, 'NULL meta');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', 0)$$, '22023', NULL, 'weight 0');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', -1)$$, '22023', NULL, 'negative weight');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', 'NaN')$$, '22023', NULL, 'NaN weight');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', 'Infinity')$$, '22023', NULL, 'infinite weight');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', '-Infinity'::float8)$$, '22023', NULL, 'negative infinite weight');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', 1e39::float8)$$, '22003', 'weight is out of range for type real',
                 'a weight above real''s range');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', 1e-50::float8)$$, '22003', 'weight is out of range for type real',
                 'a positive weight below real''s range');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', 1e39)$$, '22003', NULL, 'a numeric weight above real''s range');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', segments => 0)$$, '22023', NULL, '0 segments');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', segments => 65537)$$, '22023', NULL, '65537 segments');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', assignor => 'random')$$, '22023', NULL, 'unknown assignor');
SELECT throws_ok($$SELECT coord.join('tap/h', 'm', meta => jsonb_build_object('x', repeat('x', 9000)))$$,
                 '54000', NULL, 'meta too large');
SELECT throws_ok($$SELECT coord.join('', 'm')$$, '22023', NULL, 'empty group name');
SELECT throws_ok($$SELECT coord.join('tap/h', 'a b')$$, '22023', NULL, 'invalid member name');
SELECT is((SELECT count(*) FROM coord.partition_groups WHERE partition_group = 'tap/h'), 0::bigint,
          'a failed first join creates no group');

-- other functions' errors
SELECT throws_ok($$SELECT coord.owned('tap/none')$$, '42704', NULL, 'owned: unknown group');
SELECT throws_ok($$SELECT coord.segment_of('tap/none', 'k')$$, '42704', NULL, 'segment_of: unknown group');
SELECT throws_ok($$SELECT coord.segment_token('tap/none', 0)$$, '42704', NULL, 'segment_token: unknown group');
SELECT throws_ok($$SELECT coord.owned(NULL)$$, '22004', NULL, 'owned: NULL group');
SELECT throws_ok($$SELECT coord.leave(NULL)$$, '22004', NULL, 'leave: NULL group');
SELECT throws_ok($$SELECT coord.segment_of('tap/g', NULL)$$, '22004', NULL, 'segment_of: NULL key');
SELECT throws_ok($$SELECT coord.segment_of('tap/g', NULL::bigint)$$, '22004', NULL, 'segment_of: NULL bigint key');
SELECT throws_ok($$SELECT coord.segment_of('tap/g', NULL::uuid)$$, '22004', NULL, 'segment_of: NULL uuid key');
SELECT throws_ok($$SELECT coord.segment_of('tap/none', 1)$$, '42704', NULL, 'segment_of, bigint key: unknown group');
SELECT throws_ok($$SELECT coord.segment_of(NULL, gen_random_uuid())$$, '22004', NULL, 'segment_of, uuid key: NULL group');
SELECT throws_ok($$SELECT coord.segment_of('tap/g', 1.5)$$, '42883', NULL, 'segment_of: no numeric key');
SELECT throws_ok($$SELECT coord.segment_token('tap/g', NULL)$$, '22004', NULL, 'segment_token: NULL segment');
SELECT throws_ok($$SELECT coord.segment_token('tap/g', 1024)$$, '22023', NULL, 'segment_token: segment out of range');
SELECT throws_ok($$SELECT coord.segment_token('tap/g', -1)$$, '22023', NULL, 'segment_token: negative segment');

-- a savepoint rolled back undoes its takes, and the session knows it
SAVEPOINT sp;
SELECT is(coord.leave('tap/g'), true, 'leave: true for a member');
ROLLBACK TO SAVEPOINT sp;
SELECT is(cardinality(coord.owned('tap/g')), 1024, 'a rolled-back leave leaves the segments owned');

-- leave
SELECT is(coord.leave('tap/g'), true, 'leave: true');
SELECT is(coord.leave('tap/g'), false, 'leave again: false');
SELECT is(coord.owned('tap/g'), '{}'::integer[], 'no member owns nothing');
SELECT is(coord.segment_token('tap/g', 0), NULL::bigint, 'segment_token: NULL for a segment not owned');
SELECT is((SELECT count(*) FROM coord.members WHERE partition_group = 'tap/g'), 0::bigint, 'the member is gone');
SELECT is(cardinality(coord.join('tap/g', 'm2')), 1024, 'after leave, another name');
SELECT ok(coord.segment_token('tap/g', 0) > (SELECT t FROM tok0), 'the second acquisition''s token is larger');

-- a token handed out by an acquisition that rolled back is never handed out
-- again (a zombie may have used it downstream)
CREATE FUNCTION pg_temp.token_after_rollback() RETURNS boolean LANGUAGE plpgsql AS $f$
DECLARE
  t1 bigint;
  t2 bigint;
BEGIN
  BEGIN
    PERFORM coord.join('tap/rb', 'x');
    t1 := coord.segment_token('tap/rb', 0);
    RAISE EXCEPTION 'undo';
  EXCEPTION WHEN raise_exception THEN
    NULL;
  END;
  PERFORM coord.join('tap/rb', 'x');
  t2 := coord.segment_token('tap/rb', 0);
  RETURN t2 > t1;
END
$f$;
SELECT ok(pg_temp.token_after_rollback(), 'a rolled-back acquisition''s token is not issued again');

-- range: contiguous slices
SELECT is(coord.join('tap/r', 'a', 1, '{}', 8, 'range'), '{0,1,2,3,4,5,6,7}'::integer[], 'range, one member: all');
SELECT is(coord.segment_of('tap/r', 'hello'), coord.job_part('hello', NULL) % 8, 'segment_of with 8 segments');
SELECT ok(coord.leave('tap/r'), 'leave the range group');

-- coord.claim(..., partition_group)
SELECT is((SELECT pg_get_function_arguments('coord.claim(text,integer,interval,text,boolean,integer,integer,text)'::regprocedure)),
          'queue text, n integer DEFAULT 1, lease interval DEFAULT ''00:05:00''::interval, host text DEFAULT NULL::text, session_bound boolean DEFAULT false, partition integer DEFAULT NULL::integer, partitions integer DEFAULT NULL::integer, partition_group text DEFAULT NULL::text',
          'coord.claim takes partition_group last, DEFAULT NULL');
SELECT throws_ok($$SELECT * FROM coord.claim('tap/pq', partition_group => 'tap/none')$$, '42704', NULL, 'claim: unknown group');
SELECT throws_ok($$SELECT * FROM coord.claim('tap/pq', partition_group => 'tap/r')$$, '55000', NULL, 'claim: no member of the group');
SELECT throws_ok($$SELECT * FROM coord.claim('tap/pq', partition_group => 'a b')$$, '22023', NULL, 'claim: invalid group name');
SELECT throws_ok($$SELECT * FROM coord.claim('tap/pq', "partition" => 0, partitions => 2, partition_group => 'tap/g')$$,
                 '22023', NULL, 'claim: partition_group with partition and partitions');
SELECT is(cardinality(coord.join('tap/c', 'a', segments => 4, assignor => 'range')), 4, 'a claim group of 4 segments');
SELECT is((SELECT count(*) FROM (SELECT coord.enqueue('tap/pq', jsonb_build_object('n', n), key => 'k' || n)
                                   FROM generate_series(1, 40) AS n) AS e), 40::bigint, '40 jobs');
SELECT is((SELECT count(*) FROM coord.claim('tap/pq', 10, partition_group => 'tap/c') AS c
            WHERE coord.segment_of('tap/c', c.key) = ANY (coord.owned('tap/c'))), 10::bigint,
          'a group claim returns jobs of owned segments');
SELECT is((SELECT count(*) FROM coord.claim('tap/pq', 10) AS c), 10::bigint, 'a plain claim still works');
SELECT is((SELECT count(*) FROM coord.claim('tap/pq', 10, '1 minute', NULL, false, NULL, NULL, 'tap/c')), 10::bigint,
          'positional partition_group');
SELECT ok(coord.leave('tap/c'), 'leave the claim group');
SELECT throws_ok($$SELECT * FROM coord.claim('tap/pq', partition_group => 'tap/c')$$, '55000', NULL,
                 'claim: no member after leave');
SELECT is((SELECT count(*) FROM coord.claim('tap/pq', 0, partition_group => 'tap/c')), 0::bigint,
          'n = 0 asks the group nothing');

-- a member whose lock went behind pg_coord's back (pg_advisory_unlock_all;
-- DISCARD ALL, a pooler's reset query, does the same) is no member any more:
-- its next call says so once (55000), then it is a non-member that owns
-- nothing; coord.members shows its row as not alive
SELECT is(cardinality(coord.join('tap/lost', 'x', segments => 8)), 8, 'lost lock: joined, owns all');
SELECT pg_advisory_unlock_all();
SELECT throws_ok($$SELECT coord.owned('tap/lost')$$, '55000', 'this session lost its membership "x" of partition group "tap/lost"',
                 'lost lock: the next call says the membership is lost');
SELECT is(coord.owned('tap/lost'), '{}'::integer[], 'lost lock: then owns nothing');
SELECT is(coord.segment_token('tap/lost', 0), NULL, 'lost lock: no token');
SELECT is((SELECT alive FROM coord.members WHERE partition_group = 'tap/lost'), false,
          'lost lock: coord.members shows it not alive');
SELECT throws_ok($$SELECT * FROM coord.claim('tap/pq', partition_group => 'tap/lost')$$, '55000', NULL,
                 'lost lock: a group claim is refused');
SELECT is(cardinality(coord.join('tap/lost', 'x')), 8, 'lost lock: joining again takes every segment back');
SELECT ok(coord.segment_token('tap/lost', 0) > 0, 'lost lock: with a new token');
SELECT ok(coord.leave('tap/lost'), 'lost lock: leave');
-- the same, joining again before any sync noticed: a fresh membership
SELECT is(cardinality(coord.join('tap/lost2', 'y', segments => 8)), 8, 'lost lock, rejoin: joined');
CREATE TEMP TABLE tok2 AS SELECT coord.segment_token('tap/lost2', 0) AS t;
SELECT pg_advisory_unlock_all();
SELECT is(coord.segment_token('tap/lost2', 0), NULL, 'lost lock, rejoin: no token once the lock is gone');
SELECT is(cardinality(coord.join('tap/lost2', 'z')), 8, 'lost lock, rejoin: under another name, owns all again');
SELECT ok(coord.segment_token('tap/lost2', 0) > (SELECT t FROM tok2), 'lost lock, rejoin: with a larger token');
SELECT is((SELECT string_agg(member || ':' || alive, ',' ORDER BY member) FROM coord.members WHERE partition_group = 'tap/lost2'),
          'z:true', 'lost lock, rejoin: the new name is alive, the old name''s row is gone (a dead member''s)');
SELECT ok(coord.leave('tap/lost2'), 'lost lock, rejoin: leave');

-- ==== property tests of the assignment (test/parts has thousands more) ====
-- Members in sessions of their own (dblink), synced with coord.owned until
-- nothing moves; then: every segment exactly one owner, every count within
-- max(5% of its fair share segments * weight / total, 1 segment), a join
-- gives the newcomer its share and moves at most 2 sqrt(segments) segments
-- beyond it, a leave moves all the leaver's segments and at most as many
-- beyond them, and range slices are contiguous, in name order, of floor or
-- ceiling of the fair share.
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE TEMP TABLE prop_members (grp text, conn text, weight real, PRIMARY KEY (grp, conn));
CREATE TEMP TABLE prop_owned (grp text, conn text, segs integer[], PRIMARY KEY (grp, conn));
CREATE TEMP TABLE prop_before (grp text, conn text, segs integer[]);

-- the group's name for this run: stale groups of earlier runs stay apart
CREATE FUNCTION pg_temp.g(base text) RETURNS text LANGUAGE sql AS $f$
  SELECT 'tap/' || base || '-' || pg_backend_pid()
$f$;

CREATE FUNCTION pg_temp.add(base text, conn text, weight real, segments integer, assignor text)
RETURNS integer LANGUAGE plpgsql AS $f$
DECLARE
  n integer;
BEGIN
  PERFORM dblink_connect(conn, format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
                                      split_part(current_setting('unix_socket_directories'), ',', 1)));
  SELECT t.n INTO n FROM dblink(conn, format('SELECT cardinality(coord.join(%L, %L, %s::real, ''{}'', %s, %L))',
                                           pg_temp.g(base), conn, weight, segments, assignor)) AS t(n integer);
  INSERT INTO prop_members VALUES (base, conn, weight);
  RETURN n;
END
$f$;

-- rounds of coord.owned in every member's session until a round changes nothing
CREATE FUNCTION pg_temp.sync(base text) RETURNS integer LANGUAGE plpgsql AS $f$
DECLARE
  r integer;
  m record;
  got integer[];
  changed boolean;
BEGIN
  FOR r IN 1 .. 20 LOOP
    changed := false;
    FOR m IN SELECT conn FROM prop_members WHERE grp = base ORDER BY conn LOOP
      SELECT t.a INTO got FROM dblink(m.conn, format('SELECT coord.owned(%L)', pg_temp.g(base))) AS t(a integer[]);
      IF NOT EXISTS (SELECT 1 FROM prop_owned o WHERE o.grp = base AND o.conn = m.conn AND o.segs = got) THEN
        changed := true;
        INSERT INTO prop_owned VALUES (base, m.conn, got)
          ON CONFLICT (grp, conn) DO UPDATE SET segs = excluded.segs;
      END IF;
    END LOOP;
    IF NOT changed THEN
      RETURN r;
    END IF;
  END LOOP;
  RETURN NULL;
END
$f$;

-- every segment 0 .. segments-1 exactly once among the members
CREATE FUNCTION pg_temp.one_owner(base text, segments integer) RETURNS boolean LANGUAGE sql AS $f$
  SELECT count(*) = segments AND count(DISTINCT s) = segments AND min(s) = 0 AND max(s) = segments - 1
    FROM prop_owned o, unnest(o.segs) AS s
   WHERE o.grp = base AND o.conn IN (SELECT conn FROM prop_members WHERE grp = base)
$f$;

-- the members whose count is off: beyond max(5% of fair, 1), or not within 1
CREATE FUNCTION pg_temp.off_share(base text, segments integer) RETURNS bigint LANGUAGE sql AS $f$
  WITH f AS (SELECT m.conn, cardinality(o.segs) AS n,
                    segments * m.weight::float8 / sum(m.weight::float8) OVER () AS fair
               FROM prop_members m JOIN prop_owned o USING (grp, conn) WHERE m.grp = base)
  SELECT count(*) FROM f WHERE abs(n - fair) > greatest(0.05 * fair, 1) OR abs(n - fair) >= 1.0001
$f$;

-- segments whose owner differs from prop_before's, except those of one member
CREATE FUNCTION pg_temp.moved(base text, except_conn text) RETURNS bigint LANGUAGE sql AS $f$
  WITH b AS (SELECT conn, s FROM prop_before, unnest(segs) AS s WHERE grp = base),
       a AS (SELECT conn, s FROM prop_owned, unnest(segs) AS s
              WHERE grp = base AND conn IN (SELECT conn FROM prop_members WHERE grp = base))
  SELECT count(*) FROM b JOIN a USING (s)
   WHERE a.conn <> b.conn AND a.conn <> except_conn AND b.conn <> except_conn
$f$;

-- sticky: 8 members, weights 0.3 .. 9.9
SELECT is((SELECT sum(pg_temp.add('prop', 'p' || i, w, 1024, 'sticky'))
             FROM unnest(ARRAY[0.3, 1, 2.5, 4, 5.5, 7, 8.5, 9.9]::real[]) WITH ORDINALITY AS t(w, i)) > 0,
          true, 'sticky: 8 members in their own sessions');
SELECT ok(pg_temp.sync('prop') IS NOT NULL, 'sticky: the members settle');
SELECT ok(pg_temp.one_owner('prop', 1024), 'sticky: every segment exactly one owner');
SELECT is(pg_temp.off_share('prop', 1024), 0::bigint, 'sticky: every share within max(5% of fair, 1)');
SELECT is((SELECT count(*) FROM coord.members c JOIN prop_members m ON c.member = m.conn
             JOIN prop_owned o ON o.grp = m.grp AND o.conn = m.conn
            WHERE c.partition_group = pg_temp.g('prop') AND m.grp = 'prop' AND c.alive
              AND c.owned = cardinality(o.segs)
              AND abs(c.target_share - m.weight::float8 / (SELECT sum(weight::float8) FROM prop_members WHERE grp = 'prop')) < 1e-9),
          8::bigint, 'sticky: coord.members shows each member''s owned count and weight share');

-- a join
INSERT INTO prop_before SELECT grp, conn, segs FROM prop_owned WHERE grp = 'prop';
CREATE TEMP TABLE join_p9 AS SELECT pg_temp.add('prop', 'p9', 3, 1024, NULL) AS n;
SELECT is((SELECT count(*) FROM coord.members WHERE partition_group = pg_temp.g('prop') AND alive), 9::bigint,
          'sticky: a ninth member joins (9 live members)');
SELECT ok(pg_temp.sync('prop') IS NOT NULL, 'sticky: the members settle after the join');
SELECT ok(pg_temp.one_owner('prop', 1024), 'sticky join: every segment exactly one owner');
SELECT is(pg_temp.off_share('prop', 1024), 0::bigint, 'sticky join: every share within max(5% of fair, 1), the newcomer''s too');
SELECT cmp_ok(pg_temp.moved('prop', 'p9'), '<=', 64::bigint,
              'sticky join: at most 2 sqrt(1024) segments move beyond the newcomer''s');

-- a leave
DELETE FROM prop_before;
INSERT INTO prop_before SELECT grp, conn, segs FROM prop_owned WHERE grp = 'prop';
SELECT is((SELECT t.b FROM dblink('p3', format('SELECT coord.leave(%L)', pg_temp.g('prop'))) AS t(b boolean)),
          true, 'sticky: a member leaves');
SELECT dblink_disconnect('p3');
DELETE FROM prop_members WHERE grp = 'prop' AND conn = 'p3';
SELECT ok(pg_temp.sync('prop') IS NOT NULL, 'sticky: the members settle after the leave');
SELECT ok(pg_temp.one_owner('prop', 1024), 'sticky leave: every segment exactly one owner, the leaver''s all taken');
SELECT is(pg_temp.off_share('prop', 1024), 0::bigint, 'sticky leave: every share within max(5% of fair, 1)');
SELECT cmp_ok(pg_temp.moved('prop', 'p3'), '<=', 64::bigint,
              'sticky leave: at most 2 sqrt(1024) segments move beyond the leaver''s');

-- range: 5 members, weights 1 .. 5 over 1000 segments
SELECT is((SELECT sum(pg_temp.add('propr', 'r' || i, i, 1000, 'range')) FROM generate_series(1, 5) AS i) > 0,
          true, 'range: 5 members in their own sessions');
SELECT ok(pg_temp.sync('propr') IS NOT NULL, 'range: the members settle');
SELECT ok(pg_temp.one_owner('propr', 1000), 'range: every segment exactly one owner');
SELECT is(pg_temp.off_share('propr', 1000), 0::bigint, 'range: every slice floor or ceiling of its fair share');
SELECT is((SELECT count(*) FROM prop_owned WHERE grp = 'propr'
            AND segs[cardinality(segs)] - segs[1] + 1 = cardinality(segs)), 5::bigint, 'range: every slice contiguous');
SELECT is((SELECT array_agg(conn ORDER BY segs[1]) FROM prop_owned WHERE grp = 'propr'),
          ARRAY['r1', 'r2', 'r3', 'r4', 'r5'], 'range: slices in member-name order');

-- rendezvous: no quotas, so a join moves only what the newcomer takes and a
-- leave only the leaver's segments
SELECT is((SELECT sum(pg_temp.add('propz', 'z' || i, w, 1024, 'rendezvous'))
             FROM unnest(ARRAY[0.5, 1, 2, 3, 4, 6, 8, 9.5]::real[]) WITH ORDINALITY AS t(w, i)) > 0,
          true, 'rendezvous: 8 members in their own sessions');
SELECT ok(pg_temp.sync('propz') IS NOT NULL AND pg_temp.one_owner('propz', 1024),
          'rendezvous: the members settle, every segment exactly one owner');
DELETE FROM prop_before;
INSERT INTO prop_before SELECT grp, conn, segs FROM prop_owned WHERE grp = 'propz';
CREATE TEMP TABLE join_z9 AS SELECT pg_temp.add('propz', 'z9', 3, 1024, NULL) AS n;
SELECT is((SELECT count(*) FROM coord.members WHERE partition_group = pg_temp.g('propz') AND alive), 9::bigint,
          'rendezvous: a ninth member joins (9 live members)');
SELECT ok(pg_temp.sync('propz') IS NOT NULL AND pg_temp.one_owner('propz', 1024),
          'rendezvous join: settled, every segment exactly one owner');
SELECT ok(pg_temp.moved('propz', 'z9') = 0 AND (SELECT cardinality(segs) FROM prop_owned WHERE grp = 'propz' AND conn = 'z9') > 0,
          'rendezvous join: the newcomer owns segments, and none moved but to it');
DELETE FROM prop_before;
INSERT INTO prop_before SELECT grp, conn, segs FROM prop_owned WHERE grp = 'propz';
SELECT is((SELECT t.b FROM dblink('z3', format('SELECT coord.leave(%L)', pg_temp.g('propz'))) AS t(b boolean)),
          true, 'rendezvous: a member leaves');
SELECT dblink_disconnect('z3');
DELETE FROM prop_members WHERE grp = 'propz' AND conn = 'z3';
SELECT ok(pg_temp.sync('propz') IS NOT NULL AND pg_temp.one_owner('propz', 1024),
          'rendezvous leave: settled, the leaver''s segments all taken');
SELECT is(pg_temp.moved('propz', 'z3'), 0::bigint, 'rendezvous leave: only the leaver''s segments move');
SELECT throws_ok(format($$SELECT coord.join(%L, 'zz', assignor => 'sticky')$$, pg_temp.g('propz')), '22023', NULL,
                 'rendezvous: a later join naming another assignor is refused');

SELECT dblink_disconnect(c) FROM unnest(dblink_get_connections()) AS c;
-- ==== end of the property tests ====

-- a new group has its segments' rows (takers only update them)
SELECT is(cardinality(coord.join('tap/big', 'a', segments => 4096)), 4096, 'a group of 4096 segments');
SELECT is((SELECT count(*) FROM coord.partition_segments WHERE partition_group = 'tap/big'), 4096::bigint,
          'a new group has a row per segment');
SELECT ok(coord.leave('tap/big'), 'leave the big group');

-- rows restored into another database name no live member here: a row
-- naming a live backend that is not of this database (the checkpointer,
-- whose pid and start coord.backend_alive accepts) is not alive, and its
-- segment is taken
SELECT is(cardinality(coord.join('tap/gh', 'me', segments => 2, assignor => 'range')), 2, 'ghost: a group of 2');
SELECT ok(coord.leave('tap/gh'), 'ghost: leave');
INSERT INTO coord.partition_members
  SELECT 'tap/gh', 'ghost', 1, '{}', pid, backend_start, now() FROM pg_stat_activity WHERE backend_type = 'checkpointer';
UPDATE coord.partition_segments AS s SET owner_pid = a.pid, owner_start = a.backend_start
  FROM pg_stat_activity AS a WHERE a.backend_type = 'checkpointer' AND s.partition_group = 'tap/gh';
SELECT ok((SELECT coord.backend_alive(pid, backend_start) FROM coord.partition_members WHERE member = 'ghost'),
          'ghost: its backend is alive (in no database)');
SELECT is((SELECT alive FROM coord.members WHERE partition_group = 'tap/gh' AND member = 'ghost'), false,
          'ghost: coord.members shows it not alive');
SELECT is(coord.join('tap/gh', 'me'), '{0,1}'::integer[], 'ghost: a new member takes its segments');
SELECT is((SELECT count(*) FROM coord.partition_members WHERE partition_group = 'tap/gh'), 1::bigint,
          'ghost: its row is gone');
SELECT ok(coord.leave('tap/gh'), 'ghost: leave');

-- grants: a worker joins with any numeric weight and maps keys of every type
SELECT ok(has_function_privilege('coord_worker', 'coord.segment_of(text, bigint)', 'EXECUTE')
          AND has_function_privilege('coord_worker', 'coord.segment_of(text, uuid)', 'EXECUTE')
          AND has_function_privilege('coord_worker', 'coord.join(text, text, float8, jsonb, integer, text)', 'EXECUTE'),
          'coord_worker may execute join and every segment_of');
SELECT ok(NOT has_function_privilege('coord_monitor', 'coord.segment_of(text, bigint)', 'EXECUTE')
          AND NOT has_function_privilege('coord_monitor', 'coord.segment_of(text, uuid)', 'EXECUTE')
          AND NOT has_function_privilege('coord_monitor', 'coord.join(text, text, float8, jsonb, integer, text)', 'EXECUTE'),
          'coord_monitor may not');
SELECT * FROM finish();
ROLLBACK;
