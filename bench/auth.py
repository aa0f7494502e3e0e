#!/usr/bin/python3
"""The cost of authentication per request (`make bench` runs it; writes bench/RESULTS-auth.md).

One viewfinder process per mode, the same request (GET /api/session) over one keep-alive
connection, 400 requests a run, 5 runs; the figure is the median per-request time of the
runs' medians, and the cost is that minus the same figure without authentication, measured
in the same session on the same machine. Basic's first request pays yescrypt (reported on
its own); later ones hit the server's 5-minute cache of verified headers. Digest is
checked by libmicrohttpd on every request (requests' HTTPDigestAuth reuses the nonce with
an increasing nc, as browsers do).
"""
import crypt
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import requests
from requests.auth import HTTPBasicAuth, HTTPDigestAuth

sys.path.insert(0, str(Path(__file__).resolve().parent))
import server  # noqa: E402  (bench/server.py: the one start of the server)

ROOT = Path(__file__).resolve().parents[1]
BINARY = server.BIN
REQUESTS, RUNS = 400, 5


def user(name, password, realm="Viewfinder"):
    warnings.simplefilter("ignore", DeprecationWarning)
    ha1 = f"{name}:{realm}:{password}".encode()
    # yescrypt as `viewfinder user add` writes it, made by the binary itself
    cfg = Path(tempfile.mkdtemp()) / "c.json"
    cfg.write_text("{}")
    subprocess.run([str(BINARY), "user", "add", name, "--role", "operator", "--config", str(cfg)],
                   input=password + "\n", text=True, check=True, capture_output=True)
    return json.loads(cfg.read_text())["auth"]["users"][0]


def start(auth):
    d = tempfile.mkdtemp(prefix="vf-bench-auth-")
    cfg = Path(d) / "config.json"
    settings = {"capture": {"directory": d + "/photos"}}
    if auth:
        settings["auth"] = auth
    cfg.write_text(json.dumps(settings))
    p, port, _ = server.start_server(["--config", str(cfg), "--port", "0", "--cameras", "synthetic", "--preset", "352x288"],
                                     d, log_level="error")
    return p, port


def per_request(port, auth):
    s = requests.Session()
    url = f"http://127.0.0.1:{port}/api/session"
    first_start = time.perf_counter()
    r = s.get(url, auth=auth, timeout=10)
    first = time.perf_counter() - first_start
    assert r.status_code == 200, r.status_code
    runs = []
    for _ in range(RUNS):
        times = []
        for _ in range(REQUESTS):
            t = time.perf_counter()
            r = s.get(url, auth=auth, timeout=10)
            times.append(time.perf_counter() - t)
            assert r.status_code == 200
        runs.append(statistics.median(times))
    return statistics.median(runs) * 1e6, first * 1e6


def main():
    ann = user("ann", "pass word")
    figures = {}
    for mode, auth_config, client in (("none", None, None),
                                      ("basic", {"users": [ann]}, HTTPBasicAuth("ann", "pass word")),
                                      ("digest", {"users": [ann]}, HTTPDigestAuth("ann", "pass word"))):
        p, port = start(auth_config)
        try:
            figures[mode] = per_request(port, client)
        finally:
            server.stop_server(p)
    base = figures["none"][0]
    lines = ["# Authentication cost per request", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}; "
             f"release build; {time.strftime('%Y-%m-%d')}.", "",
             "Command: `make bench` (bench/auth.py): GET /api/session over one keep-alive connection "
             f"(python-requests), {REQUESTS} requests a run, median of {RUNS} runs' medians. "
             "The reference is the same request without authentication, measured in the same run.", "",
             "| mode | µs per request | cost of auth (µs) | first request (µs) |", "|---|---|---|---|"]
    for mode in ("none", "basic", "digest"):
        t, first = figures[mode]
        lines.append(f"| {mode} | {t:.0f} | {t - base:+.0f} | {first:.0f} |")
    lines += ["", "Basic's first request includes the yescrypt verification; later ones are answered from "
              "the cache of verified headers. Digest is checked by libmicrohttpd on each request "
              "(the client side of Digest, computing the response, is part of the figure too).", ""]
    (ROOT / "bench/RESULTS-auth.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
