#!/usr/bin/env python3
"""Every core at 60 fps (issue 14): the synthetic camera at 1920x1080@60 and 3840x2160@60, one
viewer on `/stream`, with 1 encode worker and with one per core (`stream.workers`, µStreamer's
`--workers`). Goals: 1080p60 delivered at ≥ 57 fps and 2160p60 at ≥ 45 fps to the viewer.

Each run starts, for each case in turn, a fresh viewfinder (`--cameras synthetic --preset WxH
--fps 60 --workers N`, a temporary config with `stream.maxFps` 60 and `stream.subsampling`), waits
until its session runs at that size, and measures two windows on that process: no viewer (the
capture thread renders the scene and nothing is encoded: the scene's own cost), then one viewer
(bench/out/viewers, reading as fast as it can). Per window: the server's CPU (utime+stime over
SECONDS), the viewer's median fps, the frames the session dropped (`frames.dropped`: every worker
busy, the frame not taken) per second. Figures are medians over RUNS.

Reference, same run, same pixels: the 1-worker server (the speed-up is workers N ÷ 1), and
libjpeg-turbo's own compress-from-planar at that size (`tjbench -yuv`, "Comp from YUV", on
bench.py's encode frame): cores × 1000 ÷ its ms is the frame rate this machine could reach if
every core did nothing but compress — the ceiling no server on it can pass.

`bench/run` (make bench) calls it; `python3 bench/throughput.py` runs only this and rewrites its
section of bench/RESULTS.md.
"""
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
from server import (get, publish, require_binaries, running_session, session, start_server,  # noqa: E402
                    stop_server, timed, viewer, viewer_fps, written_by)
from bench import cpu_seconds  # noqa: E402

HEADING = "## Every core: 1920x1080 and 3840x2160 at 60 fps (synthetic camera, encode workers)"
RUNS = int(os.environ.get("BENCH_THROUGHPUT_RUNS", "3"))
SECONDS = float(os.environ.get("BENCH_THROUGHPUT_SECONDS", "5"))
CORES = os.cpu_count() or 1
# (size, subsampling, goal fps)
CASES = [("1920x1080", "422", 57), ("3840x2160", "422", 45), ("3840x2160", "420", 45)]


def measure(size, subsampling, workers):
    """The two windows on one fresh server."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "config.json").write_text(json.dumps(
            {"stream": {"maxFps": 60, "subsampling": subsampling, "workers": workers}}))
        p, port, _ = start_server(["--cameras", "synthetic", "--preset", size, "--fps", "60", "--port", "0"],
                                  tmp, lambda port: running_session(port, size))
        try:
            time.sleep(1.0)  # the scene's first frames, the auto-exposure settling
            c0, t0 = cpu_seconds(p.pid), time.monotonic()
            time.sleep(SECONDS)
            idle = (cpu_seconds(p.pid) - c0) / (time.monotonic() - t0) * 100
            v = viewer(port, SECONDS + 1)
            time.sleep(1.0)  # the viewer's warm-up second
            d0, c0, t0 = session(port)["frames"]["dropped"], cpu_seconds(p.pid), time.monotonic()
            fps_seen = []
            end = t0 + SECONDS
            while (left := end - time.monotonic()) > 0.05:
                time.sleep(min(1.0, left))
                fps_seen.append(session(port)["stream"]["fps"])
            c1, t1, s1 = cpu_seconds(p.pid), time.monotonic(), session(port)
            fps = viewer_fps(v)
            assert s1["stream"]["workers"] == workers, s1["stream"]
        finally:
            stop_server(p)
    return dict(idle=idle, cpu=(c1 - c0) / (t1 - t0) * 100, fps=fps,
                dropped=(s1["frames"]["dropped"] - d0) / (t1 - t0), streamFps=statistics.median(fps_seen))


def ceiling(size):
    """libjpeg-turbo's compress-from-planar ms at `size` (4:2:2, as bench.py runs tjbench)."""
    w, h = map(int, size.split("x"))
    ppm = bench.OUT / f"frame-{w}x{h}.ppm"
    if not ppm.exists():
        bench.sh("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size={w}x{h},noise=alls=12:allf=t",
                 "-frames:v", "1", "-pix_fmt", "rgb24", str(ppm))
    return bench.tjbench(ppm, "-yuv")["Comp from YUV"][0]


