#!/usr/bin/python3
"""S1 autonomous component, Python/psycopg2 flavour (component.sh is the same in bash).

    component.py -c COMPONENT -p 1|2 -w WORKER [-t WORK_MS] [-n CANDIDATES] [-i INDEX_TIMEOUT_S] [-o]

One run is what cron started once in the original; without -o the worker
repeats runs until the index has nothing left for COMPONENT.

  procedure 1: take the index lock /SBOI/<component>, read candidate batches,
               lock the first free one with coord.lock_first, release the
               index lock, then work on that one batch
  procedure 2: take the index lock and keep it while working through every
               batch, locking each in turn

Work on a batch: re-check it is not done yet (a candidate read earlier can be
stale), get a fencing token, "work", store the result with the token, unlock.
Connects with the usual PG* environment variables.
"""
import argparse
import datetime
import random
import sys
import time

import psycopg2

DONE, NOTHING_LEFT, BUSY = 0, 1, 2


class Component:
    def __init__(self, args):
        self.component = args.component
        self.worker = args.worker
        self.work_ms = args.work_ms
        self.candidates = args.candidates
        self.index_timeout = datetime.timedelta(seconds=args.index_timeout)
        self.index = "/SBOI/" + self.component
        # autocommit: every statement commits at once, so a fencing token and
        # a stored result are durable before the lock is given up.  Session
        # locks do not depend on transactions.
        self.conn = psycopg2.connect(application_name="s1:" + self.worker)
        self.conn.autocommit = True
        self.cur = self.conn.cursor()

    def log(self, msg):
        now = datetime.datetime.now().strftime("%H:%M:%S.%f")[:-3]
        print(f"{now} {self.worker} [python] {msg}", flush=True)

    def one(self, sql, *params):
        self.cur.execute(sql, params)
        return self.cur.fetchone()

    def lock_index(self):
        if self.one("SELECT coord.lock(%s, %s)", self.index, self.index_timeout)[0]:
            return True
        self.log(f"index lock {self.index} busy for {self.index_timeout.seconds}s")
        return False

    def pick_batch(self):
        """Reads the index and locks the first free candidate: (how many
        unprocessed batches were read, the path locked or None if all busy)."""
        return self.one("SELECT cardinality(c), coord.lock_first(c) "
                        "FROM s1.candidates(%s, %s) AS c", self.component, self.candidates)

    def work_on(self, path):
        """Works on a batch whose lock this session holds, and releases it."""
        if self.one("SELECT s1.processed(%s)", path)[0]:
            # processed by someone else between reading the index and locking it
            self.log(f"{path} is done already, skipping")
        else:
            token = self.one("SELECT coord.fence(%s)", path)[0]
            self.one("SELECT s1.begin_attempt(%s, %s, %s)", path, token, self.worker)
            self.log(f"working on {path} (token {token})")
            time.sleep(self.work_ms * random.uniform(0.8, 1.2) / 1000)  # workers drift apart
            result = f"checksum of {path.rsplit('/', 1)[1]} by {self.worker}"
            if self.one("SELECT s1.store_result(%s, %s, %s, %s)", path, token, self.worker, result)[0]:
                self.log(f"stored {path}")
            else:
                self.log(f"store REJECTED {path}: token {token} is stale")
        self.one("SELECT coord.unlock(%s)", path)

    def run_procedure_1(self):
        if not self.lock_index():
            return BUSY
        ncand, path = self.pick_batch()
        self.one("SELECT coord.unlock(%s)", self.index)
        if ncand == 0:
            return NOTHING_LEFT
        if path is None:
            return BUSY  # every candidate is being worked on
        self.work_on(path)
        return DONE

    def run_procedure_2(self):
        if not self.lock_index():
            return BUSY
        self.log(f"holding {self.index}")
        done = 0
        while True:
            ncand, path = self.pick_batch()
            if ncand == 0:
                break
            if path is None:  # a procedure-1 worker has it
                time.sleep(0.05)
                continue
            self.work_on(path)
            done += 1
        self.one("SELECT coord.unlock(%s)", self.index)
        self.log(f"released {self.index} after {done} batches")
        return DONE if done else NOTHING_LEFT


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-c", dest="component", required=True)
    ap.add_argument("-p", dest="procedure", type=int, choices=(1, 2), required=True)
    ap.add_argument("-w", dest="worker", required=True)
    ap.add_argument("-t", dest="work_ms", type=int, default=300)
    ap.add_argument("-n", dest="candidates", type=int, default=10)
    ap.add_argument("-i", dest="index_timeout", type=int, default=30)
    ap.add_argument("-o", dest="once", action="store_true")
    args = ap.parse_args()

    c = Component(args)
    run = c.run_procedure_1 if args.procedure == 1 else c.run_procedure_2
    c.log(f"component {c.component}, procedure {args.procedure}")
    while True:
        rc = run()
        if args.once or rc == NOTHING_LEFT:
            break
        if rc == BUSY:
            time.sleep(0.1)
    c.log("nothing left, exiting" if rc == NOTHING_LEFT else "run done, exiting")
    c.conn.close()


if __name__ == "__main__":
    try:
        main()
    except psycopg2.Error as e:
        # like a crashed component: PostgreSQL releases whatever the session held
        print(f"ERROR: {e}".rstrip(), file=sys.stderr, flush=True)
        sys.exit(1)
