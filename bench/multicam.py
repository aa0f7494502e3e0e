#!/usr/bin/env python3
"""Several cameras at once: server CPU for 1, 2 and 4 synthetic cameras at 1280x720@30,
each with its own session (config.json `cameras[]`, `autostart`), with one viewer per
camera on `/cameras/{id}/stream`, and with the same cameras running and no viewer at all
(a camera encodes only while it is watched).

Each run starts viewfinder with a temporary config of N cameras, waits until every camera
runs, then measures twice on that process: no viewer, then one viewer per camera. CPU is the
server's utime+stime from /proc/PID/stat over SECONDS after a 1 s warm-up. The viewers are
bench/out/viewers (C, one epoll loop, parts counted by their boundary), one process per
camera: the lightest reader we have, because on 2 cores the readers compete with the
server; their own CPU is measured over the same window and reported. Runs cycle
N = 1, 2, 4 so that drift on the machine falls on every N alike; figures are the median of
RUNS. Reference: the one-camera cost measured in the same run (ratio, per-camera cost).

`bench/run` (make bench) calls it after bench.py; `python3 bench/multicam.py` runs only
this and rewrites its section of bench/RESULTS.md.
"""
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import (ROOT, cpu_seconds, get, publish, require_binaries, start_server, stop_server,  # noqa: E402
                    threads, timed, viewer, viewer_fps, wait_until, written_by, encoded_by_camera)  # (bench/server.py)

COUNTS = tuple(int(n) for n in os.environ.get("BENCH_MULTICAM_COUNTS", "1 2 4").split())
SECONDS = float(os.environ.get("BENCH_MULTICAM_SECONDS", "5"))
RUNS = int(os.environ.get("BENCH_MULTICAM_RUNS", "3"))
HEADING = "## Several cameras: 1, 2 and 4 synthetic cameras at 1280x720, 30 fps"


encoded = encoded_by_camera  # (bench/server.py)


def write_config(work, n):
    ids = [f"c{i}" for i in range(n)]
    config = {
        "server": {"port": 0, "publicDirectory": str(ROOT / "Public")},
        "capture": {"directory": str(work / "photos")},
        "session": {"camera": ids[0]},
        "cameras": [{"id": i, "source": "synthetic", "position": "external", "autostart": True,
                     "preset": "1280x720", "fps": 30} for i in ids],
    }
    path = work / f"cameras-{n}.json"
    path.write_text(json.dumps(config, indent=1))
    return path, ids


def start(config, ids, workdir):
    def running(port):  # every camera's own session running
        wait_until(lambda: json.loads(get(port, "/api/cameras"))["cameras"],
                   lambda cams: sorted(c["id"] for c in cams if c["state"] == "running") == sorted(ids),
                   lambda cams: f"cameras not running: {[(c['id'], c['state']) for c in cams]}")
    p, port, _ = start_server(["--config", str(config)], workdir, running)
    return p, port


def measure(p, port, ids, watched):
    """One window: server CPU %, viewers' CPU %, per-camera fps received, per-camera fps encoded."""
    viewers = []
    if watched:
        viewers = [viewer(port, SECONDS + 0.5, f"/cameras/{i}/stream") for i in ids]
    time.sleep(1.0)  # warm-up (the viewers' own warm-up second)
    e0, te0 = encoded(port), time.monotonic()
    c0, v0, t0 = cpu_seconds(p.pid), sum(cpu_seconds(v.pid) for v in viewers), time.monotonic()
    time.sleep(SECONDS)
    c1, v1, t1 = cpu_seconds(p.pid), sum(cpu_seconds(v.pid) for v in viewers), time.monotonic()
    nthreads = threads(p.pid)
    e1, te1 = encoded(port), time.monotonic()
    fps = [viewer_fps(v) for v in viewers]
    if watched:
        time.sleep(0.5)  # let the closed viewers drain
    enc = [(e1[i] - e0[i]) / (te1 - te0) for i in ids]
    return dict(cpu=(c1 - c0) / (t1 - t0) * 100, viewerCpu=(v1 - v0) / (t1 - t0) * 100,
                fps=fps, encoded=enc, threads=nthreads)


