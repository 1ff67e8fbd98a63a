#!/usr/bin/env python3
"""S2: the job manager of one host, standing in for coord-agent.

Claims runs from queue 'apps' for its host (session-bound: if this process
dies, its runs are claimable again at once), "runs" the app named in the
payload and completes the run with its result:
  adxcheck, retgtcheck  {"rows": n}  (a made-up count for the hour)
  counter               {"total": adx rows + retgt rows of the hour}
  bigcounter            {"total": the week's rows, "hours": hourly runs seen}
With --hang APP@PERIOD_START the first attempt of that app and period hangs
for --hang-seconds, then completes late (the run timed out meanwhile:
complete answers false).  Stops on SIGTERM.  Logs one line per run to stdout.

The Dallas apps of the second part (schema_tz.sql, local periods of
America/Chicago):
  dal_hits    {"rows": n}; {"rows": 0, "feed": "broken"} for an hour in
              --bad-from/--bad-to (UTC) while the file --fixed does not exist
  dal_daily   {"total": rows, "hours": hourly runs seen, "broken": of them}
  dal_weekly  {"total": rows, "days": daily runs seen, "broken": hours};
              --hold: the run is held (its worker waits) while the file
              --release does not exist, as a rollup stuck on a slow query
"""
import argparse
import json
import os
import signal
import sys
import time

import psycopg2

ap = argparse.ArgumentParser()
ap.add_argument('-n', '--name', required=True)
ap.add_argument('--host', default='tr-oddjob-dal-01')
ap.add_argument('--hang', default='')
ap.add_argument('--hang-seconds', type=float, default=4.0)
ap.add_argument('--bad-from', default='')
ap.add_argument('--bad-to', default='')
ap.add_argument('--fixed', default='')
ap.add_argument('--hold', default='')
ap.add_argument('--release', default='')
args = ap.parse_args()

stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)


def log(msg):
    print(f'{time.strftime("%H:%M:%S")} {args.name} {msg}', flush=True)


def rows_for(app, period_start):
    # a stable made-up number per (app, hour)
    hour = int(period_start[11:13])
    day = int(period_start[8:10])
    return (hour * 7 + day * 3) % 50 + (10 if app == 'adxcheck' else 20)


def compute(payload):
    app = payload['app']
    up = payload.get('upstream', {})
    if app in ('adxcheck', 'retgtcheck'):
        return {'rows': rows_for(app, payload['period_start'])}
    if app == 'counter':
        return {'total': sum(r['rows'] for rs in up.values() for r in rs)}
    if app == 'bigcounter':
        return {'total': sum(r['rows'] for rs in up.values() for r in rs),
                'hours': {k: len(v) for k, v in up.items()}}
    if app == 'dal_hits':
        ps = payload['period_start']
        if args.bad_from <= ps < args.bad_to and not os.path.exists(args.fixed):
            return {'rows': 0, 'feed': 'broken'}
        return {'rows': rows_for(app, ps)}
    if app == 'dal_daily':
        hs = up.get('dal_hits', [])
        return {'total': sum(r['rows'] for r in hs), 'hours': len(hs),
                'broken': sum(1 for r in hs if r.get('feed') == 'broken')}
    if app == 'dal_weekly':
        ds = up.get('dal_daily', [])
        return {'total': sum(r['total'] for r in ds), 'days': len(ds),
                'broken': sum(r['broken'] for r in ds)}
    return {}


conn = psycopg2.connect(application_name='s2:worker:' + args.name)
conn.autocommit = True
cur = conn.cursor()
done = 0
log('started')
while not stop:
    cur.execute("SELECT id, token, payload, attempt FROM coord.claim('apps', 1, host => %s, session_bound => true)",
                (args.host,))
    row = cur.fetchone()
    if row is None:
        time.sleep(0.003)
        continue
    jid, tok, payload, attempt = row
    app, ps = payload['app'], payload['period_start']
    if f'{app}@{ps}' == args.hang and attempt == 1:
        log(f'run {app} {ps} (job {jid}, attempt {attempt}): hangs for {args.hang_seconds:g} s')
        time.sleep(args.hang_seconds)
        cur.execute('SELECT coord.complete(%s, %s, %s)', (jid, tok, json.dumps({'late': True})))
        log(f'late complete of {app} {ps} (job {jid}) -> {cur.fetchone()[0]}')
        continue
    if app == args.hold and not os.path.exists(args.release):
        log(f'run {app} {ps} (job {jid}): held until {os.path.basename(args.release)} exists')
        while not stop and not os.path.exists(args.release):
            time.sleep(0.01)
        log(f'run {app} {ps} (job {jid}): released')
    cur.execute('SELECT coord.complete(%s, %s, %s)', (jid, tok, json.dumps(compute(payload))))
    ok = cur.fetchone()[0]
    done += 1
    if app in ('bigcounter', 'dal_daily', 'dal_weekly') or attempt > 1 or not ok:
        log(f'run {app} {ps} (job {jid}, attempt {attempt}) -> complete {ok}')
log(f'stopping after {done} runs')
conn.close()
sys.exit(0)
