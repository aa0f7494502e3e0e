"""What the browser tests (test_page.py, test_browsers.py, test_grid.py) share: the processes
they start — each in a process group of its own (a browser's driver holds its content
processes), ended however the test ends, SIGTERM and SIGINT too — and the viewfinder each
starts: 127.0.0.1, port 0, a temporary config, photos and movies in its directory.

VIEWFINDER_BIN (or VIEWFINDER_BINARY) picks the server binary, .build/debug/viewfinder by default.
"""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("VIEWFINDER_BIN") or os.environ.get("VIEWFINDER_BINARY") or ROOT / ".build/debug/viewfinder")

CHILDREN = {}
TEMPS = set()


def spawn(args, **kwargs):
    p = subprocess.Popen(args, start_new_session=True, **kwargs)
    CHILDREN[p.pid] = p
    return p


def end(p, grace=10):
    """Ends Popen `p` and its process group: SIGTERM, then SIGKILL to what is left after `grace` s."""
    CHILDREN.pop(p.pid, None)
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        p.wait(grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(p.pid, signal.SIGKILL)  # the leader's, or what outlived it
    except ProcessLookupError:
        pass
    p.wait()


def temporary(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    TEMPS.add(d)
    return d


def clean_up():
    for pid in list(CHILDREN):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    CHILDREN.clear()
    for d in list(TEMPS):
        shutil.rmtree(d, ignore_errors=True)
    TEMPS.clear()


def on_signal(signum, _frame):
    clean_up()
    os._exit(128 + signum)


def handle_signals():
    """A test killed (SIGTERM, SIGINT, SIGHUP) leaves no browser, server or directory behind."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)


def until(condition, message, timeout=10, every=0.05):
    """condition()'s first truthy value, polled until the deadline; else fails with `message`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{message}: not within {timeout} s (last: {value!r})")
        time.sleep(every)


class Viewfinder:
    """The built viewfinder on 127.0.0.1, port 0: `settings` (config.json's, with photos,
    movies and RTSP's port 0 added) and `args` (more flags)."""

    def __init__(self, settings, args=(), prefix="vf-browser-"):
        if not BINARY.exists():
            raise RuntimeError(f"{BINARY} is not built (VIEWFINDER_BIN picks another)")
        self.dir = temporary(prefix)
        config = Path(self.dir) / "config.json"
        config.write_text(json.dumps({"capture": {"directory": str(Path(self.dir) / "photos")},
                                      "recording": {"directory": str(Path(self.dir) / "movies")},
                                      "rtsp": {"port": 0}, **settings}))
        self.proc = spawn([str(BINARY), "--config", str(config), "--port", "0", *args,
                           "--public-directory", str(ROOT / "Public"), "--log-level", "warning"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline().decode() if ready else ""
        found = re.search(r"127\.0\.0\.1:(\d+)", line)
        if not found:
            self.stop()
            raise RuntimeError(f"viewfinder did not start in 60 s: {line!r}")
        self.port = int(found.group(1))
        self.url = f"http://127.0.0.1:{self.port}/"

    def get(self, path):
        with urllib.request.urlopen(self.url.rstrip("/") + path, timeout=10) as r:
            return json.loads(r.read())

    def stop(self):
        self.proc.stdout.close()
        end(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)
        TEMPS.discard(self.dir)


class TimedResult(unittest.TextTestResult):
    """unittest's verbose result, keeping each test's seconds (`seconds`: [(s, test id)])."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seconds, self.began = [], 0.0

    def startTest(self, test):
        self.began = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        self.seconds.append((time.monotonic() - self.began, test.id().removeprefix("__main__.")))


def run(name):
    """Runs the calling script's tests with the signals handled and everything it started
    ended; prints `name: n passed, m failed in s` and exits 1 when one failed."""
    import sys
    handle_signals()
    # Every temporary file of the run under one directory that goes with it: Chromium's too
    # (a browser a test kills leaves its /tmp/org.chromium.Chromium.* behind otherwise).
    os.environ["TMPDIR"] = temporary(f"vf-{name}-")
    tempfile.tempdir = None  # tempfile reads TMPDIR again
    started = time.monotonic()
    try:
        result = unittest.main(module="__main__", exit=False, verbosity=2, testRunner=unittest.TextTestRunner(
            resultclass=TimedResult, verbosity=2)).result
    finally:
        clean_up()
    # Where a run's time goes, slowest first: CI's time is a budget (issue 45).
    for seconds, test in sorted(getattr(result, "seconds", []), reverse=True):
        print(f"  {seconds:6.1f} s  {test}")
    failed = len({getattr(test, "test_case", test).id() for test, _ in result.failures + result.errors})  # subtests: their test
    print(f"{name}: {result.testsRun - failed} passed, {failed} failed in {time.monotonic() - started:.0f} s")
    sys.exit(1 if failed else 0)
