-- S4: mail queue runners on several machines that must never send one mail
-- twice, on pg_coord.
--
-- The original runners split the hash space of the mail ids among themselves
-- (with weights), or wrote their id into a row and read it back, so that two
-- runners would not take the same entry.  Here the mails are jobs on queue
-- 'mail': coord.claim hands each one to exactly one runner (FOR UPDATE SKIP
-- LOCKED, no partitioning needed), and coord.complete with the claim's
-- fencing token decides, in the transaction that records the send, whether
-- the send counts.  The tables below are only the runners' own bookkeeping,
-- so that duplicates and lost mails would show.
--
-- Apply with:  psql -d <db> -f examples/s4/schema.sql   (needs CREATE EXTENSION pg_coord)

\set ON_ERROR_STOP on
SET client_min_messages = warning;

CREATE SCHEMA s4;
COMMENT ON SCHEMA s4 IS 'S4 example: what the mail runners claimed and sent';

-- One row per claim, written by the statement that claims (so a runner killed
-- right after its claim still leaves the row).
CREATE TABLE s4.claims (
    id          bigserial PRIMARY KEY,
    job_id      bigint NOT NULL,
    mail_no     integer,
    runner      text NOT NULL,
    mode        text NOT NULL CHECK (mode IN ('session', 'lease')),
    token       bigint NOT NULL,
    lease_until timestamptz,
    pid         integer NOT NULL DEFAULT pg_catalog.pg_backend_pid(),
    claimed_at  timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
CREATE INDEX ON s4.claims (job_id);
COMMENT ON TABLE s4.claims IS 'One row per job claimed by a runner, with its fencing token';

-- One row per mail sent, inserted in the transaction that calls
-- coord.complete, and committed only if complete answered true.
-- Deliberately no unique constraint: a mail sent twice shows up as two rows.
CREATE TABLE s4.sent (
    id      bigserial PRIMARY KEY,
    job_id  bigint NOT NULL,
    mail_no integer,
    runner  text NOT NULL,
    token   bigint NOT NULL,
    pid     integer NOT NULL DEFAULT pg_catalog.pg_backend_pid(),
    sent_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
CREATE INDEX ON s4.sent (job_id);
COMMENT ON TABLE s4.sent IS
  'One row per mail sent and completed; no unique constraint, so duplicates stay visible';

-- Part 3 (group_runner.py): the original's own mail table, no pg_coord jobs.
-- Runners in partition group 's4-mail' each send the mails whose
-- coord.segment_of(group, rcpt) they own, and mark them with the segment's
-- fencing token.
CREATE TABLE s4.mail (
    id        bigserial PRIMARY KEY,
    rcpt      text NOT NULL,
    sent_by   text,
    sent_at   timestamptz,
    segment   integer,
    seg_token bigint
);
COMMENT ON TABLE s4.mail IS 'Part 3: a mail table of the runners'' own; sent_by is set once, fenced by the segment token';

-- One row per mark, in the marking transaction; no unique constraint.
CREATE TABLE s4.mail_sends (
    id        bigserial PRIMARY KEY,
    mail_id   bigint NOT NULL,
    runner    text NOT NULL,
    segment   integer NOT NULL,
    seg_token bigint NOT NULL,
    pid       integer NOT NULL DEFAULT pg_catalog.pg_backend_pid(),
    sent_at   timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE s4.mail_sends IS 'Part 3: one row per mail marked sent; duplicates would show';

CREATE TABLE s4.owned_log (
    id      bigserial PRIMARY KEY,
    runner  text NOT NULL,
    segment integer NOT NULL,
    token   bigint,
    at      timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE s4.owned_log IS 'Part 3: each segment a group runner found newly its own, with its token';

\set schema s4
\ir ../lib/wait_until.sql
