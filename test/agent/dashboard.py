#!/usr/bin/env python3
"""The dashboard's checks in a real browser (test/agent/dashboard.sh starts
the cluster, the data and three `coordctl serve`; this drives them).

  dashboard.py --admin URL --monitor URL --readonly URL --out DIR

--admin serves a coord_admin role, --monitor a coord_monitor-only one,
--readonly the admin role with --read-only.  Headless chromium (cdp.py)
loads every page: no console error, the data dashboard.sh created is shown,
a retry, a cancel and a resume done by clicking take effect in the
database (psql, the PG* environment), the monitor sees no button; plain
HTTP checks the refusals (no CSRF token, a wrong one, another Origin, a
monitor's forged POST, --read-only, a foreign Host).  Screenshots of every
page go to DIR.  Prints "  ok   ..." / "  FAIL ..." per check, then
"N checks, M failed"; exit status 1 if any failed.
"""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402

checks = 0
fails = 0


def check(desc, cond, detail=""):
    global checks, fails
    checks += 1
    if cond:
        print("  ok   " + desc, flush=True)
    else:
        fails += 1
        print("  FAIL " + desc + (("\n       " + str(detail)[:600]) if detail else ""), flush=True)
    return cond


def sql(q):
    return subprocess.run(["psql", "-qAtX", "-v", "ON_ERROR_STOP=1", "-c", q], check=True,
                          capture_output=True, text=True).stdout.strip()


def request(base, method, path, body=None, headers=None):
    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    h = {"Host": u.netloc}
    if body is not None:
        h["Content-Type"] = "application/x-www-form-urlencoded"
        body = urllib.parse.urlencode(body)
    h.update(headers or {})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read().decode("utf-8", "replace")
    c.close()
    return r.status, data


def token_of(base):
    _, page = request(base, "GET", "/")
    m = re.search(r'<meta name="csrf-token" content="([0-9a-f]+)">', page)
    return m.group(1) if m else None


def job_state(jid):
    return sql(f"SELECT state FROM coord.jobs WHERE id = {int(jid)}")


