#!/usr/bin/env python3
"""What HTTPS costs: server CPU for 10 `/stream` viewers at 1280x720@30 (synthetic camera),
plain HTTP vs TLS (server.tls, a self-signed RSA-2048 certificate), with curl as the viewer
in both. Each run: the server's utime+stime from /proc/PID/stat over SECONDS after a 1 s
warm-up; runs alternate plain/TLS; the figure is the median of RUNS.

`bench/run` (make bench) calls `bench_tls()` from bench.py; `python3 bench/tls.py` runs only
this and rewrites its section of bench/RESULTS.md.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import results  # noqa: E402  (bench/results.py: a section of RESULTS.md)
import server  # noqa: E402  (bench/server.py: the one start of the server)
from procfs import cpu_seconds  # noqa: E402  (bench/procfs.py)

ROOT = Path(__file__).resolve().parent.parent
VIEWERS = int(os.environ.get("BENCH_TLS_VIEWERS", "10"))
SECONDS = float(os.environ.get("BENCH_TLS_SECONDS", "20"))
RUNS = int(os.environ.get("BENCH_TLS_RUNS", "3"))
HEADING = "## Plain HTTP vs TLS: 10 viewers at 1280x720, 30 fps"


def start(config, workdir, scheme):
    p, port, _ = server.start_server(["--config", config, "--port", "0", "--cameras", "synthetic", "--preset", "1280x720",
                                      "--fps", "30", "--public-directory", str(ROOT / "Public")], workdir)
    return p, scheme, port


def one_run(scheme, port, pid, cert):
    """Server CPU % of one core and the median MB/s per viewer."""
    url = f"{scheme}://127.0.0.1:{port}/stream"
    viewers = [subprocess.Popen(["curl", "-sS", "-N", "--cacert", cert, "--max-time", str(SECONDS + 1.5),
                                 "-o", "/dev/null", "-w", "%{size_download}", url],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
               for _ in range(VIEWERS)]
    time.sleep(1.0)
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(SECONDS)
    c1, t1 = cpu_seconds(pid), time.monotonic()
    sizes = [int(v.communicate(timeout=30)[0] or 0) for v in viewers]
    return (c1 - c0) / (t1 - t0) * 100, statistics.median(sizes) / (SECONDS + 1.5) / 1e6


def bench_tls():
    work = tempfile.mkdtemp(prefix="vf-bench-tls-")
    cert, key = f"{work}/cert.pem", f"{work}/key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    configs = {"plain": f"{work}/plain.json", "tls": f"{work}/tls.json"}
    Path(configs["plain"]).write_text("{}")
    Path(configs["tls"]).write_text(f'{{"server": {{"tls": {{"certificate": "{cert}", "key": "{key}"}}}}}}')
    results = {"plain": [], "tls": []}
    for _ in range(RUNS):
        for mode in ("plain", "tls"):
            p, scheme, port = start(configs[mode], work, "https" if mode == "tls" else "http")
            try:
                results[mode].append(one_run(scheme, port, p.pid, cert))
            finally:
                server.stop_server(p)
    return {m: dict(cpu=statistics.median(r[0] for r in rs), runs=[r[0] for r in rs],
                    mbps=statistics.median(r[1] for r in rs)) for m, rs in results.items()}


def markdown(r):
    plain, tls = r["plain"], r["tls"]
    runs = lambda m: ", ".join(f"{c:.1f}" for c in r[m]["runs"])
    return [
        HEADING,
        "",
        f"Command: `viewfinder --preset 1280x720 --fps 30` with {VIEWERS} `curl -N URL/stream` viewers, "
        f"plain HTTP and then `server.tls` (self-signed RSA-2048; TLS 1.3, AES-256-GCM as negotiated "
        f"by curl/OpenSSL and GnuTLS), alternating, {RUNS} runs each. CPU is the server process's "
        f"user+system time from `/proc/PID/stat` over {SECONDS:.0f} s after a 1 s warm-up, in % of "
        f"one core; median of the runs (each run listed). Reference: the same viewers over plain HTTP. "
        "The curl viewers run on the same 2 cores (they decrypt too), so this is a loaded machine.",
        "",
        "| transport | server CPU % of one core (median) | runs | MB/s per viewer (median) |",
        "|---|---|---|---|",
        f"| plain HTTP | {plain['cpu']:.1f} | {runs('plain')} | {plain['mbps']:.2f} |",
        f"| TLS | {tls['cpu']:.1f} | {runs('tls')} | {tls['mbps']:.2f} |",
        "",
        f"TLS costs {tls['cpu'] - plain['cpu']:.1f} points of one core more for {VIEWERS} viewers "
        f"(ratio {tls['cpu'] / plain['cpu']:.2f}): the frames are encoded once either way; "
        "TLS adds the per-viewer encryption of every byte sent.",
        "",
    ]


def main():
    r = bench_tls()
    section = markdown(r)
    print("\n".join(section))
    results.write_section(HEADING, section)


if __name__ == "__main__":
    sys.exit(main())