def run():
    cases = {(s, sub, w): [] for s, sub, _ in CASES for w in sorted({1, CORES})}
    comp = {s: [] for s, _, _ in CASES}
    for r in range(RUNS):
        for (size, sub, workers), rows in cases.items():
            print(f"  run {r + 1}: {size} {sub} workers {workers}…", file=sys.stderr)
            rows.append(measure(size, sub, workers))
            m = rows[-1]
            print(f"    idle {m['idle']:.1f} %, viewer {m['fps']:.2f} fps, cpu {m['cpu']:.1f} %, "
                  f"dropped {m['dropped']:.1f}/s", file=sys.stderr)
        for size in comp:
            comp[size].append(ceiling(size))
    med = statistics.median
    table = {}
    for key, rows in cases.items():
        table[key] = {k: med(r[k] for r in rows) for k in rows[0]}
        table[key]["fpsRuns"] = [r["fps"] for r in rows]
    return table, {s: med(v) for s, v in comp.items()}


def section(table, comp, started, load, took):
    lines = [HEADING, "", written_by("throughput.py", started, load, took), "",
             f"Command: `viewfinder --cameras synthetic --preset WxH --fps 60 --workers N` with `stream.maxFps` 60 "
             f"and `stream.subsampling` as shown; one viewer (`bench/out/viewers PORT 1 S`) for {SECONDS:g} s after "
             f"its 1 s warm-up; median of {RUNS} runs, each case a fresh server. CPU: the server's user + system "
             "time in % of one core. Scene: the same server with no viewer (the capture thread renders and "
             "nothing is encoded), as ms of CPU per frame at 60 fps. Dropped: frames the session skipped because "
             "every worker was busy (`frames.dropped`), per second.", "",
             "| size | chroma | workers | viewer fps (runs) | × 1 worker | server CPU % | scene ms/frame | dropped /s | goal |",
             "|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for size, sub, goal in CASES:
        one = table[(size, sub, 1)]
        for workers in sorted({1, CORES}):
            t = table[(size, sub, workers)]
            ok = t["fps"] >= goal
            if workers == CORES:
                verdicts.append((size, sub, goal, t["fps"], ok))
            lines.append(f"| {size} | 4:{sub[1]}:{sub[2]} | {workers} | {t['fps']:.1f} "
                         f"({', '.join(f'{f:.1f}' for f in t['fpsRuns'])}) | {t['fps'] / max(one['fps'], 0.1):.2f} | "
                         f"{t['cpu']:.0f} | {t['idle'] / 100 * 1000 / 60:.1f} | {t['dropped']:.1f} | "
                         f"≥ {goal}: {'holds' if ok else 'misses'} |")
    lines += ["", f"Ceiling, same run: libjpeg-turbo's compress-from-planar (tjbench -yuv, \"Comp from YUV\", 4:2:2, "
              "quality 80, on bench.py's noisy testsrc2 frame — busier than the synthetic scene, so a pessimistic "
              f"figure) and what {CORES} cores doing nothing else could reach with it:", "",
              "| size | Comp from YUV ms | ceiling fps on all cores |", "|---|---|---|"]
    for size, ms in comp.items():
        lines.append(f"| {size} | {ms:.2f} | {CORES * 1000 / ms:.0f} |")
    lines.append("")
    for size, sub, goal, fps, ok in verdicts:
        t = table[(size, sub, CORES)]
        if ok:
            lines.append(f"{size} 4:{sub[1]}:{sub[2]} at 60 fps: {fps:.1f} fps to the viewer with {CORES} workers — "
                         f"the goal (≥ {goal}) **holds**.")
        else:
            lines.append(f"{size} 4:{sub[1]}:{sub[2]} at 60 fps: {fps:.1f} fps with {CORES} workers — the goal "
                         f"(≥ {goal}) **misses**. The server used {t['cpu']:.0f} % of one core of {CORES * 100} %; "
                         f"the scene costs {t['idle'] / 100 * 1000 / 60:.1f} ms a frame before any encode, and "
                         f"the section above shows the compression alone allows at most "
                         f"{CORES * 1000 / comp[size]:.0f} fps on these {CORES} cores.")
    lines.append("")
    return lines


def main():
    require_binaries()
    bench.OUT.mkdir(exist_ok=True)
    (table, comp), started, load, took = timed(run)
    publish("throughput", section(table, comp, started, load, took), took)


if __name__ == "__main__":
    main()
