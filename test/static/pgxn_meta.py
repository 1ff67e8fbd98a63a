#!/usr/bin/env python3
"""Static check: META.json against the PGXN Meta Spec 1.0.0, and true to the
code.  Python 3, standard library only.

    python3 test/static/pgxn_meta.py ROOT            the tree at ROOT (make test)
    python3 test/static/pgxn_meta.py --zip FILE.zip  a PGXN archive (make dist)

The spec (https://pgxn.org/meta/spec.txt), as checked here:
  - required keys name, version, abstract, maintainer, license, provides,
    meta-spec; optional description, generated_by, tags, no_index, prereqs,
    release_status, resources; custom keys start with x_ or X_; no others;
  - name and the keys of provides and of prerequisite lists are Terms (at
    least two characters, no slash, backslash, blank or control character);
  - versions are SemVer 2.0.0 (1.2.3, 1.2.3-beta.1, 1.2.3+build);
  - license is one of the spec's shortcuts, a list of them, or an object
    of name -> URI;
  - maintainer is a non-empty string or list of them;
  - provides maps each extension to {file, version[, abstract, docfile]};
  - prereqs maps phases (configure build test runtime develop) to
    relationships (requires recommends suggests conflicts) to
    {term: version range}; a range is 0 or [op] version[, [op] version]...;
  - release_status is stable, testing or unstable;
  - resources has homepage (URI), bugtracker {web URI and/or mailto},
    repository {url + type and/or web};
  - tags are 2-255 characters without slash, backslash or control chars;
  - no_index lists file and/or directory paths;
  - meta-spec.version is 1.0.x (and url, if given, the spec's).
And for this project: the version is the control file's default_version,
META.json is META.json.in with that version filled in, every provides file
and docfile exists (or the Makefile builds it), a maintainer has an
<address>, pg_cron is a recommended runtime prerequisite; for an archive,
every entry is under one directory <name>-<version>/, the build's files and
every file of sql/released.sha256 are in it (and, for a stable release, the
provides file itself), and nothing a build, a test run or a developer's
machine leaves (.env.sh, test/results/, deb/, objects, archives).  Placeholder
addresses (example.org, .example) are listed, not refused: the project has
no public URL.

Before checking, it makes sure it can fail: known-bad variants of the
document must each be refused.  Prints "pgxn_meta: ..." last; exit 0 if
valid, else 1.
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import zipfile

SEMVER = (r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
          r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
          r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?")
SEMVER_RE = re.compile("^" + SEMVER + "$")
RANGE_PART = re.compile(r"^(?:(?:[=!]=|[<>]=?)\s*)?(?:" + SEMVER + r")$")
TERM_RE = re.compile(r"^[^/\\\s\x00-\x1f\x7f]{2,}$")
TAG_RE = re.compile(r"^[^/\\\x00-\x1f\x7f]{2,255}$")
EMAIL_RE = re.compile(r"^[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+$")
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd", "gfdl_1_2",
    "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit", "mozilla_1_0", "mozilla_1_1",
    "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay", "sun", "zlib", "open_source", "restricted",
    "unrestricted", "unknown",
}
REQUIRED = ["name", "version", "abstract", "maintainer", "license", "provides", "meta-spec"]
OPTIONAL = ["description", "generated_by", "tags", "no_index", "prereqs", "release_status", "resources"]
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}
SPEC_URLS = {"https://pgxn.org/meta/spec.txt", "http://pgxn.org/meta/spec.txt"}


def custom(key):
    return isinstance(key, str) and re.match(r"^[xX]_.", key) is not None


class Checker:
    def __init__(self):
        self.errors = []

    def err(self, where, msg):
        self.errors.append("%s: %s" % (where, msg))

    def string(self, where, v, min_len=1):
        if not isinstance(v, str):
            self.err(where, "must be a string, not %s" % type(v).__name__)
            return False
        if len(v) < min_len:
            self.err(where, "must have at least %d character(s)" % min_len)
            return False
        return True

    def obj(self, where, v, allowed=None, required=(), min_props=0):
        if not isinstance(v, dict):
            self.err(where, "must be an object, not %s" % type(v).__name__)
            return False
        for k in required:
            if k not in v:
                self.err(where, "lacks the required key %r" % k)
        if allowed is not None:
            for k in v:
                if k not in allowed and not custom(k):
                    self.err(where, "has the unknown key %r (custom keys start with x_)" % k)
        if len(v) < min_props:
            self.err(where, "must not be empty")
        return True

    def term(self, where, v):
        if self.string(where, v, 2) and not TERM_RE.match(v):
            self.err(where, "%r is no Term (no slash, backslash, blank or control character)" % v)

    def version(self, where, v):
        if self.string(where, v) and not SEMVER_RE.match(v):
            self.err(where, "%r is not a semantic version (x.y.z)" % v)

    def uri(self, where, v):
        if self.string(where, v):
            u = urllib.parse.urlsplit(v)
            if not u.scheme or not (u.netloc or u.scheme == "mailto") or " " in v:
                self.err(where, "%r is not an absolute URI" % v)

    def email(self, where, v):
        if self.string(where, v) and not EMAIL_RE.match(v):
            self.err(where, "%r is not an email address" % v)

    def path(self, where, v):
        if self.string(where, v, 2) and (v.startswith("/") or "\\" in v or ".." in v.split("/")):
            self.err(where, "%r is not a relative path in unix form" % v)

    def version_range(self, where, v):
        if v == 0 and not isinstance(v, bool):
            return
        if not isinstance(v, str):
            self.err(where, "must be a version range string or 0")
            return
        if v == "0":
            return
        for part in v.split(","):
            if not RANGE_PART.match(part.strip()):
                self.err(where, "%r is not a version range (0, 1.2.3, >= 1.2.3, ...)" % v)
                return

    def check(self, m):
        if not self.obj("META.json", m, REQUIRED + OPTIONAL + ["meta-spec"], REQUIRED):
            return
        if "name" in m:
            self.term("name", m["name"])
        if "version" in m:
            self.version("version", m["version"])
        for k in ("abstract", "description", "generated_by"):
            if k in m:
                self.string(k, m[k])
        if "maintainer" in m:
            v = m["maintainer"]
            if isinstance(v, list):
                if not v:
                    self.err("maintainer", "must not be an empty list")
                for i, x in enumerate(v):
                    self.string("maintainer[%d]" % i, x)
            else:
                self.string("maintainer", v)
        if "license" in m:
            v = m["license"]
            if isinstance(v, str):
                if v not in LICENSES:
                    self.err("license", "%r is not one of the spec's license shortcuts" % v)
            elif isinstance(v, list):
                if not v:
                    self.err("license", "must not be an empty list")
                for i, x in enumerate(v):
                    if x not in LICENSES:
                        self.err("license[%d]" % i, "%r is not one of the spec's license shortcuts" % (x,))
            elif isinstance(v, dict):
                if not v:
                    self.err("license", "must not be empty")
                for k, x in v.items():
                    self.uri("license.%s" % k, x)
            else:
                self.err("license", "must be a shortcut, a list of them, or an object of URIs")
        if "provides" in m and self.obj("provides", m["provides"], None, (), 1):
            for ext, e in m["provides"].items():
                w = "provides.%s" % ext
                self.term(w + " (name)", ext)
                if self.obj(w, e, ["file", "version", "abstract", "docfile", "docpath"], ["file", "version"]):
                    if "file" in e:
                        self.path(w + ".file", e["file"])
                    if "docfile" in e:
                        self.path(w + ".docfile", e["docfile"])
                    if "version" in e:
                        self.version(w + ".version", e["version"])
                    for k in ("abstract", "docpath"):
                        if k in e:
                            self.string(w + "." + k, e[k])
        if "meta-spec" in m and self.obj("meta-spec", m["meta-spec"], ["version", "url"], ["version"]):
            ms = m["meta-spec"]
            if "version" in ms and self.string("meta-spec.version", ms["version"]):
                if not re.match(r"^1\.0\.\d+$", ms["version"]):
                    self.err("meta-spec.version", "%r: this checks spec 1.0.x" % ms["version"])
            if "url" in ms and ms["url"] not in SPEC_URLS:
                self.err("meta-spec.url", "%r is not the spec's URL" % ms["url"])
        if "tags" in m:
            v = m["tags"]
            if not isinstance(v, list) or not v:
                self.err("tags", "must be a non-empty list")
            else:
                for i, t in enumerate(v):
                    if not isinstance(t, str) or not TAG_RE.match(t):
                        self.err("tags[%d]" % i, "%r is no tag (2-255 characters, no slash, backslash, control)" % (t,))
        if "no_index" in m and self.obj("no_index", m["no_index"], ["file", "directory"]):
            ni = m["no_index"]
            if "file" not in ni and "directory" not in ni:
                self.err("no_index", "needs file or directory")
            for k in ("file", "directory"):
                if k in ni:
                    v = ni[k]
                    items = v if isinstance(v, list) else [v]
                    if isinstance(v, list) and (not v or len(set(map(str, v))) != len(v)):
                        self.err("no_index." + k, "must be a non-empty list of distinct paths")
                    for i, x in enumerate(items):
                        self.path("no_index.%s[%d]" % (k, i), x)
        if "prereqs" in m and self.obj("prereqs", m["prereqs"], sorted(PHASES), (), 1):
            for phase, rels in m["prereqs"].items():
                if custom(phase):
                    continue
                w = "prereqs.%s" % phase
                if self.obj(w, rels, sorted(RELATIONS), (), 1):
                    for rel, deps in rels.items():
                        if custom(rel):
                            continue
                        if self.obj(w + "." + rel, deps, None, (), 1):
                            for dep, rng in deps.items():
                                self.term("%s.%s.%s (name)" % (w, rel, dep), dep)
                                self.version_range("%s.%s.%s" % (w, rel, dep), rng)
        if "release_status" in m and m["release_status"] not in ("stable", "testing", "unstable"):
            self.err("release_status", "%r is not stable, testing or unstable" % (m["release_status"],))
        if "resources" in m and self.obj("resources", m["resources"], ["homepage", "bugtracker", "repository"], (), 1):
            r = m["resources"]
            if "homepage" in r:
                self.uri("resources.homepage", r["homepage"])
            if "bugtracker" in r and self.obj("resources.bugtracker", r["bugtracker"], ["web", "mailto"]):
                b = r["bugtracker"]
                if "web" not in b and "mailto" not in b:
                    self.err("resources.bugtracker", "needs web or mailto")
                if "web" in b:
                    self.uri("resources.bugtracker.web", b["web"])
                if "mailto" in b:
                    self.email("resources.bugtracker.mailto", b["mailto"])
            if "repository" in r and self.obj("resources.repository", r["repository"], ["url", "web", "type"]):
                p = r["repository"]
                if "web" not in p and not ("url" in p and "type" in p):
                    self.err("resources.repository", "needs web, or url and type")
                if "url" in p:
                    self.uri("resources.repository.url", p["url"])
                if "web" in p:
                    self.uri("resources.repository.web", p["web"])
                if "type" in p and self.string("resources.repository.type", p["type"]):
                    if p["type"] != p["type"].lower():
                        self.err("resources.repository.type", "must be lowercase (git, hg, svn, ...)")
        return self.errors


def spec_errors(m):
    return Checker().check(m) or []


def self_test(good):
    """Each variant breaks one rule: the checker must refuse every one."""
    def without(k):
        def f(m):
            del m[k]
        return f

    def setter(path, value):
        def f(m):
            d = m
            for k in path[:-1]:
                d = d.setdefault(k, {})
            d[path[-1]] = value
        return f

    ext = next(iter(good.get("provides", {"x": {}})))
    variants = [without(k) for k in REQUIRED] + [
        setter(["name"], "a"), setter(["name"], "pg coord"), setter(["version"], "0.2"),
        setter(["version"], "v0.2.0"), setter(["version"], "01.2.0"), setter(["abstract"], ""),
        setter(["maintainer"], []), setter(["maintainer"], 7), setter(["license"], "PostgreSQL"),
        setter(["license"], ["postgresql", "gpl"]), setter(["license"], {"PostgreSQL": "not a uri"}),
        setter(["provides"], {}), setter(["provides", ext, "version"], "1"),
        setter(["provides", ext, "file"], "/abs/path.sql"), setter(["provides", ext, "bogus"], 1),
        lambda m: m["provides"][ext].pop("file"),
        setter(["meta-spec", "version"], "2.0.0"), setter(["meta-spec", "url"], "https://example.org/"),
        setter(["prereqs", "install"], {"requires": {"PostgreSQL": "15.0.0"}}),
        setter(["prereqs", "runtime", "needs"], {"pg_cron": 0}),
        setter(["prereqs", "runtime", "requires", "PostgreSQL"], "15"),
        setter(["prereqs", "runtime", "requires", "PostgreSQL"], ">= 15.0.0, < 19"),
        setter(["prereqs", "runtime", "requires", "PostgreSQL"], 1),
        setter(["prereqs", "runtime", "recommends"], {}),
        setter(["release_status"], "beta"), setter(["resources"], {}),
        setter(["resources", "bugtracker"], {"x_note": "none"}),
        setter(["resources", "bugtracker", "mailto"], "not an address"),
        setter(["resources", "repository"], {"url": "https://example.org/r.git"}),
        setter(["resources", "repository", "type"], "Git"),
        setter(["resources", "wiki"], "https://example.org/"),
        setter(["tags"], []), setter(["tags"], ["a/b"]), setter(["no_index"], {"files": ["x"]}),
        setter(["unknown_key"], 1),
    ]
    missed = []
    for i, f in enumerate(variants):
        m = copy.deepcopy(good)
        f(m)
        if not spec_errors(m):
            missed.append(i)
    return len(variants), missed


def placeholders(v, where=""):
    """Addresses on reserved example domains (RFC 2606, RFC 6761)."""
    out = []
    if isinstance(v, dict):
        for k, x in v.items():
            out += placeholders(x, where + "." + k if where else k)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += placeholders(x, "%s[%d]" % (where, i))
    elif isinstance(v, str) and re.search(r"(?:[@./]|^)example(?:\.(?:org|com|net))?(?:[/>:]|$)", v):
        out.append(where)
    return out


def project_errors(root, m, raw, archive_names=None):
    """This project's rules: true to the control file, the Makefile and the tree."""
    errs = []
    control = open(os.path.join(root, "pg_coord.control"), encoding="utf-8").read()
    mv = re.search(r"^default_version\s*=\s*'([^']*)'", control, re.M)
    cver = mv.group(1) if mv else None
    if m.get("version") != cver:
        errs.append("version %r is not pg_coord.control's default_version %r" % (m.get("version"), cver))
    for ext, e in (m.get("provides") or {}).items():
        if isinstance(e, dict) and e.get("version") != cver:
            errs.append("provides.%s.version %r is not the control file's %r" % (ext, e.get("version"), cver))
    tmpl = os.path.join(root, "META.json.in")
    if os.path.exists(tmpl):
        want = open(tmpl, encoding="utf-8").read().replace("@EXTVERSION@", cver or "")
        if want != raw:
            errs.append("META.json is not META.json.in with the version filled in (run make META.json)")
    for ext, e in (m.get("provides") or {}).items():
        if not isinstance(e, dict):
            continue
        for k in ("file", "docfile"):
            f = e.get(k)
            if not isinstance(f, str) or os.path.exists(os.path.join(root, f)):
                continue
            # a script the Makefile builds (make -n knows a rule for it) is there after make
            r = subprocess.run(["make", "-s", "-n", "-C", root, f], capture_output=True, text=True)
            if r.returncode != 0:
                errs.append("provides.%s.%s %r is neither in the tree nor built by the Makefile" % (ext, k, f))
    if not any(re.search(r"<[^<>@\s]+@[^<>\s]+>", x) for x in
               (m.get("maintainer") if isinstance(m.get("maintainer"), list) else [m.get("maintainer")])
               if isinstance(x, str)):
        errs.append("maintainer: no entry has a contact address (Name <address>)")
    rec = ((m.get("prereqs") or {}).get("runtime") or {}).get("recommends") or {}
    if "pg_cron" not in rec:
        errs.append("prereqs.runtime.recommends lacks pg_cron (coord.cron_install and coord.tick use it)")
    if archive_names is not None:
        top = "%s-%s/" % (m.get("name"), m.get("version"))
        stray = [n for n in archive_names if not n.startswith(top)]
        if stray:
            errs.append("archive entries outside %s: %s" % (top, ", ".join(stray[:5])))
        if top + "META.json" not in archive_names:
            errs.append("the archive has no %sMETA.json" % top)
        # what a build needs is in it, and nothing a build, a test run or a
        # developer's machine leaves (git archive takes tracked files only)
        inner = {n[len(top):] for n in archive_names if n.startswith(top)}
        for need in ("Makefile", "pg_coord.control", "LICENSE", "README.md", "sql/released.sha256"):
            if need not in inner:
                errs.append("the archive has no %s" % need)
        released = os.path.join(root, "sql/released.sha256")
        if os.path.exists(released):
            for line in open(released, encoding="utf-8"):
                parts = line.split()
                if len(parts) == 2 and not line.startswith("#") and parts[1] not in inner:
                    errs.append("the archive lacks the released file %s" % parts[1])
        if m.get("release_status") == "stable":
            for ext, e in (m.get("provides") or {}).items():
                if isinstance(e, dict) and e.get("file") not in inner:
                    errs.append("provides.%s.file %r: a stable release ships it, not a rule to build it"
                                % (ext, e.get("file")))
        junk = re.compile(r"^(\.env\.sh$|results/|test/results/|deb/|tmp_check/|regression\.(diffs|out)$)"
                          r"|(^|/)node_modules/|\.(o|so|bc|zip)$")
        bad = sorted(n for n in inner if junk.search(n))
        if bad:
            errs.append("the archive has what no release ships: %s" % ", ".join(bad[:5]))
    return errs


