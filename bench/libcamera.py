#!/usr/bin/env python3
"""`make bench-libcamera`: a camera through libcamera against the same pipeline read directly
through V4L2, in one VM run (issue 56, item 8). Writes bench/RESULTS-libcamera.md.

The pipeline is the kernel's vimc (a raw-Bayer sensor, a debayer and a scaler, the shape of a
Raspberry Pi's unicam path), in the `scripts/vm --vimc` VM (qemu, TCG software emulation: the
absolute figures are far below hardware; the ratio between the two paths is the result):

- **libcamera**: Viewfinder with `{"source": "libcamera", "device": "platform/vimc.0 Sensor B"}`
  (Debian 12's libcamera 0.0.3, its vimc pipeline handler and IPA): libcamera configures the
  graph, queues requests, Viewfinder encodes each completed request's buffer.
- **direct V4L2 (the reference)**: the graph put by `media-ctl` in the state libcamera 0.0.3's
  vimc handler puts it in (its links; Sensor B and Debayer B at a third of the output, the
  scaler's fixed 3x up, the same media-bus codes), then Viewfinder with `{"source": "v4l2",
  "device": "<RGB/YUV Capture>"}` — what a user of raw V4L2 would run.

Both at 1920x1080 RGB3 (libcamera 0.0.3's vimc takes multiples of 6 only: 1080p is the one
standard size both offer), JPEG quality 80, one encode worker per vCPU, one MJPEG viewer
(bench/out/latency: X-Timestamp, the frame's capture time on both paths — the capture node's
buffer timestamp, moved to the wall clock — to the part's last byte) for SECONDS after a warm-up,
RUNS runs alternating the two paths. Per window: the viewer's fps, latency p50 and p99, the
server's CPU (utime + stime, /proc) and vimc's kernel thread's apart (the debayer and scale,
the same work on both paths), CPU per frame (the server's CPU ÷ the frames the viewer got), and
the preview's frames taken on the camera's lent buffer or copied first (/metrics).

Then LONG seconds (default 600) through libcamera with one viewer: frames delivered, the
session's `frames.dropped` (frames the preview dropped plus requests libcamera completed with an
error) — the goal is 0.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import stop_server  # noqa: E402  (bench/server.py)
from v4l2 import cpu_seconds, free_port  # noqa: E402  (bench/v4l2.py)

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".build/release/viewfinder"
LATENCY = ROOT / "bench/out/latency"
VIEWERS = ROOT / "bench/out/viewers"
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "20"))
LONG = float(os.environ.get("BENCH_LONG_SECONDS", "600"))
WORKERS = os.cpu_count() or 1
CAMERA = "platform/vimc.0 Sensor B"
# A size libcamera 0.0.3's vimc takes (multiples of 6: the sensor at a third, the scaler's 3x)
# and one of libcamera's common sizes (the camera offers only those).
W, H = (int(v) for v in os.environ.get("BENCH_SIZE", "1920x1080").split("x"))
PIXEL = "RGB3"
# Started at the size where it is a preset; otherwise prepared at it once the server is up.
PRESET = {"preset": f"{W}x{H}"} if f"{W}x{H}" in ("352x288", "640x480", "1280x720", "1920x1080", "3840x2160") else {}


def vimc_threads():
    """vimc's kernel threads (the streamer that debayers and scales each frame)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if Path(f"/proc/{d}/comm").read_text().strip().startswith("vimc"):
                    out.append(int(d))
            except OSError:
                pass
    return out


def kernel_cpu():
    return sum(cpu_seconds(p) for p in vimc_threads() if Path(f"/proc/{p}").exists())


def node(name):
    for n in sorted(os.listdir("/sys/class/video4linux")):
        if Path(f"/sys/class/video4linux/{n}/name").read_text().strip() == name:
            return "/dev/" + n
    raise SystemExit(f"no vimc node named {name!r}")


