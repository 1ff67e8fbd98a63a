#!/usr/bin/env python3
"""The coord-agent demo's clock (demo_section.sh): coord.tick(now) once per
simulated hour from FIRST to LAST (UTC, whole hours), as fast as the agents
keep up: before each tick it waits until every run of the periods more than
WINDOW hours back is done, so that at most WINDOW + 1 hours of runs are in
flight (0: each hour's runs are done before the next tick).  Records each
tick in agent_demo.ticks and prints one line per simulated day once that
day's runs are done.  The simulated times are in the past, so the runs' jobs
are due at once (their run_at is the real time).

  clock.py FIRST LAST [WINDOW]     e.g. 2026-11-16T00:00Z 2026-11-29T11:00Z 4

Runs in flight while the clock jumps an hour per tick would be timed out by
an app timeout shorter than WINDOW hours (tick times are what timeouts are
measured in), so the demo's apps have none; the agents' task timeout guards
against hung runs instead.
"""
import sys
import time
from datetime import datetime, timedelta

import psycopg2

first = datetime.fromisoformat(sys.argv[1].replace('Z', '+00:00'))
last = datetime.fromisoformat(sys.argv[2].replace('Z', '+00:00'))
window = timedelta(hours=int(sys.argv[3]) if len(sys.argv) > 3 else 4)

conn = psycopg2.connect(application_name='agent-demo:clock')
conn.autocommit = True
cur = conn.cursor()


def q(sql, *a):
    cur.execute(sql, a)
    return cur.fetchall() if cur.description else []


def wait_done(upto):
    """Waits until every run of a period starting at or before upto is done
    (including weekly runs created by the complete of the last hourly one)."""
    ok = q("SELECT agent_demo.wait_until(%s, interval '60 seconds')",
           "NOT EXISTS (SELECT FROM coord.runs WHERE state <> 'done' AND period_start <= '%s')"
           % upto.isoformat())[0][0]
    if not ok:
        print(f'      timed out waiting for the runs up to {upto:%a %Y-%m-%d %H:%M}', flush=True)
        for row in q("SELECT app, period_start, host, state, attempts, last_error FROM coord.runs "
                     "WHERE state <> 'done' ORDER BY period_start, app LIMIT 10"):
            print('        ', row, flush=True)
        sys.exit(1)


t0 = time.monotonic()
shown = first   # days before this one are printed


def show_days(upto):
    """Prints each whole simulated day before upto (its runs are done)."""
    global shown
    while shown + timedelta(days=1) <= upto:
        rows = q("""SELECT r.app, count(*) FROM coord.runs AS r JOIN coord.app_defs AS d ON d.name = r.app
                     WHERE r.period_start >= %s AND r.period_start < %s AND d.grain = 'hourly'
                     GROUP BY r.app ORDER BY r.app""", shown, shown + timedelta(days=1))
        # daily, weekly ... runs whose period ended with this day
        longer = q("""SELECT r.app || ' (' || d.grain || ', from ' || to_char(r.period_start, 'Dy YYYY-MM-DD')
                             || ') ' || r.state
                        FROM coord.runs AS r JOIN coord.app_defs AS d ON d.name = r.app
                       WHERE d.grain <> 'hourly' AND r.period_end = %s""", shown + timedelta(days=1))
        print(f'      {shown:%a %Y-%m-%d}: ' + ', '.join(f'{app} {n}' for app, n in rows)
              + ''.join(f', {w}' for (w,) in longer)
              + f'  ({time.monotonic() - t0:5.1f} s)', flush=True)
        shown += timedelta(days=1)


sim = first
while sim <= last:
    wait_done(sim - window - timedelta(hours=1))
    show_days(sim - window)
    q('INSERT INTO agent_demo.ticks (sim) VALUES (%s)', sim)
    q('SELECT coord.tick(%s)', sim)
    sim += timedelta(hours=1)
wait_done(last)
show_days(last + timedelta(hours=1))
if shown <= last:
    rows = q("""SELECT r.app, count(*) FROM coord.runs AS r JOIN coord.app_defs AS d ON d.name = r.app
                 WHERE r.period_start >= %s AND d.grain = 'hourly' GROUP BY r.app ORDER BY r.app""", shown)
    print(f'      {shown:%a %Y-%m-%d} to {last:%H}:00: ' + ', '.join(f'{app} {n}' for app, n in rows)
          + f'  ({time.monotonic() - t0:5.1f} s)', flush=True)
