#!/usr/bin/env python3
"""Fan-out at one viewer's latency (issue 30): 1, 100 and 500 MJPEG viewers at 1280x720 and
1920x1080, 30 fps, on a Viewfinder with its *default* limits (every viewer comes from 127.0.0.1:
the per-address limit must not stop an audience), and the CPU per part next to the bare
libmicrohttpd floor (bench/floor.c) with the same number of polling threads, at 200 viewers.

Viewers: bench/out/latency (C, one epoll loop, N connections to /stream): latency from each
part's X-Timestamp (the frame's capture time) to its last byte at the client, over every
viewer's parts completed in SECONDS after a 1 s warm-up; fps per viewer. Server CPU: utime +
stime (/proc/PID/stat) over the same window; CPU per delivered part = that ÷ the parts the
client completed in the window. A fresh server per size and run; on it 1, then 100, then 500
viewers, 0.5 s apart. Figures: the median over RUNS runs (each run listed where it matters).

Floor, same run: `floor SNAPSHOT.jpg 30 0 THREADS` (THREADS = Viewfinder's server.threads, one
per core) and Viewfinder at 1280x720, each with bench/out/viewers at 1 and 200 viewers (parts
counted by boundary: the floor's parts all carry one X-Timestamp, which the latency client
would count as repeats). Per part: (CPU at 200 − CPU at 1) ÷ (parts at 200 − parts at 1), the
fan-out share (Viewfinder's 1-viewer CPU is its capture and encode, which the floor never does).

The two goals measured in the VM (raw 2160p frames handed to the encoder with no copy;
µStreamer's fps at ≤ 0.5× its CPU per frame) are read from bench/RESULTS-v4l2.md, which
`make bench` writes in the same run (bench/v4l2.py in scripts/vm), when it is there.

BENCH_FANOUT_RUNS, BENCH_FANOUT_SECONDS shorten a trial run.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import (ROOT, VIEWERS, cpu_seconds, get, publish, require_binaries, running_session,  # noqa: E402
                    start_server, stop_server, timed, written_by)

LATENCY = ROOT / "bench/out/latency"
FLOOR = ROOT / "bench/out/floor"
SIZES = ["1280x720", "1920x1080"]
COUNTS = [1, 100, 500]
FLOOR_N = 200
FPS = 30
RUNS = int(os.environ.get("BENCH_FANOUT_RUNS", "3"))
SECONDS = float(os.environ.get("BENCH_FANOUT_SECONDS", "5"))
THREADS = os.cpu_count() or 1
HEADING = "## Fan-out at one viewer's latency: 1, 100 and 500 viewers (720p30, 1080p30), and the HTTP floor"


def config(work):
    """Defaults but for where files go: the limits under test are the shipped ones."""
    path = work / "fanout.json"
    path.write_text(json.dumps({"server": {"port": 0, "publicDirectory": str(ROOT / "Public")},
                                "capture": {"directory": str(work / "photos")}, "stream": {"quality": 80}}))
    return path


def window(client_binary, pid, port, n):
    """N viewers (`client_binary PORT N SECONDS`) after its 1 s warm-up: (its JSON, the server's
    CPU seconds over almost the same window, that window's length)."""
    client = subprocess.Popen([str(client_binary), str(port), str(n), f"{SECONDS:g}"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.05)
        c0, t0 = cpu_seconds(pid), time.monotonic()
        time.sleep(SECONDS - 0.3)  # inside the client's window, which ends at 1 s + SECONDS
        c1, t1 = cpu_seconds(pid), time.monotonic()
        r = json.loads(client.communicate(timeout=SECONDS + 60)[0])
    finally:
        if client.poll() is None:
            client.kill()
            client.wait(10)
    time.sleep(0.5)  # let the closed viewers drain
    return r, c1 - c0, t1 - t0


def latency_window(p, port, n):
    r, cpu, seconds = window(LATENCY, p.pid, port, n)
    parts_in_window = r["count"] * seconds / SECONDS
    return dict(r, cpu=cpu / seconds * 100, cpuPerPartUs=cpu / max(1, parts_in_window) * 1e6)


def viewers_window(pid, port, n):
    """(server CPU seconds a second, parts a second, the client's JSON) with bench/out/viewers."""
    r, cpu, seconds = window(VIEWERS, pid, port, n)
    return cpu / seconds, r["fpsMedian"] * r["open"], r


def start_floor(jpeg, work):
    p = subprocess.Popen([str(FLOOR), str(jpeg), str(FPS), "0", str(THREADS)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, cwd=work, text=True)
    m = re.search(r":(\d+)/", p.stdout.readline())
    if not m:
        stop_server(p)
        raise RuntimeError("floor did not start")
    return p, int(m.group(1))


def bench_fanout():
    work = Path(tempfile.mkdtemp(prefix="vf-bench-fanout-"))
    cfg = config(work)
    runs = {(s, n): [] for s in SIZES for n in COUNTS}
    floor = []
    try:
        for i in range(RUNS):
            for size in SIZES:
                p, port, _ = start_server(["--config", str(cfg), "--cameras", "synthetic", "--preset", size,
                                           "--fps", str(FPS), "--rtsp-port", "0"], work, lambda port: running_session(port, size))
                try:
                    time.sleep(1.0)
                    for n in COUNTS:
                        r = latency_window(p, port, n)
                        runs[(size, n)].append(r)
                        print(f"  run {i + 1}/{RUNS} {size} {n} viewers: p50 {r['p50']} p99 {r['p99']} ms, "
                              f"fps {r['fpsMin']}/{r['fpsMedian']}, open {r['open']}, {r['cpuPerPartUs']:.1f} µs/part",
                              file=sys.stderr)
                    if size == SIZES[0]:
                        (work / "snap.jpg").write_bytes(get(port, "/snapshot"))
                        vf = [viewers_window(p.pid, port, n) for n in (1, FLOOR_N)]
                finally:
                    stop_server(p)
            fp, fport = start_floor(work / "snap.jpg", work)
            try:
                fl = [viewers_window(fp.pid, fport, n) for n in (1, FLOOR_N)]
                flat = [latency_window(fp, fport, n) for n in (1, 100)]
            finally:
                stop_server(fp)
            share = lambda w: (w[1][0] - w[0][0]) / max(1e-9, w[1][1] - w[0][1]) * 1e6  # noqa: E731
            floor.append(dict(vf=share(vf), floor=share(fl), vfFps=vf[1][2]["fpsMedian"], floorFps=fl[1][2]["fpsMedian"],
                              vfOpen=vf[1][2]["open"], floorOpen=fl[1][2]["open"],
                              p50one=flat[0]["p50"], p50hundred=flat[1]["p50"], p99hundred=flat[1]["p99"]))
            print(f"  run {i + 1}/{RUNS} floor at {FLOOR_N}: Viewfinder {floor[-1]['vf']:.1f} µs/part, "
                  f"floor {floor[-1]['floor']:.1f} µs/part", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return runs, floor


def v4l2_goals():
    """The VM's figures from bench/RESULTS-v4l2.md: (copies line, µStreamer rows at 20 viewers, written)."""
    path = ROOT / "bench/RESULTS-v4l2.md"
    if not path.exists():
        return None
    text = path.read_text()
    written = re.search(r"\(([0-9-]+ [0-9:]+ UTC)\)", text)
    copies = re.search(r"^Copies: (.*)$", text, re.M)
    rows = [line for line in text.splitlines() if re.match(r"\| \d+x\d+ \| 20 \|", line)]
    return dict(written=written.group(1) if written else "?", copies=copies.group(1) if copies else None, rows=rows)


def listed(values, digits=2):
    return ", ".join(f"{v:.{digits}f}" for v in values)


def markdown(runs, floor, started, load, took):
    med = statistics.median
    lines = [HEADING, "", written_by("fanout.py", started, load, took), "",
             f"Release build. Server: `viewfinder --config FILE --cameras synthetic --preset WxH --fps {FPS}` with the "
             f"shipped limits (FILE sets only where files go and `stream.quality` 80; `server.threads` default: {THREADS}, "
             f"one per core; the synthetic sensor's noise on, as shipped). Client: `bench/out/latency PORT N {SECONDS:g}` "
             f"from 127.0.0.1 (one address for every viewer). Median of {RUNS} runs (runs listed). CPU per part: the server's "
             "CPU over the window ÷ the parts the client completed in it (capture and the one encode per frame included).", "",
             "| size | viewers | p50 ms (runs) | p99 ms (runs) | fps per viewer (min / median) | still connected | server CPU % | CPU µs per part |",
             "|---|---|---|---|---|---|---|---|"]
    fig = {}
    for (size, n), rs in runs.items():
        p50, p99 = med(r["p50"] for r in rs), med(r["p99"] for r in rs)
        fmin, fmed = min(r["fpsMin"] for r in rs), med(r["fpsMedian"] for r in rs)
        fig[(size, n)] = dict(p50=p50, p99=p99, fmin=fmin)
        lines.append(f"| {size} | {n} | {p50:.2f} ({listed(r['p50'] for r in rs)}) | "
                     f"{p99:.2f} ({listed(r['p99'] for r in rs)}) | {fmin:.2f} / {fmed:.2f} | "
                     f"{min(r['open'] for r in rs)}/{n} | {med(r['cpu'] for r in rs):.0f} | {med(r['cpuPerPartUs'] for r in rs):.1f} |")
    vf, fl = med(f["vf"] for f in floor), med(f["floor"] for f in floor)
    lines += ["", f"HTTP floor, same run: `floor SNAPSHOT.jpg {FPS} 0 {THREADS}` (bench/floor.c: a bare libmicrohttpd fan-out of "
              f"one fixed JPEG, the same daemon flags with a pool of {THREADS} polling threads) and Viewfinder at {SIZES[0]}, each "
              f"with `bench/out/viewers PORT N {SECONDS:g}` at 1 and {FLOOR_N} viewers. Per part: (CPU at {FLOOR_N} − CPU at 1) ÷ "
              f"(parts a second at {FLOOR_N} − at 1), µs.", "",
              "| server | µs of CPU per part at 200 viewers (runs) | fps per viewer (median) | still connected |", "|---|---|---|---|",
              f"| Viewfinder | {vf:.1f} ({listed((f['vf'] for f in floor), 1)}) | {med(f['vfFps'] for f in floor):.2f} | "
              f"{min(f['vfOpen'] for f in floor)}/{FLOOR_N} |",
              f"| floor (reference) | {fl:.1f} ({listed((f['floor'] for f in floor), 1)}) | "
              f"{med(f['floorFps'] for f in floor):.2f} | {min(f['floorOpen'] for f in floor)}/{FLOOR_N} |", "",
              f"The floor's own latency, same run (`bench/out/latency` on it; its X-Timestamp is the tick's wall clock, "
              f"so this is publish → last byte, with nothing captured or encoded): 1 viewer p50 "
              f"{med(f['p50one'] for f in floor):.2f} ms, 100 viewers p50 {med(f['p50hundred'] for f in floor):.2f} ms "
              f"(p99 {med(f['p99hundred'] for f in floor):.2f}; runs {listed(f['p50hundred'] for f in floor)}): what 99 more "
              f"viewers cost a bare libmicrohttpd fan-out of the same part with the same threads on these 2 cores, client included.", ""]

    def verdict(ok):
        return "**holds**" if ok else "**does not hold**"
    goals = []
    for size in SIZES:
        one, hundred = fig[(size, 1)]["p50"], fig[(size, 100)]["p50"]
        goals.append((f"100 viewers p50 ≤ 1-viewer p50 + 1 ms at {size}", f"{hundred:.2f} vs {one:.2f} + 1", hundred <= one + 1))
    ratio = vf / fl if fl > 0 else float("inf")
    goals.append((f"CPU per part ≤ 1.1× the floor's at {FLOOR_N} viewers", f"{ratio:.2f}×", ratio <= 1.1))
    f500 = fig[(SIZES[0], 500)]["fmin"]
    goals.append((f"500 viewers at ≥ 29 fps each at {SIZES[0]}", f"slowest viewer {f500:.2f} fps", f500 >= 29))
    vm = v4l2_goals()
    lines += ["Goals (issue 30):", "", "| goal | this run | verdict |", "|---|---|---|"]
    lines += [f"| {g} | {x} | {verdict(ok)} |" for g, x, ok in goals]
    if vm:
        lines.append(f"| raw 2160p frames handed to the encoder with 0 copies | {vm['copies'] or 'not measured'} "
                     f"(bench/RESULTS-v4l2.md, {vm['written']}) | "
                     f"{verdict(vm['copies'] is not None and vm['copies'].startswith('0 '))} |")
        for row in vm["rows"]:
            cells = [c.strip() for c in row.strip("|").split("|")]
            fps_ratio, cpu_ratio = float(cells[4]), float(cells[7])
            lines.append(f"| µStreamer's fps or better at ≤ 0.5× its CPU per frame, 20 viewers, {cells[0]} (VM) | "
                         f"fps ratio {fps_ratio:.2f}, CPU per frame ratio {cpu_ratio:.2f} | {verdict(fps_ratio >= 1 and cpu_ratio <= 0.5)} |")
    else:
        lines.append("| the VM goals (0 copies at 2160p; against µStreamer) | bench/RESULTS-v4l2.md not written: `make bench-v4l2` | — |")
    lines.append("")
    return lines


def main():
    require_binaries()
    for b in (LATENCY, FLOOR):
        if not b.exists():
            sys.exit(f"{b} missing: run bench/run (make bench)")
    (runs, floor), started, load, took = timed(bench_fanout)
    publish("fanout.py", markdown(runs, floor, started, load, took), took)


if __name__ == "__main__":
    main()
