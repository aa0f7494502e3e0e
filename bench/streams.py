#!/usr/bin/env python3
"""The main and the sub stream (issue 38): what the sub stream costs beside a 720p main one,
and the bytes each stream sends.

The release server, one synthetic 1280x720 camera at 30 fps with its sensor noise at ISO 400,
the default streams (main: CRF 23 under its 2.2 Mbit/s cap; sub: 640x360, 15 fps, 500 kbit/s).
Three windows of SECONDS each (default 10), in this order, on one process: a live.mp4 client of
the main stream; the same and a live.mp4 client of the sub stream; the sub stream's client
alone. Each window: the server's CPU (utime+stime, /proc/PID/stat), the bytes each client
read, and the state's figures of the live outputs (frames taken, ms per frame). The sub
stream's cost is the second window's CPU less the first's; its own figure is liveSub's ms per
frame times its frames a second. Goal: the sub stream ≤ 15 % of a core at 640x360@15 beside a
720p main.

Reference, same run, same frames: ffmpeg's CLI encoding the camera's own frames (YUYV 1280x720,
written by `viewfinder-bench codecs`) to 640x360 at 15 fps with libx264 (superfast,
zerolatency, CRF 23, the same VBV) — the scale and the encode as the server does them — its CPU
per second of video, RUNS times, the median.

The VP8 rendition (a WebRTC viewer whose browser has no H.264): on the same 1280x720 frames,
`viewfinder-bench codecs` encodes the main stream as the server does (libx264, CRF 23 under
the 2.2 Mbit/s cap) and as VP8 (libvpx realtime, cpu-used 8, the same cap): ms a frame, kbit/s
and SSIM (Y, against the frames without noise); reference, same run, same frames: ffmpeg's CLI
with libvpx at the same settings, its CPU per second of video. And H.264 in Constrained Baseline
(what a stream becomes while a viewer decodes nothing else) under the same cap and uncapped
at CRF 23 against Main: its bit cost.

`python3 bench/streams.py` writes its section of bench/RESULTS.md; `bench/run` calls it after live.py.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import server

ROOT = Path(__file__).resolve().parents[1]
BENCH_BIN = ROOT / ".build/release/viewfinder-bench"
SECONDS = float(os.environ.get("SECONDS_PER_WINDOW", "10"))
RUNS = int(os.environ.get("RUNS", "3"))
ISO = 400


def cpu(pid):
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def reader(port, path, counter, stop):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
        while not stop.is_set():
            b = r.read(65536)
            if not b:
                break
            counter[0] += len(b)


def outputs(port):
    return {o["type"]: o for o in json.loads(server.get(port, "/api/session"))["outputs"]}


def window(p, port, paths):
    """CPU % of a core over SECONDS with a live.mp4 client on each of `paths`; kbit/s each read;
    the live outputs' frames a second and ms per frame."""
    stop, counters, threads = threading.Event(), [], []
    for path in paths:
        c = [0]
        counters.append(c)
        t = threading.Thread(target=reader, args=(port, path, c, stop), daemon=True)
        t.start()
        threads.append(t)
    time.sleep(2)  # the first keyframe, the encoder made
    o0, c0, b0, t0 = outputs(port), cpu(p.pid), [c[0] for c in counters], time.monotonic()
    time.sleep(SECONDS)
    o1, c1, b1, t1 = outputs(port), cpu(p.pid), [c[0] for c in counters], time.monotonic()
    stop.set()
    for t in threads:
        t.join(5)
    dt = t1 - t0
    figures = {k: ((o1[k]["framesIn"] - o0[k]["framesIn"]) / dt, o1[k]["msPerFrame"]) for k in ("live", "liveSub")}
    return {"cpu": (c1 - c0) / dt * 100, "kbits": [(b - a) * 8 / 1000 / dt for a, b in zip(b0, b1)], "outputs": figures}


def reference(work):
    """ffmpeg's CPU % of a core for a second of 640x360@15 from the camera's 1280x720 frames."""
    out = work / "codecs"
    subprocess.run([str(BENCH_BIN), "codecs", "1280", "720", "150", str(ISO), str(out), "80", "23"],
                   check=True, capture_output=True)
    raw = str(out / "raw.yuyv")
    times = []
    for _ in range(RUNS):
        used, _ = server.child_cpu(["ffmpeg", "-v", "error", "-f", "rawvideo", "-pix_fmt", "yuyv422", "-s", "1280x720", "-r", "30",
                                    "-i", raw, "-vf", "fps=15,scale=640:360:flags=bilinear", "-pix_fmt", "yuv420p",
                                    "-c:v", "libx264", "-preset", "superfast", "-tune", "zerolatency", "-crf", "23",
                                    "-maxrate", "500k", "-bufsize", "250k", "-profile:v", "main", "-threads", "2",
                                    "-f", "null", "-"], check=True, capture_output=True)
        times.append(used / (150 / 30) * 100)  # 150 frames are 5 s of camera time
    return statistics.median(times)


