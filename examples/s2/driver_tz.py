#!/usr/bin/env python3
"""S2, second part: the clock in Dallas.  Ticks coord.tick(now) once per real
hour from local Monday WEEK 00:00 (America/Chicago) through the Monday after
the week, a week that holds the fall-back of 2026-11-01 (25 hours), waiting
after each tick until the host's job managers have finished the runs begun.
The week's dal_weekly run is held by its worker (worker.py --hold) until the
driver releases it: the tick that finds it 3 hours past its week's end
raises a deadline alert, which a LISTENing connection hears; two more ticks
raise nothing more; once released and done, the alert is cleared.  Then the
day whose feed was broken (dal_daily's result says so) is rerun with
coord.rerun(..., downstream => true) after its feed is fixed.

  driver_tz.py WEEK_MONDAY LOGDIR
"""
import os
import select
import sys
from datetime import datetime, timedelta, timezone

import psycopg2

week, logdir = sys.argv[1], sys.argv[2]
release = os.path.join(logdir, 'release-weekly')
fixed = os.path.join(logdir, 'feed-fixed')

conn = psycopg2.connect(application_name='s2:driver_tz')
conn.autocommit = True
cur = conn.cursor()
lconn = psycopg2.connect(application_name='s2:alert_listener')
lconn.autocommit = True
lconn.cursor().execute('LISTEN "coord:alerts"')


def q(sql, *a):
    cur.execute(sql, a)
    return cur.fetchall()


def notifies(wait):
    if select.select([lconn], [], [], wait) != ([], [], []):
        lconn.poll()
    got = [n.payload for n in lconn.notifies]
    lconn.notifies.clear()
    return got


def wait_done(sim, what):
    cond = ("NOT EXISTS (SELECT FROM coord.runs WHERE current AND state <> 'done' AND app LIKE 'dal%%' "
            "AND period_start <= '%s'%s)" % (sim.isoformat(),
                                            " AND app <> 'dal_weekly'" if not os.path.exists(release) else ''))
    if not q('SELECT s2.wait_until(%s, interval %s)', cond, '20 seconds')[0][0]:
        print(f'    timed out waiting for {what}')
        sys.exit(1)


def local(t):
    return q("SELECT to_char(%s AT TIME ZONE 'America/Chicago', 'Dy MM-DD HH24:MI') "
             "|| to_char(%s, ' (HH24:MI\"Z\")')", t, t)[0][0]


start = q("SELECT %s::timestamp AT TIME ZONE 'America/Chicago'", week)[0][0].astimezone(timezone.utc)
end = q("SELECT (%s::timestamp + interval '8 days') AT TIME ZONE 'America/Chicago'", week)[0][0]
hours = int((end - start).total_seconds() // 3600)
alert_tick = None
for h in range(hours):
    sim = start + timedelta(hours=h)
    q('SELECT coord.tick(%s)', sim)
    if alert_tick is None:
        a = q("SELECT raised_at, detail FROM coord.alerts WHERE app = 'dal_weekly' AND kind = 'deadline'")
        if a:
            alert_tick = h
            print(f'    tick {local(sim)}: dal_weekly still running 3 h after its week ended (Mon 00:00):'
                  f' a deadline alert, raised_at {local(a[0][0])}; "{a[0][1]}"')
            print(f'      the LISTENing connection heard: {notifies(5.0)}')
    elif h <= alert_tick + 2:
        n = q("SELECT count(*) FROM coord.alerts WHERE app = 'dal_weekly' AND kind = 'deadline'")[0][0]
        print(f'    tick {local(sim)}: alerts of dal_weekly now {n}; notifications since: {notifies(0.2)}')
        if h == alert_tick + 2:
            open(release, 'w').close()
            wait_done(sim, 'dal_weekly')
            a = q("SELECT r.finished_at, a.cleared_at FROM coord.alerts AS a JOIN coord.runs AS r USING (app, period_start)"
                  " WHERE a.app = 'dal_weekly' AND r.current")[0]
            print(f'    released dal_weekly: done at {a[0]:%H:%M:%S.%f}, its alert cleared_at {a[1]:%H:%M:%S.%f}')
    wait_done(sim, f'the runs of {local(sim)}')
    if h == 4 + 24 * 6:   # Sunday 2026-11-01 03:00 CST: the fall-back night is over
        print("    the fall-back night: coord.grid(Sat 23:00, Sun 03:00 Chicago), UTC columns; its two 01:00 hours:")
        for (line,) in q("SELECT * FROM coord.grid(%s, %s, '{dal_hits}')", sim - timedelta(hours=5), sim):
            print('      ' + line)
        for (k, ps) in q("SELECT COALESCE(j.key, h.key) || '  origin ' || COALESCE(j.origin, h.origin), r.period_start "
                         "FROM coord.app_runs AS r LEFT JOIN coord.job AS j ON j.id = r.job_id "
                         "LEFT JOIN coord.job_history AS h ON h.id = r.job_id WHERE r.app = 'dal_hits' AND "
                         "r.period_start >= %s - interval '3 hours' AND period_start < %s - interval '1 hour' "
                         "ORDER BY r.period_start", sim, sim):
            print(f'      run key {k}  (period_start {ps.astimezone(timezone.utc):%Y-%m-%d %H:%MZ})')
print(f'    {hours} ticks, {local(start)} to {local(end - timedelta(hours=1))}; alerts heard after: {notifies(0.2)}')

# the broken day: dal_daily's result shows it; its feed is fixed; rerun it
(bad, bad_end, res), = q("SELECT period_start, period_end, result FROM coord.runs WHERE app = 'dal_daily' "
                         "AND (result->>'broken')::int > 0")
print(f'    dal_daily of {local(bad)[:9]} says {res}: the feed was broken; fixed, then')
open(fixed, 'w').close()
n = q("SELECT coord.rerun('dal_hits', %s, %s, downstream => true)", bad, bad_end)[0][0]
print(f"    coord.rerun('dal_hits', {local(bad)[:9]} 00:00, {local(bad_end)[:9]} 00:00, downstream => true) -> {n}")
wait_done(end, 'the rerun')
print('    the rerun done, the runs that have two attempts (coord.runs, attempt_no, current):')
for r in q("SELECT app, count(*) FILTER (WHERE current), count(*) FILTER (WHERE NOT current), "
           "string_agg(DISTINCT attempt_no::text, ',') FROM coord.runs WHERE app LIKE 'dal%%' AND "
           "(app, period_start) IN (SELECT app, period_start FROM coord.runs WHERE attempt_no = 2) "
           "GROUP BY app ORDER BY min(period_end) - min(period_start)"):
    print(f'      {r[0]:<10} {r[1]:>3} redone (current), {r[2]:>3} earlier attempts kept; attempt_no {r[3]}')
for r in q("SELECT app, attempt_no, current, result FROM coord.runs WHERE app IN ('dal_daily', 'dal_weekly') "
           "AND attempt_no = 2 OR (app, period_start, attempt_no) IN "
           "(SELECT app, period_start, 1 FROM coord.runs WHERE app IN ('dal_daily', 'dal_weekly') AND attempt_no = 2)"
           " ORDER BY app, attempt_no"):
    print(f'      {r[0]:<10} attempt {r[1]} current {str(r[2]):<5} {r[3]}')
