#!/usr/bin/env python3
"""test/deb/quickstart.py README.md: the README's quick start as a bash
script for test/deb/install.sh, run in the chroot by an ordinary user with
sudo, from the directory that holds the packages.

Steps 1, 2 and 4 are the README's commands verbatim, except that step 1's
first line is the one the README gives for the Debian package (with -y:
no terminal to answer apt), followed by starting the cluster, which systemd
does on a machine.  Step 3 is its psycopg 3 worker, with the driver's
package the README names, run from the directory the README names for the
package, in the background until a job is done.
Fails (exit 1) when a step's commands are not found."""
import re
import sys

readme = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"^## Quick start\n(.*?)^## ", readme, re.S | re.M)
if not m:
    sys.exit("no Quick start section")
steps = dict((int(s.group(1)), s.group(2)) for s in
             re.finditer(r"^(\d)\. (.*?)(?=^\d\. |^`make test` runs|\Z)", m.group(1), re.S | re.M))


def commands(n):
    # the step's indented code lines (7 spaces), not its fenced code block
    text = re.sub(r"^   ```.*?^   ```", "", steps.get(n, ""), flags=re.S | re.M)
    return [line[7:] for line in text.split("\n") if re.match(r"^       \S", line)]


def need(cond, what):
    if not cond:
        sys.exit("quick start: " + what)


step1, step2, step4 = commands(1), commands(2), commands(4)
need(len(step1) == 3 and step1[0] == "make && sudo make install", "step 1 is not make && sudo make install and two more lines")
pkg = re.search(r"With the Debian package, the first line is\s+`([^`]+)`", steps[1])
need(pkg and pkg.group(1).startswith("sudo apt install ./postgresql-15-pg-coord_"), "step 1 names no apt install of the package")
need(len(step2) >= 3, "step 2 has no commands")
need(len(step4) >= 3, "step 4 has no commands")
worker = [c for c in commands(3) if "worker_psycopg3.py" in c]
need(len(worker) == 1, "step 3 has no psycopg 3 worker line")
driver = re.search(r"Their drivers on\s+Debian:\s+`([^`]+)`", steps[3])
need(driver and "psycopg" in driver.group(1), "step 3 names no Debian package for psycopg 3")
docdir = re.search(r"`cd (/usr/share/doc/postgresql-15-pg-coord)` first", steps[3])
need(docdir, "step 3 does not say where the package's examples are")

out = ["PS4='+ [${SECONDS}s] '", "set -e", "t0=$SECONDS", "# 1."]
out.append(pkg.group(1).replace("apt install ", "apt install -y ", 1))
out.append("sudo pg_ctlcluster 15 main start    # systemd's job on a machine")
out += step1[1:]
out.append("# 2.")
out += step2
out.append("# 3.")
out.append("sudo apt install -y " + driver.group(1))
out.append("cd " + docdir.group(1))
out.append(worker[0] + " >/tmp/quickstart-worker.log 2>&1 &")
out.append("worker=$!")
out.append("""for i in $(seq 1 600); do
  n=$(sudo -u postgres psql -d app -XAtc "SELECT count(*) FROM coord.jobs WHERE state = 'done'")
  [ "$n" -ge 1 ] && break
  kill -0 $worker || { cat /tmp/quickstart-worker.log; exit 1; }
  sleep 0.1
done
[ "$n" -ge 1 ] || { echo "quickstart: no job done 60 s after the worker started"; cat /tmp/quickstart-worker.log; exit 1; }
echo "quickstart: a job done $((SECONDS - t0)) s after apt install began"
kill $worker""")
out.append("# 4.")
out += step4
print("\n".join(out))
