#!/usr/bin/env python3
"""Glass-to-client latency of the MJPEG preview (issue 14): from a frame's capture timestamp to
the last byte of its part at a loopback client, p50 and p99, with 1 and with 100 viewers, at
1280x720 and 1920x1080, 30 fps (synthetic camera). Goal: p50 ≤ the encode time at that size + 2 ms.

Each run starts, for each size in turn, a fresh viewfinder (`--cameras synthetic --preset WxH
--fps 30`, a temporary config with `server.maxConnectionsPerAddress` 1000 so that 100 viewers
from 127.0.0.1 are let in, `stream.quality` 80), waits until its session runs at that size,
and measures three windows on that one process, in this order: no viewer (IDLE s: the capture
thread renders the synthetic scene and encodes nothing), 1 viewer, 100 viewers. A window with
viewers is one bench/out/latency process (C, one epoll loop, N connections to `/stream`): for
every part it parses Content-Length and X-Timestamp (the frame's capture time, CLOCK_REALTIME)
and takes CLOCK_REALTIME right after the read() that returned the part's last body byte; the
sample is the difference, in ms, for the parts completed in SECONDS after a 1 s warm-up, over
all viewers. It prints p50, p90, p99 and max of them, the same from the kernel's receive
timestamps of those bytes (SO_TIMESTAMPNS: when they reached the client's socket, before the
client got round to reading them), and per-viewer fps. Over the same window: the server's CPU
(utime+stime, /proc/PID/stat), the client's, the frames encoded (`viewfinder_frames_encoded_total`),
and the capture thread's time on a CPU and waiting for one (/proc/PID/task/TID/schedstat; the
capture thread is the one that ran most in the no-viewer window). Runs cycle the sizes; figures
are the median over RUNS of each run's p50 / p99.

Reference, in the same run, just before each size's server starts: `viewfinder-bench encode
FRAME.yuyv W H 80 N` on bench.py's encode frame of that size (bench/out/frame-WxH.yuyv, made
here as bench.py makes it when it is missing): the server's encode step on its own, median ms
per frame. The goal is checked against the median of those.

Where the latency goes (context, from the same windows): the synthetic camera stamps a frame
with the wall clock *before* it renders it, so timestamp → encode start is the render (the
capture thread's CPU per frame with no viewer); the capture thread's CPU per frame with
viewers is render + the copy handed to an encode worker; the encode workers' CPU per frame
(the shared encode threads, named encode-N) is encode + publish; what is left of the latency is publish →
last byte at the client (MHD's polling thread waking the streams and writing, loopback, the
client's read) plus the threads' waits for a CPU.

`bench/run` (make bench) calls it after metadata.py; `python3 bench/latency.py` runs only this
and rewrites its section of bench/RESULTS.md.
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
import bench  # noqa: E402  (bench/bench.py: its encode frames, viewfinder-bench)
from server import (ROOT, many_viewers_config, cpu_seconds, get, publish, require_binaries, running_session,  # noqa: E402
                    start_server, stop_server, timed, written_by, encoded)  # (bench/server.py)

SIZES = ((1280, 720), (1920, 1080))
FPS = 30
COUNTS = tuple(int(n) for n in os.environ.get("BENCH_LATENCY_VIEWERS", "1 100").split())
SECONDS = float(os.environ.get("BENCH_LATENCY_SECONDS", "5"))
RUNS = int(os.environ.get("BENCH_LATENCY_RUNS", "3"))
IDLE = float(os.environ.get("BENCH_LATENCY_IDLE", "2"))  # the no-viewer window, s
QUALITY = 80
GOAL_MARGIN = 2.0  # ms: p50 ≤ encode + 2 ms (issue 14)
LATENCY = ROOT / "bench/out/latency"
HEADING = "## Latency: capture timestamp to the last byte at a loopback client (720p30, 1080p30)"


# ---------------------------------------------------------------- the reference: encode

def encode_frame(w, h):
    """bench.py's encode frame of this size (bench/out/frame-WxH.yuyv), made as it makes it if absent."""
    yuyv = bench.OUT / f"frame-{w}x{h}.yuyv"
    if yuyv.exists() and yuyv.stat().st_size == w * h * 2:
        return yuyv
    bench.OUT.mkdir(exist_ok=True)
    ppm = bench.OUT / f"frame-{w}x{h}.ppm"
    bench.sh("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size={w}x{h},noise=alls=12:allf=t",
             "-frames:v", "1", "-pix_fmt", "rgb24", str(ppm))
    pw, ph, rgb = bench.read_ppm(ppm)
    assert (pw, ph) == (w, h), (pw, ph)
    yuyv.write_bytes(bench.yuyv_from_rgb(rgb))
    return yuyv