def try_dist(root):
    """In a git checkout with META.json committed: make dist into a temporary
    file (which checks the archive with --zip).  Returns (note, error)."""
    if shutil.which("git") is None:
        return "; no git on this machine (a test-matrix chroot): make dist not tried", None
    if subprocess.run(["git", "-C", root, "rev-parse", "--git-dir"], capture_output=True).returncode != 0:
        return "; not a git checkout: make dist not tried", None
    if subprocess.run(["git", "-C", root, "diff", "--quiet", "HEAD", "--", "META.json"]).returncode != 0:
        return "; META.json not committed: make dist not tried", None
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "dist.zip")
        r = subprocess.run(["make", "-s", "-C", root, "dist", "DIST=" + out, "DIST_REF=HEAD"],
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(out):
            return "", (r.stdout + r.stderr).strip()[-3000:]
        with zipfile.ZipFile(out) as z:
            n = len(z.namelist())
        return "; make dist of HEAD: %d entries, its META.json valid too" % n, None


def main():
    args = sys.argv[1:]
    archive = None
    if args[:1] == ["--zip"]:
        archive = args[1]
        tmp = tempfile.TemporaryDirectory()
        with zipfile.ZipFile(archive) as z:
            names = z.namelist()
            z.extractall(tmp.name)
        tops = sorted({n.split("/")[0] for n in names})
        root = os.path.join(tmp.name, tops[0]) if len(tops) == 1 else tmp.name
    else:
        root = args[0] if args else "."
        names = None
    path = os.path.join(root, "META.json")
    try:
        raw = open(path, encoding="utf-8").read()
        m = json.loads(raw)
    except (OSError, ValueError) as e:
        print("pgxn_meta: cannot read %s: %s" % (path, e))
        sys.exit(1)

    n_variants, missed = self_test(m)
    errs = spec_errors(m)
    errs += project_errors(root, m, raw, names)
    if missed:
        errs.append("self-test: %d of %d broken variants were accepted (numbers %s): the checker is wrong"
                    % (len(missed), n_variants, missed))
    if errs:
        for e in errs:
            print("pgxn_meta: " + e)
        print("pgxn_meta: %s: %d problems" % (archive or path, len(errs)))
        sys.exit(1)
    dist_note = ""
    if archive is None:
        dist_note, derr = try_dist(root)
        if derr:
            print("pgxn_meta: make dist failed:\n" + derr)
            print("pgxn_meta: make dist: 1 problem")
            sys.exit(1)
    ph = placeholders(m)
    print("pgxn_meta: %s valid (PGXN Meta Spec 1.0.0; %s %s, %s; %d broken variants refused)%s"
          % (os.path.basename(archive) if archive else "META.json", m["name"], m["version"],
             m.get("release_status", "stable"), n_variants,
             "; placeholders (no public URL): " + ", ".join(ph) if ph else "") + dist_note)


if __name__ == "__main__":
    main()
