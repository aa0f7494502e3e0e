#!/usr/bin/env python3
"""The frame path before and after issue 26 (one frame path for every output), side by side in
one run: 1280x720 at 30 fps from the synthetic camera, 1 and 100 MJPEG viewers on loopback, the
server's CPU per frame encoded and the glass-to-client latency p50 / p99.

Before: the release build of BEFORE (default 6a1f9b9, the last commit before issue 26), checked
out with `git worktree` into bench/out/before-REV and built there (its own .build), once. After:
this tree's release build (.build/release/viewfinder, `make release`). Each of RUNS runs (default
9: five left the 100-viewer p99 within its noise either way) starts each server in turn, alternating which goes first, and measures on it exactly what
bench/latency.py measures (its windows and its C client, bench/out/latency): a no-viewer window
(to find the capture thread), then 1 viewer for SECONDS, then 100 viewers. The figures are the
median over the runs; the ratio is after / before (below 1: after is cheaper or faster).

CPU per frame: the server's utime+stime over the window (/proc/PID/stat) divided by the frames it
encoded (viewfinder_frames_encoded_total) — capture, encode, publish and every viewer's writes.

`python3 bench/frame_path.py` runs it and writes its section of bench/RESULTS.md;
BEFORE=REV, RUNS=N, BENCH_LATENCY_SECONDS=S change it.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import latency  # noqa: E402  (bench/latency.py: its windows and client)
import server  # noqa: E402  (bench/server.py)

ROOT = server.ROOT
BEFORE = os.environ.get("BEFORE", "6a1f9b9")
RUNS = int(os.environ.get("RUNS", "9"))
SIZE = (1280, 720)
COUNTS = (1, 100)
AFTER_BIN = ROOT / ".build/release/viewfinder"
HEADING = "## The frame path before and after issue 26 (720p30, 1 and 100 viewers)"


def sh(*cmd, cwd=ROOT):
    subprocess.run(cmd, cwd=cwd, check=True)


def before_binary():
    """The release build of BEFORE, in a worktree of its own under bench/out (built once)."""
    rev = subprocess.run(["git", "rev-parse", "--short", BEFORE], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    tree = ROOT / f"bench/out/before-{rev}"
    binary = tree / ".build/release/viewfinder"
    if not binary.exists():
        if not tree.exists():
            sh("git", "worktree", "add", "--detach", str(tree), rev)
        print(f"frame_path: building {rev} (release) in {tree.relative_to(ROOT)}", file=sys.stderr)
        sh("swift", "build", "-c", "release", "--product", "viewfinder", cwd=tree)
    return rev, binary


def measure(binary, work, cfg):
    """One server's windows: {viewers: latency_window's figures}."""
    server.BIN = binary
    size = f"{SIZE[0]}x{SIZE[1]}"
    p, port, _ = server.start_server(["--config", str(cfg), "--cameras", "synthetic", "--preset", size,
                                      "--fps", str(latency.FPS)], work, lambda port: server.running_session(port, size))
    try:
        time.sleep(1.0)  # the synthetic camera's exposure settles
        tid = latency.idle_window(p)["tid"]
        out = {}
        for n in COUNTS:
            r = latency.latency_window(p, port, n, tid)
            r["cpuPerFrame"] = r["cpu"] / 100 / max(r["encodedFps"], 1e-9) * 1000
            out[n] = r
        return out
    finally:
        server.stop_server(p)


def bench_frame_path():
    if not latency.LATENCY.exists():
        latency.LATENCY.parent.mkdir(exist_ok=True)
        sh("gcc", "-O2", "-Wall", "-o", str(latency.LATENCY), "bench/latency.c", "-lm")
    if not AFTER_BIN.exists():
        sys.exit(f"{AFTER_BIN} missing: make release")
    rev, before = before_binary()
    work = Path(tempfile.mkdtemp(prefix="vf-bench-frame-path-"))
    cfg = latency.config(work)
    # The synthetic sensor's noise came after issue 26 (and is on by default): the tree before
    # has none, so the tree after runs without it, on the same picture.
    after_cfg = work / "after.json"
    after_cfg.write_text(json.dumps(dict(json.loads(cfg.read_text()), synthetic={"noise": False})))
    configs = {"before": cfg, "after": after_cfg}
    runs = {"before": [], "after": []}
    try:
        for i in range(RUNS):
            order = [("before", before), ("after", AFTER_BIN)]
            if i % 2:
                order.reverse()
            for name, binary in order:
                r = measure(binary, work, configs[name])
                runs[name].append(r)
                print(f"  run {i + 1}/{RUNS} {name}: " + "; ".join(
                    f"{n} viewers p50 {r[n]['p50']} p99 {r[n]['p99']} ms, {r[n]['cpuPerFrame']:.2f} ms CPU/frame"
                    for n in COUNTS), file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rev, runs


def section(rev, runs, started, load, took):
    med = statistics.median
    after_rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                               text=True).stdout.strip()
    lines = [HEADING, "",
             server.written_by("frame_path.py", started, load, took), "",
             f"Before: the release build of `{rev}` (the tree before issue 26). After: this tree's release build "
             f"(`{after_rev}`; with `synthetic.noise` false: the sensor noise came later, and the tree before has none). Both on the synthetic camera at 1280x720, 30 fps, quality 80, in the same run: "
             f"{RUNS} runs, each starting both servers one after the other (alternating which goes first); "
             f"each figure is the median of the runs, measured as bench/latency.py measures it "
             f"({latency.SECONDS:g} s windows after a 1 s warm-up, its C client). CPU per frame: the server's "
             f"CPU over the window divided by the frames it encoded. Ratio: after / before.", "",
             "| viewers | figure | before | after | ratio |", "|---|---|---|---|---|"]
    for n in COUNTS:
        for key, label, unit in (("cpuPerFrame", "server CPU per frame", "ms"), ("p50", "latency p50", "ms"),
                                 ("p99", "latency p99", "ms"), ("fpsMedian", "fps per viewer (median)", "")):
            b = med(r[n][key] for r in runs["before"])
            a = med(r[n][key] for r in runs["after"])
            ratio = a / b if b else float("nan")
            lines.append(f"| {n} | {label} | {b:.2f} {unit} | {a:.2f} {unit} | {ratio:.2f} |")
    lines += ["", "Per run (before → after, ms CPU per frame at 1 / 100 viewers): " + "; ".join(
        f"{b[1]['cpuPerFrame']:.2f}/{b[100]['cpuPerFrame']:.2f} → {a[1]['cpuPerFrame']:.2f}/{a[100]['cpuPerFrame']:.2f}"
        for b, a in zip(runs["before"], runs["after"])) + ".", ""]
    return lines


def main():
    (rev, runs), started, load, took = server.timed(bench_frame_path)
    server.publish("frame_path", section(rev, runs, started, load, took), took)


if __name__ == "__main__":
    main()
