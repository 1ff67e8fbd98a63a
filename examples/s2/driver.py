#!/usr/bin/env python3
"""S2: the clock.  Ticks coord.tick(now) once per simulated hour through one
ISO week (and the first hour of the next), waiting after each tick until the
host's job managers have finished that hour's runs; prints the grid at a few
points.  Simulated times are in the past, so the runs' jobs are due at once
(they are created with run_at = the real time).

  driver.py WEEK_MONDAY HANG_PERIOD_START
"""
import sys
import time
from datetime import datetime, timedelta, timezone

import psycopg2

week = datetime.fromisoformat(sys.argv[1]).replace(tzinfo=timezone.utc)
hang = sys.argv[2]

conn = psycopg2.connect(application_name='s2:driver')
conn.autocommit = True
cur = conn.cursor()


def q(sql, *a):
    cur.execute(sql, a)
    return cur.fetchall()


def grid(frm, to):
    for (line,) in q('SELECT * FROM coord.grid(%s, %s, NULL)', frm, to):
        print('      ' + line)


def wait_hour(sim, exclude_hang):
    # every run of a period begun by now is done (the hung run and the
    # counter run that waits for it excepted while it hangs)
    cond = ("NOT EXISTS (SELECT FROM coord.runs WHERE state <> 'done' AND period_start <= '%s'%s)"
            % (sim.isoformat(), " AND NOT (app IN ('adxcheck', 'counter') AND period_start = '%s')" % hang
               if exclude_hang else ''))
    ok = q('SELECT s2.wait_until(%s, interval %s)', cond, '20 seconds')[0][0]
    if not ok:
        print(f'    timed out waiting for the runs of {sim:%a %H:%M}')
        sys.exit(1)


timeouts_seen = 0
for h in range(0, 169):
    sim = week + timedelta(hours=h)
    q('SELECT coord.tick(%s)', sim)
    t = q("SELECT count(*) FROM coord.runs WHERE app = 'adxcheck' AND period_start = %s "
          "AND last_error LIKE 'timed out%%'", hang)[0][0]
    if t and not timeouts_seen:
        timeouts_seen = 1
        row = q("SELECT state, attempts, last_error, job_id FROM coord.runs WHERE app = 'adxcheck' "
                "AND period_start = %s", hang)[0]
        print(f'    tick {sim:%a %H:%M}: adxcheck {hang[:16]} timed out, retried as job {row[3]} '
              f'({row[0]} after a backoff; "{row[2]}")')
    wait_hour(sim, h < 168)
    if h == 23:
        print('    Monday done: the grid of coord.grid(Mon 00:00, Tue 00:00)')
        grid(week, week + timedelta(days=1))
    if h == 167:
        n = q("SELECT count(*) FROM coord.runs WHERE app = 'bigcounter'")[0][0]
        print(f'    tick {sim:%a %H:%M}: the week\'s last hour; bigcounter runs now: {n}')
print('    the week is over: coord.grid(Sun 00:00, Mon 01:00)')
grid(week + timedelta(days=6), week + timedelta(days=7, hours=1))