def bench_multicam():
    work = Path(tempfile.mkdtemp(prefix="vf-bench-multicam-"))
    results = {(n, w): [] for n in COUNTS for w in (False, True)}
    try:
        for _ in range(RUNS):
            for n in COUNTS:
                config, ids = write_config(work, n)
                p, port = start(config, ids, work)
                try:
                    time.sleep(0.5)
                    for watched in (False, True):
                        results[(n, watched)].append(measure(p, port, ids, watched))
                finally:
                    stop_server(p)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = []
    for (n, watched), rs in results.items():
        rows.append(dict(n=n, watched=watched, cpu=statistics.median(r["cpu"] for r in rs),
                         runs=[r["cpu"] for r in rs],
                         viewerCpu=statistics.median(r["viewerCpu"] for r in rs),
                         fpsMin=statistics.median(min(r["fps"]) for r in rs) if watched else None,
                         fpsMedian=statistics.median(statistics.median(r["fps"]) for r in rs) if watched else None,
                         encoded=statistics.median(sum(r["encoded"]) for r in rs),
                         encodedMax=max(sum(r["encoded"]) for r in rs),
                         threads=max(r["threads"] for r in rs)))
    return rows


def markdown(rows, started, load):
    ref = next(r for r in rows if r["n"] == 1 and r["watched"])["cpu"]
    lines = [
        HEADING,
        "",
        written_by("multicam.py", started, load),
        "",
        "Command: `viewfinder --config FILE` where FILE lists N cameras "
        '`{"id": "cK", "source": "synthetic", "position": "external", "autostart": true, '
        '"preset": "1280x720", "fps": 30}` (each its own session, started at launch); '
        f"with one `bench/out/viewers PORT 1 {SECONDS + 0.5:g} /cameras/cK/stream` per camera "
        "(C, epoll, parts counted by their boundary), and then the same cameras with no viewer. "
        "CPU is the server process's user+system time from `/proc/PID/stat` over "
        f"{SECONDS:g} s after a 1 s warm-up, in % of one core; median of {RUNS} runs (each run "
        "listed), runs cycling N = 1, 2, 4 with a fresh server each. Reference: one camera with "
        "one viewer, measured in the same run. The viewers run on the same 2 cores; their own CPU "
        "is shown. Encoded fps: the sum over cameras of `viewfinder_frames_encoded_total` "
        "(`/metrics`) over the window.",
        "",
        "| cameras | viewers | server CPU % of one core (median) | runs | ratio to 1 camera | "
        "per camera | fps per viewer (min / median) | encoded fps, all cameras | viewers' CPU % | threads |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["watched"], r["n"])):
        n = r["n"]
        runs = ", ".join(f"{c:.1f}" for c in r["runs"])
        fps = f"{r['fpsMin']:.2f} / {r['fpsMedian']:.2f}" if r["watched"] else "—"
        vcpu = f"{r['viewerCpu']:.1f}" if r["watched"] else "—"
        lines.append(f"| {n} | {n if r['watched'] else 0} | {r['cpu']:.1f} | {runs} | {r['cpu'] / ref:.2f} | "
                     f"{r['cpu'] / n:.1f} | {fps} | {r['encoded']:.1f} | {vcpu} | {r['threads']} |")
    watched = {r["n"]: r["cpu"] for r in rows if r["watched"]}
    idle = {r["n"]: r["cpu"] for r in rows if not r["watched"]}
    idle_encoded = max(r["encodedMax"] for r in rows if not r["watched"])
    top = max(COUNTS)
    lines += [
        "",
        f"{top} watched cameras cost {watched[top] / ref:.2f}× one camera ({watched[top] / top:.1f} % of a core "
        f"each, against {ref:.1f} for one alone). With no viewer, {top} running cameras cost "
        f"{idle[top]:.1f} % and encode "
        + ("nothing (encoded fps 0 in every no-viewer run): the no-viewer rows are the capture "
           "threads producing the synthetic frames alone." if idle_encoded == 0 else
           f"{idle_encoded:.1f} frames/s although nobody watches."),
        "",
    ]
    slow = min(r["fpsMin"] for r in rows if r["watched"])
    if slow < 29:
        lines += [f"Some viewers got fewer than 30 fps (lowest median {slow:.1f}) and the cameras encoded "
                  "fewer frames: the machine was short of CPU (see the load average), so those rows' CPU "
                  "is for fewer than 30 frames a second per camera.", ""]
    return lines


def main():
    require_binaries()
    rows, started, load, took = timed(bench_multicam)
    publish("multicam", markdown(rows, started, load), took)


if __name__ == "__main__":
    sys.exit(main())