def sh(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r.stdout


def direct_graph(media):
    """The graph as libcamera 0.0.3's vimc handler configures it for W x H (Debayer B into the
    scaler, the scaler's 3x up from a third of the size), for the RGB/YUV Capture node."""
    sw, sh_ = W // 3, H // 3
    sh("media-ctl", "-d", media, "-l", '"Debayer A":1->"Scaler":0[0]', "-l", '"RGB/YUV Input":0->"Scaler":0[0]',
       "-l", '"Debayer B":1->"Scaler":0[1]')
    sh("media-ctl", "-d", media, "-V",
       f'"Sensor B":0[fmt:SGRBG8_1X8/{sw}x{sh_}],"Debayer B":0[fmt:SGRBG8_1X8/{sw}x{sh_}],'
       f'"Debayer B":1[fmt:RGB888_1X24/{sw}x{sh_}],"Scaler":0[fmt:RGB888_1X24/{sw}x{sh_} crop:(0,0)/{sw}x{sh_}],'
       f'"Scaler":1[fmt:RGB888_1X24/{W}x{H}]')
    sh("v4l2-ctl", "-d", node("Raw Capture 1"), f"--set-fmt-video=width={sw},height={sh_},pixelformat=GRBG")


def http(port, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method="GET" if body is None else "POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{path}: {e.code} {e.read().decode(errors='replace')[:600]}") from None


def metric(port, name):
    """A series' value: `name` alone (its first labels), or `name{labels` (those exactly)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60).read().decode()
    series = re.escape(name) + (r"\}" if "{" in name else r"\{[^}]*\}")
    m = re.search(rf"^{series} (\S+)$", text, re.M)
    return int(float(m.group(1))) if m else -1


class Server:
    """Viewfinder with one camera, `entry`, running at W x H in PIXEL."""
    def __init__(self, entry):
        self.tmp = tempfile.mkdtemp(prefix="vf-bench-lc-")
        self.port = free_port()
        config = Path(self.tmp) / "config.json"
        config.write_text(json.dumps({"cameras": [entry], "state": {"persist": False}, "onvif": {"enabled": False},
                                      "rtsp": {"enabled": False}, "capture": {"directory": f"{self.tmp}/p"},
                                      "recording": {"directory": f"{self.tmp}/m"}}))
        self.p = subprocess.Popen([str(BIN), "--config", str(config), "--port", str(self.port), "--quality", "80",
                                   "--workers", str(WORKERS), "--log-level", "error"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 180
        while True:
            try:
                state = http(self.port, "/api/session")
                break
            except OSError:
                if time.monotonic() > deadline or self.p.poll() is not None:
                    raise RuntimeError(f"the server did not start: {self.stop()}")
                time.sleep(0.5)
        if (state.get("format") or {}).get("pixelFormat") != PIXEL or state.get("state") != "running":
            http(self.port, "/api/session/prepare", {"width": W, "height": H, "pixelFormat": PIXEL})
            http(self.port, "/api/session/start", {})
        deadline = time.monotonic() + 180
        while http(self.port, "/api/session").get("state") != "running":
            if time.monotonic() > deadline:
                raise RuntimeError(f"the camera does not run: {http(self.port, '/api/session')}")
            time.sleep(1)
        f = http(self.port, "/api/session")["format"]
        if (f["width"], f["height"], f["pixelFormat"]) != (W, H, PIXEL):
            raise RuntimeError(f"the camera runs at {f}, not {W}x{H} {PIXEL}")

    def stop(self):
        stop_server(self.p)
        err = self.p.stderr.read().decode(errors="replace")[-2000:]
        time.sleep(1)  # the device released
        return err


def window(server):
    """One viewer for SECONDS after a 3 s warm-up: its figures, the CPU, copies."""
    client = subprocess.Popen([str(LATENCY), str(server.port), "1", str(SECONDS), "/stream", "3"],
                              stdout=subprocess.PIPE, text=True)
    time.sleep(3)
    c0, k0, t0 = cpu_seconds(server.p.pid), kernel_cpu(), time.monotonic()
    lent0, copied0 = metric(server.port, "viewfinder_preview_frames_lent_total"), metric(server.port, "viewfinder_preview_frames_copied_total")
    out = client.communicate(timeout=SECONDS + 120)[0]
    c1, k1, t1 = cpu_seconds(server.p.pid), kernel_cpu(), time.monotonic()
    lent1, copied1 = metric(server.port, "viewfinder_preview_frames_lent_total"), metric(server.port, "viewfinder_preview_frames_copied_total")
    r = json.loads(out)
    if not r.get("count"):
        raise RuntimeError(f"the viewer received nothing: {out}")
    span = t1 - t0
    return {"fps": r["fpsMedian"], "p50": r["p50"], "p99": r["p99"], "cpu": (c1 - c0) / span * 100,
            "kernel": (k1 - k0) / span * 100, "cpuPerFrame": (c1 - c0) * 1000 / max(1, r["count"]),
            "lent": lent1 - lent0, "copied": copied1 - copied0}


def long_run(rgb):
    """LONG seconds through libcamera, one viewer: frames and drops."""
    s = Server({"id": "cam", "source": "libcamera", "device": CAMERA, **PRESET, "autostart": True})
    try:
        before = http(s.port, "/api/session")["frames"]
        client = subprocess.Popen([str(VIEWERS), str(s.port), "1", str(LONG), "/stream", "viewfinderframe"],
                                  stdout=subprocess.PIPE, text=True)
        r = json.loads(client.communicate(timeout=LONG + 300)[0])
        after = http(s.port, "/api/session")
        # The session's dropped frames are the preview's (a frame that came while the encode
        # pool was still busy with the last: the newest wins) and libcamera's failed requests.
        preview = metric(s.port, 'viewfinder_output_dropped_total{camera="cam",output="preview"')
        return {"seconds": LONG, "fps": r["fpsMedian"], "frames": after["frames"]["sequence"] - before["sequence"],
                "dropped": after["frames"]["dropped"], "preview": preview, "state": after["state"], "error": after.get("error")}
    finally:
        s.stop()


def main():
    media = os.environ.get("V4L2_VM_VIMC_MEDIA")
    if not media:
        raise SystemExit("run inside scripts/vm --vimc (no V4L2_VM_VIMC_MEDIA)")
    rgb = node("RGB/YUV Capture")
    libcamera_version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libcamera0"], capture_output=True, text=True).stdout \
        or subprocess.run(["sh", "-c", "dpkg-query -W -f '${Package} ${Version}\\n' 'libcamera0*'"], capture_output=True, text=True).stdout
    results = {"libcamera": [], "v4l2": []}
    if os.environ.get("BENCH_ONLY") == "long":  # the long run alone (the table kept)
        long = long_run(rgb)
        print(f"long: {long}", file=sys.stderr, flush=True)
        rewrite_long(long)
        return
    for run in range(RUNS):
        for path in ("libcamera", "v4l2"):
            if path == "libcamera":
                entry = {"id": "cam", "source": "libcamera", "device": CAMERA, **PRESET, "autostart": True}
            else:
                direct_graph(media)  # after libcamera's process left: its manager's match() resets the links
                entry = {"id": "cam", "source": "v4l2", "device": rgb, **PRESET, "autostart": True}
            s = Server(entry)
            try:
                results[path].append(window(s))
            finally:
                err = s.stop()
            print(f"run {run + 1} {path}: {results[path][-1]} {err.strip()[-300:] if err.strip() else ''}", file=sys.stderr, flush=True)
    long = long_run(rgb)
    print(f"long: {long}", file=sys.stderr, flush=True)
    write(results, long, libcamera_version.strip())


def per_run(rows):
    return ", ".join("%.2f / %.0f ms / %.1f ms" % (r["fps"], r["p50"], r["cpuPerFrame"]) for r in rows)


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def write(results, long, version):
    lc, v4 = results["libcamera"], results["v4l2"]
    lines = [
        "# libcamera benchmark: a camera through libcamera against the same pipeline read directly",
        "",
        f"Written by `make bench-libcamera` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}) inside the `scripts/vm --vimc` VM "
        f"(qemu, TCG software emulation, {os.cpu_count()} vCPUs; kernel {os.uname().release}; libcamera {version or '(Debian 12)'}): "
        "absolute figures are far below hardware; compare the two paths, measured in the same run.",
        "",
        f"vimc's Sensor B → Debayer B → Scaler → RGB/YUV Capture at {W}x{H} {PIXEL}, JPEG quality 80, `--workers {WORKERS}`, "
        f"one MJPEG viewer (bench/out/latency) for {SECONDS:g} s after a 3 s warm-up; median of {RUNS} runs, the paths alternating. "
        "**libcamera**: `{\"source\": \"libcamera\", \"device\": \"platform/vimc.0 Sensor B\"}`. **direct V4L2 (reference)**: "
        "the graph set by media-ctl as libcamera 0.0.3's vimc handler sets it (bench/libcamera.py, `direct_graph`), then "
        "`{\"source\": \"v4l2\", \"device\": \"<RGB/YUV Capture node>\"}`. Latency: X-Timestamp (the capture node's buffer "
        "timestamp on both paths, on the wall clock) to the part's last byte at the viewer. CPU: the server's user + system time, "
        "% of one core; vimc's kernel thread (the debayer and scale, the same work on both paths) apart; per frame: the "
        "server's CPU ÷ the frames the viewer received.",
        "",
        "| path | fps | latency p50 ms | latency p99 ms | server CPU % | vimc thread CPU % | CPU ms per frame | preview frames lent / copied |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, rows in (("libcamera", lc), ("direct V4L2 (reference)", v4)):
        lines.append(f"| {name} | {med(rows, 'fps'):.2f} | {med(rows, 'p50'):.1f} | {med(rows, 'p99'):.1f} | {med(rows, 'cpu'):.0f} | "
                     f"{med(rows, 'kernel'):.0f} | {med(rows, 'cpuPerFrame'):.1f} | {sum(r['lent'] for r in rows)} / {sum(r['copied'] for r in rows)} |")
    dl = med(lc, "p50") - med(v4, "p50")
    ratio = med(lc, "cpuPerFrame") / med(v4, "cpuPerFrame")
    copies = sum(r["copied"] for r in lc)
    lines += [
        "",
        f"libcamera − direct: latency p50 **{dl:+.1f} ms** (goal: within 3 ms); CPU per frame ratio **{ratio:.2f}** "
        f"(goal: within 5 %, ≤ 1.05); copies before the encoder through libcamera: **{copies}** of "
        f"{sum(r['lent'] for r in lc) + copies} frames (goal: 0 — the completed request's buffer is lent to the encoder as "
        "a V4L2 mmap buffer is).",
        "",
        f"Per run, fps / latency p50 / CPU per frame — libcamera: {per_run(lc)}; direct: {per_run(v4)}.",
        "",
    ]
    out = ROOT / "bench/RESULTS-libcamera.md"
    out.write_text("\n".join(lines + long_section(long)))
    print(out.read_text())


def long_section(long):
    return [
        f"## {long['seconds'] / 60:g} minutes through libcamera",
        "",
        f"Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. One viewer (bench/out/viewers) for {long['seconds']:g} s: "
        f"{long['frames']} frames captured, the viewer at "
        f"{long['fps']:.2f} fps, **{long['dropped'] - long['preview']} requests libcamera completed with an error** "
        f"(the session's `frames.dropped`, {long['dropped']}, less the {long['preview']} the preview dropped: frames that came "
        f"while the encode pool still worked on the last, the newest kept); the session `{long['state']}` at the end"
        f"{', error ' + str(long['error']) if long['error'] else ''}. Goal (issue 56): 0 dropped by the capture.",
        "",
    ]


def rewrite_long(long):
    """The long run's section of bench/RESULTS-libcamera.md replaced, the table kept."""
    out = ROOT / "bench/RESULTS-libcamera.md"
    text = out.read_text() if out.exists() else ""
    head = text[:text.index("\n## ") + 1] if "\n## " in text else text
    out.write_text(head + "\n".join(long_section(long)))
    print(out.read_text())


if __name__ == "__main__":
    main()
