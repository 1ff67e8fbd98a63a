"""A client holding a session lock is killed with SIGKILL while another
waits: the waiter must get the lock, and nothing of the dead holder may be
left.  Prints how long the hand-over took (measured, not asserted: the bench
owns speed; the bound here only catches a lock that is never freed)."""
import os
import signal
import sys
import time

from crash_common import connect, hand_over, idle_psql, scratch_db, summary

DB = "coord_crash_locks"
PATH = "/crash/component/B1-RT1"
ROUNDS = 5


def one_round(mon):
    holder = idle_psql(DB, "crash-holder", f"SELECT coord.lock('{PATH}');\n\\echo held\n")
    while holder.stdout.readline().strip() != "held":
        pass

    def waiter(result):
        conn = connect(DB, app="crash-waiter")
        cur = conn.cursor()
        cur.execute("SELECT coord.lock(%s)", (PATH,))
        if not cur.fetchone()[0]:
            return
        result["at"] = time.monotonic()
        # the dead backend lets go of its locks one lock partition at a time,
        # so its ancestors' intention locks may outlive the path's by a moment
        deadline = time.monotonic() + 2
        while True:
            cur.execute("SELECT count(*) FROM coord.locks WHERE pid <> pg_backend_pid()")
            result["others"] = cur.fetchone()[0]
            if result["others"] == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        cur.execute("SELECT coord.unlock(%s)", (PATH,))
        conn.close()

    def kill():
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()

    result, ms = hand_over(
        mon, waiter,
        "SELECT count(*) FROM coord.locks WHERE NOT granted AND application_name = 'crash-waiter'",
        kill)
    if result["others"] != 0:
        sys.exit(f"FAIL: {result['others']} lock rows of the dead holder were left")
    return ms


def main():
    with scratch_db(DB) as mon:
        cur = mon.cursor()
        times = [one_round(cur) for _ in range(ROUNDS)]
    print(f"holder SIGKILLed -> waiter holds the lock: {summary(times)} over {ROUNDS} rounds")


if __name__ == "__main__":
    main()
