#!/usr/bin/python3
"""S4 mail runner over a mail table of its own, with a pg_coord partition group.

    group_runner.py -n NAME -w WEIGHT -N TOTAL [-g GROUP] [-b BATCH] [-s SEND_MS]

The runners of the original S4 split the hash space of their mail table
among themselves "with a list of partition weights" and re-split by hand
whenever one came or went.  Here each runner joins a partition group with
its weight, and the group divides its segments among the live members in
proportion to the weights, re-dividing by itself when a member joins, leaves
or dies (its session ends).  Each runner loops:

  owned   coord.owned(GROUP): the segments this session owns now (taking
          those that became free, letting go of those that moved away)
  pick    up to BATCH unsent mails of s4.mail whose
          coord.segment_of(GROUP, rcpt) is owned, each with that segment's
          fencing token, coord.segment_token(GROUP, segment)
  send    "sends" the mail (sleeps SEND_MS)
  mark    UPDATE s4.mail SET sent_by = NAME ... WHERE id = $1 AND sent_by IS
          NULL AND coord.segment_token(GROUP, segment) = the token: the mark
          counts only while this session still owns the segment it took with
          that token (a runner whose session is gone, or that let the
          segment go, marks nothing); the same transaction logs the send in
          s4.mail_sends (no unique constraint: a second send would show).

It exits once TOTAL mails are marked sent.  Connects with the PG*
environment variables; application_name s4:group:NAME.
"""
import argparse
import datetime
import sys
import time

import psycopg2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", dest="name", required=True, help="member name (logs, application_name)")
    ap.add_argument("-w", dest="weight", type=float, required=True, help="weight in the group")
    ap.add_argument("-N", dest="total", type=int, required=True, help="exit when this many mails are sent")
    ap.add_argument("-g", dest="group", default="s4-mail", help="partition group")
    ap.add_argument("-b", dest="batch", type=int, default=5, help="mails per pick")
    ap.add_argument("-s", dest="send_ms", type=int, default=20, help="time to send one mail")
    args = ap.parse_args()

    def log(msg):
        now = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
        print(f"{now} {args.name} [weight {args.weight:g}] {msg}", flush=True)

    conn = psycopg2.connect(application_name="s4:group:" + args.name)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SELECT cardinality(coord.join(%s, %s, weight => %s))", (args.group, args.name, args.weight))
    log(f"joined {args.group}: {cur.fetchone()[0]} segment(s) owned at once")
    sent = 0
    mine = None
    while True:
        cur.execute("SELECT coord.owned(%s)", (args.group,))
        owned = cur.fetchone()[0]
        if mine is None or set(owned) != mine:
            log(f"owns {len(owned)} segment(s)")
            # the segments newly ours, with the tokens we took them with
            # (what the demo checks every mark against)
            cur.execute("INSERT INTO s4.owned_log (runner, segment, token)"
                        " SELECT %s, s, coord.segment_token(%s, s) FROM unnest(%s::integer[]) AS s",
                        (args.name, args.group, sorted(set(owned) - (mine or set()))))
            mine = set(owned)
        cur.execute("""
            SELECT m.id, m.rcpt, m.seg, coord.segment_token(%(g)s, m.seg)
              FROM (SELECT id, rcpt, coord.segment_of(%(g)s, rcpt) AS seg
                      FROM s4.mail WHERE sent_by IS NULL) AS m
             WHERE m.seg = ANY (%(owned)s::integer[])
             ORDER BY m.id LIMIT %(n)s""", {"g": args.group, "owned": owned, "n": args.batch})
        picked = cur.fetchall()
        if not picked:
            cur.execute("SELECT count(*) FROM s4.mail WHERE sent_by IS NOT NULL")
            if cur.fetchone()[0] >= args.total:
                break
            time.sleep(0.05)   # the rest is in others' segments: look again
            continue
        for mail_id, rcpt, seg, token in picked:
            time.sleep(args.send_ms / 1000.0)   # the SMTP conversation
            conn.autocommit = False
            with conn:   # one transaction: the fenced mark and its log row
                cur.execute("""
                    UPDATE s4.mail SET sent_by = %(me)s, sent_at = clock_timestamp(),
                                       segment = %(seg)s, seg_token = %(tok)s
                     WHERE id = %(id)s AND sent_by IS NULL
                       AND coord.segment_token(%(g)s, %(seg)s) = %(tok)s""",
                            {"me": args.name, "seg": seg, "tok": token, "id": mail_id, "g": args.group})
                if cur.rowcount == 1:
                    cur.execute("INSERT INTO s4.mail_sends (mail_id, runner, segment, seg_token) "
                                "VALUES (%s, %s, %s, %s)", (mail_id, args.name, seg, token))
                    sent += 1
                else:
                    log(f"mail {mail_id} to {rcpt}: segment {seg} token {token} no longer ours, not marked")
            conn.autocommit = True
    log(f"done: sent {sent} mail(s)")
    cur.execute("SELECT coord.leave(%s)", (args.group,))
    return 0


if __name__ == "__main__":
    sys.exit(main())