def encode_ms(w, h):
    """viewfinder-bench encode on that frame: (median ms per frame, JPEG bytes)."""
    r = json.loads(bench.sh(str(bench.ENCODE), "encode", str(encode_frame(w, h)), str(w), str(h), str(QUALITY),
                            str(bench.encode_frames(w, h))))
    return r["medianMs"], r["jpegBytes"]


# ---------------------------------------------------------------- the server's threads

def schedstat(pid):
    """{tid: (ns on a CPU, ns waiting for one)} for every thread of `pid`."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            run, wait, _ = (task / "schedstat").read_text().split()
            out[int(task.name)] = (int(run), int(wait))
        except (OSError, ValueError):
            pass
    return out


def encode_threads(pid):
    """The tids of the encode workers (the shared pool's threads, named encode-N: one per core)."""
    tids = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if (task / "comm").read_text().startswith("encode-"):
                tids.add(int(task.name))
        except OSError:
            pass
    return tids


# ---------------------------------------------------------------- windows

def idle_window(p):
    """No viewer: the capture thread (the thread that ran most) and its CPU ms per frame (render)."""
    s0, t0 = schedstat(p.pid), time.monotonic()
    time.sleep(IDLE)
    s1, t1 = schedstat(p.pid), time.monotonic()
    runs = {tid: s1[tid][0] - s0[tid][0] for tid in s1 if tid in s0}
    tid = max(runs, key=runs.get)
    share = runs[tid] / max(1, sum(runs.values()))
    frames = (t1 - t0) * FPS  # paced at 30 fps; nothing is encoded, so nothing counts them
    return dict(tid=tid, share=share, renderMs=runs[tid] / 1e6 / frames,
                waitMs=(s1[tid][1] - s0[tid][1]) / 1e6 / frames)


def latency_window(p, port, n, tid):
    """N viewers for SECONDS after a 1 s warm-up: the client's figures, and over (almost) the same
    window the server's and client's CPU, frames encoded, the capture thread's CPU and wait per frame."""
    client = subprocess.Popen([str(LATENCY), str(port), str(n), f"{SECONDS:g}"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.05)  # the client's warm-up second
        e0, s0 = encoded(port), schedstat(p.pid)
        c0, l0, t0 = cpu_seconds(p.pid), cpu_seconds(client.pid), time.monotonic()
        time.sleep(SECONDS - 0.3)  # inside the client's window, which ends at 1 s + SECONDS
        c1, l1, t1 = cpu_seconds(p.pid), cpu_seconds(client.pid), time.monotonic()
        e1, s1 = encoded(port), schedstat(p.pid)
        out, _ = client.communicate(timeout=SECONDS + 30)
        r = json.loads(out)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait(10)
    time.sleep(0.5)  # let the closed viewers drain
    frames = max(1, e1 - e0)
    run = (s1[tid][0] - s0[tid][0]) / 1e6 if tid in s0 and tid in s1 else float("nan")
    wait = (s1[tid][1] - s0[tid][1]) / 1e6 if tid in s0 and tid in s1 else float("nan")
    workers = [t for t in encode_threads(p.pid) if t in s0 and t in s1]
    enc_run = sum(s1[t][0] - s0[t][0] for t in workers) / 1e6
    enc_wait = sum(s1[t][1] - s0[t][1] for t in workers) / 1e6
    return dict(r, cpu=(c1 - c0) / (t1 - t0) * 100, clientCpu=(l1 - l0) / (t1 - t0) * 100,
                encodedFps=(e1 - e0) / (t1 - t0), captureMs=run / frames, captureWaitMs=wait / frames,
                encodeMs=enc_run / frames, encodeWaitMs=enc_wait / frames, workers=len(workers))


def config(work):
    return many_viewers_config(work, "latency.json", QUALITY)


def bench_latency():
    work = Path(tempfile.mkdtemp(prefix="vf-bench-latency-"))
    cfg = config(work)
    runs = {(f"{w}x{h}", n): [] for w, h in SIZES for n in COUNTS}
    ref = {f"{w}x{h}": [] for w, h in SIZES}
    idle = {f"{w}x{h}": [] for w, h in SIZES}
    try:
        for i in range(RUNS):
            for w, h in SIZES:
                size = f"{w}x{h}"
                ref[size].append(encode_ms(w, h))
                print(f"  run {i + 1}/{RUNS} {size}: encode {ref[size][-1][0]:.2f} ms", file=sys.stderr)
                p, port, _ = start_server(["--config", str(cfg), "--cameras", "synthetic", "--preset", size,
                                           "--fps", str(FPS)], work, lambda port: running_session(port, size))
                try:
                    time.sleep(1.0)  # the synthetic camera's exposure settles
                    idle[size].append(idle_window(p))
                    for n in COUNTS:
                        r = latency_window(p, port, n, idle[size][-1]["tid"])
                        runs[(size, n)].append(r)
                        print(f"    {n} viewers: p50 {r['p50']} p99 {r['p99']} ms, {r['count']} parts, "
                              f"fps {r['fpsMin']}/{r['fpsMedian']}, server {r['cpu']:.0f} %, "
                              f"client {r['clientCpu']:.0f} %", file=sys.stderr)
                finally:
                    stop_server(p)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    rows = []
    for (size, n), rs in runs.items():
        enc = med(e[0] for e in ref[size])
        kernel = [r["kernel"] for r in rs if r["kernel"]]
        rows.append(dict(
            size=size, n=n, runs=rs, encode=enc, encodeRuns=[e[0] for e in ref[size]], encodeBytes=ref[size][-1][1],
            render=med(x["renderMs"] for x in idle[size]), renderShare=min(x["share"] for x in idle[size]),
            p50=med(r["p50"] for r in rs), p90=med(r["p90"] for r in rs), p99=med(r["p99"] for r in rs),
            max=max(r["max"] for r in rs), count=sum(r["count"] for r in rs),
            kp50=med(k["p50"] for k in kernel) if kernel else None,
            kp99=med(k["p99"] for k in kernel) if kernel else None,
            fpsMin=min(r["fpsMin"] for r in rs), fpsMedian=med(r["fpsMedian"] for r in rs),
            open=min(r["open"] for r in rs), repeats=sum(r["repeats"] for r in rs),
            errors=sum(r["errors"] for r in rs), bytes=med(r["bytesMedian"] for r in rs),
            cpu=med(r["cpu"] for r in rs), clientCpu=med(r["clientCpu"] for r in rs),
            encodedFps=med(r["encodedFps"] for r in rs),
            capture=med(r["captureMs"] for r in rs), captureWait=med(r["captureWaitMs"] for r in rs),
            encodeThreads=med(r["encodeMs"] for r in rs), encodeWait=med(r["encodeWaitMs"] for r in rs),
            workers=max(r["workers"] for r in rs)))
        r = rows[-1]
        r["holds"] = r["p50"] <= enc + GOAL_MARGIN
    return rows


# ---------------------------------------------------------------- report

def markdown(rows, started, load, took):
    f1 = lambda x: "—" if x is None else f"{x:.1f}"  # noqa: E731
    lines = [
        HEADING,
        "",
        written_by("latency.py", started, load, took),
        "",
        f"Release build of `viewfinder` and `viewfinder-bench` ({bench.build_info()}). "
        "Command: `viewfinder --config FILE --cameras synthetic --preset WxH --fps 30` (FILE: "
        '`"server": {"maxConnectionsPerAddress": 1000}`, `"stream": {"quality": 80}`), a fresh server per '
        "size and run; on it, in order, a no-viewer window of "
        f"{IDLE:g} s, then `bench/out/latency PORT 1 {SECONDS:g}`, then `bench/out/latency PORT 100 {SECONDS:g}` "
        "(the same server, sequentially, 0.5 s apart). `latency` (C, one epoll loop, N HTTP/1.1 connections to "
        "`/stream`, the chunked body de-chunked) parses each part's `Content-Length` and `X-Timestamp` (the "
        "frame's capture time, wall clock) and takes `CLOCK_REALTIME` right after the `read()` that returned "
        "the part's last body byte (no read goes past a part's end); latency = that − X-Timestamp, over every "
        f"viewer's parts completed in {SECONDS:g} s after a 1 s warm-up. Figures: the median over {RUNS} runs "
        "of each run's p50 / p90 / p99 (runs listed), max: the largest in any run; runs cycle the sizes. "
        "Kernel p50 / p99: the same from `SO_TIMESTAMPNS`, when those bytes reached the client's socket — the "
        "difference is the wait for the client process (on the same 2 cores as the server) to read them.",
        "",
        f"Reference, same run: `viewfinder-bench encode FRAME.yuyv W H {QUALITY} N` on bench.py's encode frame "
        "(noisy `testsrc2`, bench/out/frame-WxH.yuyv; N = "
        + ", ".join(f"{bench.encode_frames(*map(int, s.split('x')))} at {s}" for s in dict.fromkeys(r['size'] for r in rows))
        + "), median ms per frame, once per run just before that size's server; the median over the runs. "
        f"Goal (issue 14): p50 ≤ encode + {GOAL_MARGIN:g} ms.",
        "",
        "| size | viewers | p50 ms (runs) | p90 ms | p99 ms (runs) | max ms | kernel p50 / p99 ms | parts | "
        "fps per viewer (min / median) | encode ms (reference; runs) | goal p50 ≤ encode + 2 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p50s = ", ".join(f"{x['p50']:.1f}" for x in r["runs"])
        p99s = ", ".join(f"{x['p99']:.1f}" for x in r["runs"])
        encs = ", ".join(f"{x:.2f}" for x in r["encodeRuns"])
        verdict = (f"**holds** ({r['p50']:.1f} ≤ {r['encode'] + GOAL_MARGIN:.1f})" if r["holds"] else
                   f"**does not hold** ({r['p50']:.1f} > {r['encode'] + GOAL_MARGIN:.1f})")
        lines.append(f"| {r['size']} | {r['n']} | {r['p50']:.1f} ({p50s}) | {r['p90']:.1f} | {r['p99']:.1f} ({p99s}) | "
                     f"{r['max']:.1f} | {f1(r['kp50'])} / {f1(r['kp99'])} | {r['count']} | "
                     f"{r['fpsMin']:.2f} / {r['fpsMedian']:.2f} | {r['encode']:.2f} ({encs}) | {verdict} |")
    lines += [
        "",
        "Where it goes (medians over the runs; context, not the goal's figures). The synthetic camera stamps a "
        "frame with the wall clock *before* it renders it (`PacedCaptureThread` → `SyntheticCamera`), so the "
        "render is inside the latency; a V4L2 camera's timestamp comes from the driver, with no render after it. "
        "Render: the capture thread's CPU per frame with no viewer (`/proc/PID/task/TID/schedstat`; the thread "
        "that ran most in that window). Capture thread with viewers: its CPU per encoded frame (render + the copy "
        "handed to an encode worker) and its wait for a CPU per frame. Encode: the encode workers' CPU per "
        "encoded frame (the shared pool's threads, named `encode-N`, one per core; encode + publish) and their wait for "
        "a CPU. Rest: p50 − both CPUs − both waits ≈ the hand-over to a worker and publish → last byte at the "
        "client (MHD's one polling thread waking the streams and writing every viewer's part in 32 KB blocks, "
        "loopback, the client's read).",
        "",
        "| size | viewers | render ms | capture thread ms/frame (wait) | encode workers ms/frame (wait) | rest ms | "
        "part bytes (reference frame's JPEG) | encoded fps | server CPU % | client CPU % | "
        "viewers still connected | repeats / parse errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    def rest(r):
        return r["p50"] - r["capture"] - r["captureWait"] - r["encodeThreads"] - r["encodeWait"]

    for r in rows:
        lines.append(f"| {r['size']} | {r['n']} | {r['render']:.2f} | {r['capture']:.2f} ({r['captureWait']:.2f}) | "
                     f"{r['encodeThreads']:.2f} ({r['encodeWait']:.2f}) | {rest(r):.1f} | {r['bytes']:.0f} ({r['encodeBytes']}) | "
                     f"{r['encodedFps']:.1f} | {r['cpu']:.0f} | {r['clientCpu']:.0f} | {r['open']}/{r['n']} | "
                     f"{r['repeats']} / {r['errors']} |")
    one = [r for r in rows if r["n"] == 1]
    if one:
        lines += ["", "With one viewer the rest is " + ", ".join(
            f"{rest(r):.1f} ms at {r['size']}" for r in one)
            + ": the p50 is then mostly the render and the encode. The render ("
            + ", ".join(f"{r['render']:.1f} ms at {r['size']}" for r in one)
            + ") is in the figure only because the synthetic camera stamps before it renders. The streamed "
            "parts (the synthetic scene) are " + ", ".join(
                f"{r['encodeBytes'] / r['bytes']:.1f}× smaller than the reference frame's JPEG at {r['size']}"
                for r in one)
            + ", and the encode workers' figure ("
            + ", ".join(f"{r['encodeThreads']:.1f} ms" for r in one) + ") is to be read against the "
            "reference's (" + ", ".join(f"{r['encode']:.1f} ms" for r in one) + ") with that in mind: the "
            "verdict depends on the picture the reference encodes."]
    held = [r for r in rows if r["holds"]]
    missed = [r for r in rows if not r["holds"]]
    lines += ["", "Goal p50 ≤ encode + 2 ms: " + (
        "**holds in every case**." if not missed else
        ("**does not hold** at " + "; ".join(f"{r['size']} with {r['n']} viewer{'s' if r['n'] > 1 else ''} "
                                             f"(p50 {r['p50']:.1f} ms, encode {r['encode']:.2f} ms)" for r in missed)
         + (". Holds at " + "; ".join(f"{r['size']} with {r['n']}" for r in held) if held else "") + "."))]
    # Per-run p50s against per-run encode + 2 ms: where some runs hold and some do not, the verdict
    # is within this machine's run-to-run noise.
    straddle = [r for r in rows
                if min(x["p50"] for x in r["runs"]) <= max(r["encodeRuns"]) + GOAL_MARGIN
                and max(x["p50"] for x in r["runs"]) > min(r["encodeRuns"]) + GOAL_MARGIN]
    if straddle:
        lines[-1] += (" Within run-to-run noise at " + "; ".join(
            f"{r['size']} with {r['n']} (p50 runs {min(x['p50'] for x in r['runs']):.1f}–"
            f"{max(x['p50'] for x in r['runs']):.1f} ms, encode + 2 ms runs {min(r['encodeRuns']) + GOAL_MARGIN:.1f}–"
            f"{max(r['encodeRuns']) + GOAL_MARGIN:.1f} ms)" for r in straddle)
            + ": there some runs meet the goal and some do not.")
    slow = [r for r in rows if r["fpsMin"] < FPS - 1]
    if slow:
        lines += ["", "Some viewers got fewer than 30 fps: " + "; ".join(
            f"{r['size']} with {r['n']} (lowest {r['fpsMin']:.2f}, median {r['fpsMedian']:.2f})" for r in slow)
            + ". A slow viewer skips frames (latest frame wins), so its latency is that of the frames it got."]
    if min(r["renderShare"] for r in rows) < 0.5:
        lines += ["", "(The thread taken as the capture thread did less than half the server's work in a "
                      "no-viewer window: the render and capture thread columns are doubtful.)"]
    lines.append("")
    return lines


def main():
    require_binaries()
    if not LATENCY.exists():
        sys.exit("bench/out/latency missing: run bench/run (make bench), or "
                 "gcc -O2 -Wall -o bench/out/latency bench/latency.c -lm")
    if not bench.ENCODE.exists():
        sys.exit(f"{bench.ENCODE} missing: swift build -c release --product viewfinder-bench")
    rows, started, load, took = timed(bench_latency)
    publish("latency", markdown(rows, started, load, took), took)


if __name__ == "__main__":
    sys.exit(main())