def ssim(clean, encoded, fmt):
    """SSIM (Y) of `encoded` against the 1280x720 frames without noise."""
    out = subprocess.run(["ffmpeg", "-v", "info", "-f", "rawvideo", "-pix_fmt", "yuyv422", "-s", "1280x720", "-r", "30", "-i", clean,
                          "-f", fmt, "-r", "30", "-i", encoded,
                          "-lavfi", "[0:v]format=yuv422p,extractplanes=y[r];[1:v]extractplanes=y[d];[d][r]ssim", "-f", "null", "-"],
                         capture_output=True, text=True).stderr
    m = re.search(r"SSIM Y:([\d.]+)", out)
    return float(m.group(1)) if m else float("nan")


def vp8_rendition(work):
    """The main stream's encode as H.264 and as VP8 on the same frames, and ffmpeg's libvpx CPU."""
    runs = []
    for i in range(RUNS):
        out = work / f"vp8-{i}"
        r = subprocess.run([str(BENCH_BIN), "codecs", "1280", "720", "150", str(ISO), str(out), "80", "23"],
                           check=True, capture_output=True, text=True)
        sizes = json.loads(r.stdout)
        used, _ = server.child_cpu(["ffmpeg", "-v", "error", "-f", "rawvideo", "-pix_fmt", "yuyv422", "-s", "1280x720", "-r", "30",
                                    "-i", str(out / "raw.yuyv"), "-pix_fmt", "yuv420p", "-c:v", "libvpx", "-deadline", "realtime",
                                    "-cpu-used", "8", "-lag-in-frames", "0", "-auto-alt-ref", "0", "-error-resilient", "partitions",
                                    "-b:v", f"{sizes['capKbits']}k", "-maxrate", f"{sizes['capKbits']}k",
                                    "-bufsize", f"{sizes['capKbits'] // 2}k", "-threads", "2", "-f", "null", "-"],
                                   check=True, capture_output=True)
        clean = str(out / "clean.yuyv")
        kbits = lambda name: sizes[name] * 8 / 5 / 1000  # 150 frames: 5 s
        runs.append({"h264Ms": sizes["capMs"], "vp8Ms": sizes["vp8Ms"], "h264": kbits("cap"), "vp8": kbits("vp8"),
                     "h264Ssim": ssim(clean, str(out / "cap.h264"), "h264"), "vp8Ssim": ssim(clean, str(out / "vp8.ivf"), "ivf"),
                     "cbMs": sizes["capBaselineMs"], "cb": kbits("capBaseline"), "cbSsim": ssim(clean, str(out / "capBaseline.h264"), "h264"),
                     "crf": kbits("crf23"), "crfSsim": ssim(clean, str(out / "crf23.h264"), "h264"),
                     "crfCb": kbits("baseline"), "crfCbSsim": ssim(clean, str(out / "baseline.h264"), "h264"),
                     "ref": used / 5 * 100, "cap": sizes["capKbits"]})
        shutil.rmtree(out, ignore_errors=True)
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def vp8_markdown(v):
    own = v["vp8Ms"] * 30 / 10
    return ["", "### The VP8 rendition and Constrained Baseline (WebRTC viewers without H.264, or without Main)", "",
            f"The same 150 frames (1280x720, ISO 400), the main stream's {v['cap']} kbit/s cap; the median of {RUNS} runs.", "",
            "| encode | ms/frame | % of a core at 30 fps | kbit/s | SSIM (Y) |", "|---|---|---|---|---|",
            f"| H.264 main stream (libx264 superfast, CRF 23 under the cap) | {v['h264Ms']:.2f} | {v['h264Ms'] * 3:.1f} % | {v['h264']:.0f} | {v['h264Ssim']:.3f} |",
            f"| VP8 rendition (libvpx realtime, cpu-used 8, VBR at the cap) | {v['vp8Ms']:.2f} | {own:.1f} % | {v['vp8']:.0f} | {v['vp8Ssim']:.3f} |",
            f"| H.264 in Constrained Baseline (CAVLC: while a viewer decodes nothing else), under the cap | {v['cbMs']:.2f} | {v['cbMs'] * 3:.1f} % | {v['cb']:.0f} | {v['cbSsim']:.3f} |",
            f"| H.264 Main, CRF 23 uncapped | – | – | {v['crf']:.0f} | {v['crfSsim']:.3f} |",
            f"| H.264 Constrained Baseline, CRF 23 uncapped | – | – | {v['crfCb']:.0f} | {v['crfCbSsim']:.3f} |",
            "", f"Constrained Baseline's bit cost at CRF 23: {(v['crfCb'] / v['crf'] - 1) * 100:+.1f} % against Main."
            "", f"Reference, same run, same frames: ffmpeg's CLI with libvpx at the same settings costs {v['ref']:.1f} % of a core "
            f"for a second of video — the server's VP8 encode (conversion included) is {own / v['ref']:.2f}× it. The rendition is "
            "encoded only while a viewer without H.264 watches."]


