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
"""
import argparse
import json
import signal
import sys
import time

import psycopg2

ap = argparse.ArgumentParser()
ap.add_argument('-n', '--name', required=True)
ap.add_argument('--host', default='tr-oddjob-dal-01')
ap.add_argument('--hang', default='')
ap.add_argument('--hang-seconds', type=float, default=4.0)
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
    cur.execute('SELECT coord.complete(%s, %s, %s)', (jid, tok, json.dumps(compute(payload))))
    ok = cur.fetchone()[0]
    done += 1
    if app == 'bigcounter' or attempt > 1 or not ok:
        log(f'run {app} {ps} (job {jid}, attempt {attempt}) -> complete {ok}')
log(f'stopping after {done} runs')
conn.close()
sys.exit(0)
