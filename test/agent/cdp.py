"""A small Chrome DevTools Protocol client for the dashboard's browser tests
(test/agent/dashboard.py): Debian's headless chromium, driven over
--remote-debugging-pipe (file descriptors 3 and 4, messages ended by NUL), so
no port, no websocket and no package beyond the standard library.

    with Browser(outdir) as b:
        b.goto("http://127.0.0.1:8080/")       # waits for the load event
        b.eval("document.title")                # a value (returnByValue)
        b.click("form[action='/jobs/3/retry'] button")   # and waits for the next page
        b.screenshot("queues.png")              # the whole page
        b.console_errors                        # console errors, exceptions,
                                                # failed loads, CSP violations

Every wait has a deadline (a loaded 2-core machine is slow, so they are
generous); a deadline passed raises TimeoutError.  A JavaScript dialog
(alert, confirm: what an XSS would open) is dismissed and recorded as a
console error.
"""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    for path in ("/usr/bin/chromium", "/usr/lib/chromium/chromium"):
        if os.access(path, os.X_OK):
            return path
    return None


class Browser:
    def __init__(self, width=1280, height=860, timeout=30.0):
        self.width = width
        self.height = height
        self.timeout = timeout
        self.console_errors = []
        self._next_id = 0
        self._events = []
        self._buf = b""
        self.session = None

    def __enter__(self):
        exe = find_chromium()
        if not exe:
            raise RuntimeError("no chromium on PATH (Debian package chromium)")
        self.profile = tempfile.mkdtemp(prefix="coord-chromium.")
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()
        args = [exe, "--headless=new", "--remote-debugging-pipe", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-sync", "--disable-dev-shm-usage",
                "--disable-component-update", "--mute-audio", "--hide-scrollbars",
                "--user-data-dir=" + self.profile, f"--window-size={self.width},{self.height}",
                "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")   # chromium refuses root without it (CI runs as root)

        def child_fds():
            # through fresh descriptors: dup2 onto itself would keep close-on-exec
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(args, preexec_fn=child_fds, close_fds=False,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.profile, "stderr.log"), "wb"))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        return self

    def __exit__(self, *exc):
        try:
            self.call("Browser.close", session=False, timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def stderr_tail(self):
        try:
            with open(os.path.join(self.profile, "stderr.log"), "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""

    # ---------- the pipe ----------

    def _send(self, msg):
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self._w, data)
            data = data[n:]

    def _read_one(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed its pipe (crashed?): " + self.stderr_tail())
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        msg = json.loads(raw)
        if "method" in msg:
            self._event(msg)
        return msg

    def _event(self, msg):
        m, p = msg["method"], msg.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.console_errors.append("console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.console_errors.append("exception: %s %s" % (d.get("text", ""),
                                       d.get("exception", {}).get("description", "")))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            self.console_errors.append("log: %s %s" % (e.get("text", ""), e.get("url", "")))
        elif m == "Page.javascriptDialogOpening":
            self.console_errors.append("dialog: %s %s" % (p.get("type"), p.get("message")))
            self._send({"id": self._new_id(), "sessionId": self.session,
                        "method": "Page.handleJavaScriptDialog", "params": {"accept": False}})
        self._events.append(msg)

    def _new_id(self):
        self._next_id += 1
        return self._next_id

    def call(self, method, params=None, session=True, timeout=None):
        mid = self._new_id()
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self._send(msg)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._read_one(deadline)
            if reply.get("id") == mid:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})

    def wait_event(self, method, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, e in enumerate(self._events):
                if e["method"] == method:
                    del self._events[:i + 1]
                    return e
            self._events.clear()
            self._read_one(deadline)

    # ---------- pages ----------

    def goto(self, url):
        self._events.clear()
        res = self.call("Page.navigate", {"url": url})
        if res.get("errorText"):
            raise RuntimeError("navigate %s: %s" % (url, res["errorText"]))
        self.wait_event("Page.loadEventFired")

    def eval(self, expr):
        res = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                             "awaitPromise": True})
        if "exceptionDetails" in res:
            raise RuntimeError("eval %r: %s" % (expr, res["exceptionDetails"].get("text")))
        return res.get("result", {}).get("value")

    def click(self, selector):
        """Clicks the element (a submit button) and waits for the page it loads."""
        self._events.clear()
        found = self.eval("(function(){var e=document.querySelector(%s);"
                          "if(!e)return false;e.click();return true})()" % json.dumps(selector))
        if not found:
            raise RuntimeError("no element matches %s" % selector)
        self.wait_event("Page.loadEventFired")

    def screenshot(self, path, max_height=2400):
        """The whole page (up to max_height CSS pixels) as a PNG."""
        h = self.eval("Math.ceil(document.documentElement.scrollHeight)") or self.height
        h = max(self.height, min(int(h), max_height))
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": h, "deviceScaleFactor": 1, "mobile": False})
        try:
            data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        finally:
            self.call("Emulation.setDeviceMetricsOverride",
                      {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                       "mobile": False})
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