# page path, screenshot name, JS that is true when the page shows the test's data
PAGES = [
    ("/", "queues",
     "!!document.querySelector('#queues a.s-dead') && document.body.innerText.includes('billing')"
     " && document.body.innerText.includes('tenant-7') && !!document.querySelector('.s-paused')"),
    ("/jobs", "jobs", "document.querySelectorAll('main table tbody tr').length >= 5"
     " && !!document.querySelector('main .s-dead')"),
    ("/jobs/{dead}", "job", "document.querySelector('#job').innerText.includes('SMTP 550')"
     " && document.querySelector('#job').innerText.includes('onerror=alert(1)')"),
    ("/batches", "batches", "document.querySelectorAll('main table tbody tr').length >= 1"),
    ("/schedules", "schedules", "document.body.innerText.includes('nightly')"
     " && document.body.innerText.includes('0 3 * * *')"),
    ("/apps", "apps", "!!document.querySelector('#grid td .s-late')"
     " && document.querySelector('#grid').innerText.includes('hourly_report')"),
    ("/locks", "locks", "document.body.innerText.includes('/reports/monthly')"
     " && document.querySelectorAll('main table tbody tr').length >= 2"),
    ("/elections?election=primary-db", "elections", "document.body.innerText.includes('host-a')"),
    ("/groups", "groups", "document.body.innerText.includes('worker-a')"
     " && document.body.innerText.includes('worker-b') && !!document.querySelector('#shares svg rect.own')"),
    ("/alerts", "alerts", "document.body.innerText.includes('deadline')"
     " && document.body.innerText.includes('hourly_report')"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--admin", required=True)
    ap.add_argument("--monitor", required=True)
    ap.add_argument("--readonly", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    dead = sql("SELECT id FROM coord.jobs WHERE state = 'dead' AND queue = 'mail' ORDER BY id LIMIT 1")
    to_cancel = sql("SELECT id FROM coord.jobs WHERE key = 'cancel-me'")
    victim = sql("SELECT id FROM coord.jobs WHERE queue = 'billing' ORDER BY id LIMIT 1")
    has_metrics = sql("SELECT to_regclass('coord.metrics') IS NOT NULL") == "t"

    with Browser() as b:
        # every page: loads, no console error, shows the data
        for path, name, shows in PAGES:
            path = path.format(dead=dead)
            b.console_errors.clear()
            b.goto(a.admin + path)
            check(f"{path}: shows the test's data", b.eval(shows), b.eval("document.body.innerText"))
            check(f"{path}: no console error", not b.console_errors, b.console_errors)
            b.screenshot(os.path.join(a.out, name + ".png"))
        # no payload, key or error became markup
        b.goto(a.admin + f"/jobs/{dead}")
        check("job page: the payload's and key's markup is text, not elements",
              b.eval("document.querySelectorAll('main img, main script, main b').length") == 0)
        b.goto(a.admin + "/jobs?state=dead")
        check("jobs page: search by state finds the dead job",
              b.eval(f"!!document.querySelector('a[href=\"/jobs/{dead}\"]')"))
        check("jobs page: the dead job has a Retry button",
              b.eval(f"!!document.querySelector('form[action=\"/jobs/{dead}/retry\"] button')"))
        b.goto(a.admin + "/jobs?key=cancel-me")
        check("jobs page: search by key finds one job",
              b.eval("document.querySelectorAll('main table tbody tr').length") == 1)
        if has_metrics:
            b.goto(a.admin + "/elections")
            check("/elections lists the election", b.eval("document.body.innerText.includes('host-a')"))
            b.screenshot(os.path.join(a.out, "elections.png"))
            b.goto(a.admin + "/metrics")
            check("/metrics: Prometheus text", b.eval("document.body.innerText.includes('# TYPE')"))
            b.screenshot(os.path.join(a.out, "metrics.png"))
        else:
            print("  (coord.metrics does not exist in this pg_coord: /metrics and the elections list not checked)")

        # actions through the page
        b.console_errors.clear()
        b.goto(a.admin + f"/jobs/{dead}")
        b.click(f"form[action='/jobs/{dead}/retry'] button")
        check("retry: the page says what it did", b.eval("(document.querySelector('#done')||{}).innerText||''")
              .startswith(f"Job {dead} is ready again"), b.eval("document.body.innerText"))
        check("retry: the job is ready in the database", job_state(dead) == "ready", job_state(dead))
        b.screenshot(os.path.join(a.out, "done.png"))
        b.goto(a.admin + "/jobs?key=cancel-me")
        b.click(f"form[action='/jobs/{to_cancel}/cancel'] button")
        check("cancel: the job is cancelled in the database", job_state(to_cancel) == "cancelled",
              job_state(to_cancel))
        b.goto(a.admin + "/")
        b.click("form[action='/queues/reports/resume'] button")
        check("resume of a paused key: coord.limits has no pause for it",
              sql("SELECT count(*) FROM coord.limits WHERE queue = 'reports' AND limit_key = 'tenant-7'"
                  " AND paused_until IS NOT NULL") == "0")
        check("actions: no console error", not b.console_errors, b.console_errors)

        # the monitor: same pages, no button
        for path in ("/", "/jobs", f"/jobs/{victim}", "/apps"):
            b.console_errors.clear()
            b.goto(a.monitor + path)
            check(f"monitor {path}: no action button",
                  b.eval("document.querySelectorAll('form[method=post]').length") == 0)
            check(f"monitor {path}: no console error", not b.console_errors, b.console_errors)
        child = sql("SELECT id FROM coord.jobs WHERE state = 'waiting'")
        parent = sql("SELECT id FROM coord.jobs WHERE key = 'parent'")
        b.goto(a.monitor + f"/jobs/{child}")
        check("monitor job page of a waiting job: its parent, linked",
              b.eval(f"!!document.querySelector('main table a[href=\"/jobs/{parent}\"]')")
              and b.eval("document.body.innerText.includes('waiting')"), b.eval("document.body.innerText"))
        b.screenshot(os.path.join(a.out, "job-waiting.png"))
        b.goto(a.monitor + f"/jobs/{victim}")
        check("monitor job page: payload withheld, said so",
              b.eval("!document.querySelector('#job').innerText.includes('payload\\n')"
                     " && document.body.innerText.includes('coord_admin')"))
        b.screenshot(os.path.join(a.out, "job-monitor.png"))
        b.goto(a.readonly + "/")
        check("read-only: no form on the queues page",
              b.eval("document.querySelectorAll('form[method=post]').length") == 0)

        # the monitor's server runs --refresh 1: a new queue shows up without a reload
        b.console_errors.clear()
        b.goto(a.monitor + "/")
        b.eval("window.coordMark = 1")
        sql("SELECT coord.enqueue('fresh_queue', '{}')")
        seen = False
        for _ in range(100):
            if b.eval("document.body.innerText.includes('fresh_queue')"):
                seen = True
                break
            time.sleep(0.1)
        check("auto refresh: a new queue appears in place (same page, no reload)",
              seen and b.eval("window.coordMark === 1"))
        check("auto refresh: no console error", not b.console_errors, b.console_errors)

        # rerun from the apps grid: coord.rerun resets the runs of the grid's hours
        b.console_errors.clear()
        b.goto(a.admin + "/apps")
        b.click("form[action='/apps/hourly_report/rerun'] button")
        done = b.eval("(document.querySelector('#done')||{}).innerText||''")
        check("rerun: the page says how many runs run again", re.match(r"App hourly_report: [1-9]\d* run", done),
              b.eval("document.body.innerText"))
        check("rerun: no console error", not b.console_errors, b.console_errors)

    # refusals, over plain HTTP
    tok = token_of(a.admin)
    check("admin pages carry a CSRF token", bool(tok))
    st, body = request(a.admin, "POST", f"/jobs/{victim}/cancel", {})
    check("POST without the CSRF token: 403", st == 403, (st, body[:300]))
    st, body = request(a.admin, "POST", f"/jobs/{victim}/cancel", {"csrf": "0" * 64})
    check("POST with a wrong CSRF token: 403", st == 403, (st, body[:300]))
    st, body = request(a.admin, "POST", f"/jobs/{victim}/cancel", {"csrf": tok},
                    {"Origin": "http://evil.example"})
    check("POST from another Origin: 403", st == 403, (st, body[:300]))
    check("refused POSTs changed nothing", job_state(victim) == "ready", job_state(victim))
    mtok = token_of(a.monitor)
    st, body = request(a.monitor, "POST", f"/jobs/{victim}/cancel", {"csrf": mtok})
    check("monitor's forged POST (valid token): 403 from the database's 42501",
          st == 403 and "42501" in body, (st, body[:400]))
    st, body = request(a.monitor, "POST", "/queues/billing/resume", {"csrf": mtok})
    check("monitor's forged resume: 403", st == 403, (st, body[:300]))
    check("monitor's POSTs changed nothing", job_state(victim) == "ready" and
          sql("SELECT paused_until IS NOT NULL FROM coord.queue_stats WHERE queue = 'billing'") == "t")
    # the queues page's pause form: a queue's key, until a time
    st, body = request(a.admin, "POST", "/queues/-/pause",
                       {"csrf": tok, "queue": "mail", "key": "k 1&2", "until": "2099-01-01 00:00+00"})
    check("pause form: 200, a key with blanks and & paused until the time", st == 200 and sql(
        "SELECT paused_until FROM coord.limits WHERE queue = 'mail' AND limit_key = 'k 1&2'")
        .startswith("2099-01-01"), (st, body[:300]))
    st, body = request(a.admin, "POST", "/queues/mail/pause", {"csrf": tok, "until": "not a time"})
    check("pause with a bad time: 400 (22007), nothing paused", st == 400 and "22007" in body and
          sql("SELECT count(*) FROM coord.limits WHERE queue = 'mail' AND limit_key IS NULL") == "0",
          (st, body[:300]))
    st, body = request(a.readonly, "POST", f"/jobs/{victim}/cancel", {"csrf": tok})
    check("read-only: POST refused (403)", st == 403, (st, body[:300]))
    st, body = request(a.admin, "GET", "/", headers={"Host": "evil.example:80"})
    check("loopback server: a foreign Host is refused (421)", st == 421, st)
    st, body = request(a.admin, "GET", "/nope")
    check("unknown path: 404", st == 404, st)

    # the JSON API: each page's data
    for page in ("queues", "jobs", "batches", "schedules", "apps", "locks", "elections", "groups",
                 "alerts", f"jobs/{dead}"):
        st, body = request(a.admin, "GET", f"/api/{page}.json")
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        check(f"/api/{page}.json: 200 and a JSON object", st == 200 and isinstance(doc, dict), (st, body[:300]))
    st, body = request(a.admin, "GET", "/api/queues.json")
    q = {r["queue"]: r for r in json.loads(body)["queues"]}
    check("/api/queues.json: the queues, billing paused", "mail" in q and
          q.get("billing", {}).get("paused_until") is not None, body[:300])
    st, body = request(a.monitor, "GET", f"/api/jobs/{victim}.json")
    check("monitor /api/jobs/<id>.json: no payload key", st == 200 and "payload" not in json.loads(body)["job"],
          body[:300])

    print(f"{checks} checks, {fails} failed")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