def bench(work):
    cfg = work / "streams.json"
    cfg.write_text(json.dumps({
        "server": {"port": 0}, "rtsp": {"enabled": False},
        "cameras": [{"id": "rear", "source": "synthetic", "position": "rear", "preset": "1280x720"}],
        "synthetic": {"microphone": False},
        "capture": {"directory": str(work / "photos")}, "recording": {"directory": str(work / "movies")}}))
    rows = {"main": [], "both": [], "sub": []}
    refs = []
    for _ in range(RUNS):
        refs.append(reference(work))
        p, port, _ = server.start_server(["--config", str(cfg)], work, lambda port: server.running_session(port, "1280x720"))
        try:
            server.post(port, "/api/session/exposure", {"mode": "custom", "iso": ISO, "duration": 100 / ISO / 60})
            rows["main"].append(window(p, port, ["/live.mp4?audio=0"]))
            rows["both"].append(window(p, port, ["/live.mp4?audio=0", "/live.mp4?audio=0&stream=sub"]))
            rows["sub"].append(window(p, port, ["/live.mp4?audio=0&stream=sub"]))
        finally:
            server.stop_server(p)
    return rows, statistics.median(refs)


def markdown(rows, ref, started, load, took):
    med = lambda xs: statistics.median(xs)
    main_cpu, both_cpu, sub_cpu = (med(r["cpu"] for r in rows[k]) for k in ("main", "both", "sub"))
    sub_fps = med(r["outputs"]["liveSub"][0] for r in rows["both"])
    sub_ms = med(r["outputs"]["liveSub"][1] for r in rows["both"])
    main_ms = med(r["outputs"]["live"][1] for r in rows["both"])
    own = sub_ms * sub_fps / 10
    added = both_cpu - main_cpu
    lines = ["## Main and sub streams: the sub stream's cost beside a 720p main (issue 38)", "",
             server.written_by("streams.py", started, load, took), "",
             f"One synthetic 1280x720 camera at 30 fps, ISO 400 (sensor noise); the default streams. Windows of {SECONDS:.0f} s, "
             f"live.mp4 clients reading as fast as they can; the median of {RUNS} runs. CPU in % of one core, the server process.", "",
             "| window | server CPU | main stream kbit/s | sub stream kbit/s | main ms/frame | sub frames/s, ms/frame |",
             "|---|---|---|---|---|---|"]
    for k, label in (("main", "the main stream's client"), ("both", "main and sub clients"), ("sub", "the sub stream's client alone")):
        r = rows[k]
        kb = [med(x["kbits"][i] for x in r) for i in range(len(r[0]["kbits"]))]
        main_kb = f"{kb[0]:.0f}" if k != "sub" else "–"
        sub_kb = f"{kb[-1]:.0f}" if k != "main" else "–"
        lines.append(f"| {label} | {med(x['cpu'] for x in r):.1f} % | {main_kb} | {sub_kb} | "
                     f"{med(x['outputs']['live'][1] for x in r):.2f} | {med(x['outputs']['liveSub'][0] for x in r):.1f}, "
                     f"{med(x['outputs']['liveSub'][1] for x in r):.2f} |")
    verdict = "holds" if max(added, own) <= 15 else "**does not hold**"
    lines += ["", f"The sub stream beside the main one adds {added:.1f} % of a core to the server (its output's own work: "
              f"{sub_ms:.2f} ms a frame × {sub_fps:.1f} frames/s = {own:.1f} %; the main stream's {main_ms:.2f} ms a frame). "
              f"Reference, same run, same frames: ffmpeg's CLI scaling and encoding them to 640x360@15 (libx264 superfast, "
              f"zerolatency, CRF 23, 500 kbit/s VBV) costs {ref:.1f} % of a core — the server's own {own:.1f} % is "
              f"{own / ref:.2f}× it. The sub stream alone (no main client: only it is encoded) costs the server {sub_cpu:.1f} %. "
              f"Goal (≤ 15 % of a core at 640x360@15 beside a 720p main): {verdict}."]
    return lines


def main():
    if not BENCH_BIN.exists() or not server.BIN.exists():
        sys.exit("make release first (bench/streams.py runs .build/release/viewfinder and viewfinder-bench)")
    work = Path(tempfile.mkdtemp(prefix="vf-streams-bench-"))
    try:
        (rows, ref, vp8), started, load, took = server.timed(lambda: bench(work) + (vp8_rendition(work),))
        server.publish("streams", markdown(rows, ref, started, load, took) + vp8_markdown(vp8), took)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
